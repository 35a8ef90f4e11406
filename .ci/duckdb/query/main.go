// Command query answers over a matrix directory's metric parts, with
// DuckDB, the aggregate `harness inspect --compare` computes: per row and
// task the trials, scored trials, environment failures and mean reward over
// every training iteration and over the last N; per row the macro mean over
// tasks with its standard error, and the mean paired difference to the
// no_feedback row with its standard error. It prints the result and then
// its own CPU time (user+sys) and peak RSS, so the two readers can be
// measured the same way.
//
//	go run ./query [-last 10] [-threads 0] DIR
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	_ "github.com/duckdb/duckdb-go/v2"
)

// compareSQL is the aggregate; %[1]s is the Parquet glob, %[2]d the N of
// the last-N estimand.
const compareSQL = `
WITH t AS (
  SELECT "row", seed, task_id, iteration, reward, env_failure, status,
         NOT env_failure AND reward IS NOT NULL AND status <> 'interrupted' AS scored
  FROM read_parquet('%[1]s')
  WHERE coalesce(phase, '') IN ('', 'train')
), runs AS (
  SELECT "row", seed, max(iteration) AS last FROM t GROUP BY ALL
), per_task AS (
  SELECT t."row", task_id,
         count(*) AS trials,
         count(*) FILTER (scored) AS scored,
         count(*) FILTER (env_failure) AS env_failures,
         avg(reward) FILTER (scored) AS whole_mean,
         avg(reward) FILTER (scored AND iteration > runs.last - %[2]d) AS last_mean
  FROM t JOIN runs USING ("row", seed)
  GROUP BY ALL
), paired AS (
  SELECT r."row", r.task_id, r.whole_mean - b.whole_mean AS whole_diff, r.last_mean - b.last_mean AS last_diff
  FROM per_task r JOIN per_task b ON b."row" = 'no_feedback' AND b.task_id = r.task_id
)
SELECT p."row", sum(trials) AS trials, sum(p.scored) AS scored, sum(env_failures) AS env_failures,
       avg(whole_mean) AS whole_mean, stddev_samp(whole_mean) / sqrt(count(whole_mean)) AS whole_se,
       avg(last_mean) AS last_mean, stddev_samp(last_mean) / sqrt(count(last_mean)) AS last_se,
       avg(whole_diff) AS whole_diff, stddev_samp(whole_diff) / sqrt(count(whole_diff)) AS whole_diff_se,
       avg(last_diff) AS last_diff, stddev_samp(last_diff) / sqrt(count(last_diff)) AS last_diff_se
FROM per_task p JOIN paired d USING ("row", task_id)
GROUP BY p."row" ORDER BY p."row"`

func main() {
	last := flag.Int("last", 10, "N of the last-N estimand")
	threads := flag.Int("threads", 0, "DuckDB threads (0: its default, one per core)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: query [-last N] [-threads N] MATRIX_DIR")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *last, *threads); err != nil {
		fmt.Fprintln(os.Stderr, "query:", err)
		os.Exit(1)
	}
}

func run(dir string, last, threads int) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return fmt.Errorf("open DuckDB: %w", err)
	}
	defer db.Close()
	if threads > 0 {
		if _, err := db.Exec(fmt.Sprintf("SET threads = %d", threads)); err != nil {
			return fmt.Errorf("set threads: %w", err)
		}
	}
	glob := filepath.Join(dir, "*", "metrics", "*.parquet")
	rows, err := db.Query(fmt.Sprintf(compareSQL, strings.ReplaceAll(glob, "'", "''"), last))
	if err != nil {
		return fmt.Errorf("query %s: %w", glob, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	fmt.Println(strings.Join(cols, "\t"))
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = format(v)
		}
		fmt.Println(strings.Join(out, "\t"))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return err
	}
	cpu := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	fmt.Printf("cpu %.2f s (user %.2f, sys %.2f), peak rss %.0f MiB\n", cpu,
		float64(ru.Utime.Sec)+float64(ru.Utime.Usec)/1e6, float64(ru.Stime.Sec)+float64(ru.Stime.Usec)/1e6,
		float64(ru.Maxrss)/1024)
	return nil
}

func format(v any) string {
	switch x := v.(type) {
	case float64:
		return fmt.Sprintf("%.4f", x)
	case nil:
		return "NULL"
	default:
		return fmt.Sprint(x)
	}
}
