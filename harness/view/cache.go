package view

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sync"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// cache keeps what pages computed from a directory's metrics (a
// comparison, a per-task table, curves) until the files under it change,
// so reading a finished matrix again costs a few stat calls instead of a
// scan and a bootstrap.
type cache struct {
	mu      sync.Mutex
	max     int
	entries map[string]cacheEntry
	order   []string // oldest first
	flights map[string]*flight
}

type cacheEntry struct {
	stamp uint64
	value any
}

func newCache(max int) *cache {
	return &cache{max: max, entries: map[string]cacheEntry{}, flights: map[string]*flight{}}
}

// get returns the value kept for key when dir's files are as they were,
// else computes, keeps and returns a new one. A request that finds the
// same value being computed waits for it instead of computing it again.
func (c *cache) get(key, dir string, compute func() (any, error)) (any, error) {
	stamp, err := dirStamp(dir, stampFiles(key))
	if err != nil {
		return nil, err
	}
	key += "\x00" + dir
	c.mu.Lock()
	if e, ok := c.entries[key]; ok && e.stamp == stamp {
		c.mu.Unlock()
		return e.value, nil
	}
	if f, ok := c.flights[key]; ok && f.stamp == stamp {
		c.mu.Unlock()
		<-f.done
		return f.value, f.err
	}
	f := &flight{stamp: stamp, done: make(chan struct{})}
	c.flights[key] = f
	c.mu.Unlock()

	f.value, f.err = compute()
	close(f.done)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flights[key] == f {
		delete(c.flights, key)
	}
	if f.err != nil {
		return nil, f.err
	}
	if _, ok := c.entries[key]; !ok {
		c.order = append(c.order, key)
		if len(c.order) > c.max {
			delete(c.entries, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.entries[key] = cacheEntry{stamp: stamp, value: f.value}
	return f.value, nil
}

// flight is a computation under way.
type flight struct {
	stamp uint64
	done  chan struct{}
	value any
	err   error
}

// The files each computed view rests on, relative to its directory: a
// view is computed again only when one of them changes, so a running
// matrix's comparison waits for the next metrics part instead of following
// every line of its call log.
var (
	metricFiles = []string{
		rundir.ManifestFile, filepath.Join(rundir.MetricsDir, "*"),
		filepath.Join("*", rundir.ManifestFile), filepath.Join("*", rundir.MetricsDir, "*"),
	}
	viewFiles = map[string][]string{
		"listed":     {rundir.ManifestFile, rundir.StateFile, filepath.Join("*", rundir.ManifestFile), filepath.Join("*", rundir.StateFile)},
		"compare":    metricFiles,
		"tasks":      metricFiles,
		"series":     metricFiles,
		"run":        {rundir.ManifestFile, filepath.Join(rundir.MetricsDir, "*"), filepath.Join(rundir.HistoryDir, "*")},
		"calls":      {rundir.CallsFile},
		"tournament": {rundir.ManifestFile, rundir.TournamentFile},
		"routing":    routingFiles,
	}
	// routingFiles are what inspect.Routing reads, of a run and of a
	// matrix's rows: not the call log beside them.
	routingFiles = []string{rundir.ManifestFile, rundir.HistoryFile, rundir.RejectedFile, rundir.SkillUpdatesFile,
		filepath.Join("*", rundir.HistoryFile), filepath.Join("*", rundir.RejectedFile), filepath.Join("*", rundir.SkillUpdatesFile)}
	allFiles = append([]string{rundir.StateFile, filepath.Join(rundir.HistoryDir, "*"),
		filepath.Join("*", rundir.StateFile), filepath.Join("*", rundir.HistoryDir, "*")}, metricFiles...)
)

func stampFiles(key string) []string {
	if files, ok := viewFiles[key]; ok {
		return files
	}
	return allFiles
}

// dirStamp hashes the name, size and modification time of the files under
// dir that patterns match.
func dirStamp(dir string, patterns []string) (uint64, error) {
	h := fnv.New64a()
	for _, pattern := range patterns {
		files, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return 0, fmt.Errorf("list the files of %s: %w", dir, err)
		}
		for _, f := range files {
			st, err := os.Stat(f)
			if err != nil {
				continue // removed while we looked; the next request sees it
			}
			fmt.Fprintf(h, "%s\x00%d\x00%d\n", f, st.Size(), st.ModTime().UnixNano())
		}
	}
	return h.Sum64(), nil
}
