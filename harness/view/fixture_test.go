package view

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// A synthetic matrix laid out with the run directory's own names and
// writers: two rows, three tasks, three iterations, one executor-skill
// update in the full_coevolution row, a hierarchical transcript, a
// Mediator report, a plan, a validation decision and model calls.

const (
	fixtureMatrix = "20260301T120000Z-7-smoke-matrix"
	fixtureRow    = "full_coevolution"
	oldSkill      = "# Executor\n\nRead the instruction.\nKeep changes small.\nSubmit when done.\n"
	newSkill      = "# Executor\n\nRead the instruction.\nKeep changes small.\nAlways run the tests before submitting.\nSubmit when done.\n"
)

// Rewards of the fixture by row, task and iteration; envFailure and
// agentError stand for trials without a reward.
const (
	envFailure = -1.0
	agentError = -2.0
)

var fixtureRewards = map[string][][]float64{
	"no_feedback":      {{1, 0, 0.5}, {0, 0.5, 0}, {1, 1, envFailure}},
	"full_coevolution": {{0.5, 0, 1}, {agentError, 1, 1}, {1, 1, 1}},
}

var (
	fixtureTasks = []string{"csv-parser", "log-analysis", "orbital-period"}
	fixtureStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func mustWrite(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, path, data)
}

// jsonl writes one JSON value per line.
func jsonl(t testing.TB, path string, vs ...any) {
	t.Helper()
	var out []byte
	for _, v := range vs {
		line, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, line...), '\n')
	}
	mustWrite(t, path, out)
}

func manifest(t testing.TB, dir string, m rundir.Manifest) {
	t.Helper()
	m.ID = filepath.Base(dir)
	m.StartedAt, m.UpdatedAt = fixtureStart, fixtureStart
	mustJSON(t, filepath.Join(dir, rundir.ManifestFile), m)
}

// writeFixture lays out the synthetic matrix under root and returns its
// directory.
func writeFixture(t testing.TB, root string) string {
	t.Helper()
	mdir := filepath.Join(root, fixtureMatrix)
	rows := []string{"no_feedback", fixtureRow}
	manifest(t, mdir, rundir.Manifest{Kind: rundir.KindMatrix, Name: "smoke", Status: rundir.StatusCompleted,
		Rows: rows, Tasks: fixtureTasks, Iterations: 3, Seed: 7, Seeds: []int64{7}, Offline: true})
	for _, row := range rows {
		dir := filepath.Join(mdir, row)
		cond, policy := "no_feedback", "none"
		if row == fixtureRow {
			cond, policy = "learned_mediator", "executor,planner,mediator"
		}
		manifest(t, dir, rundir.Manifest{Kind: rundir.KindRun, Name: row, MatrixID: fixtureMatrix, Status: rundir.StatusCompleted,
			Tasks: fixtureTasks, Iterations: 3, CompletedIterations: 3, Condition: cond, Policy: policy, Lab: "default",
			Agent: "lab", Seed: 7, Offline: true, Counts: counts(row)})
		mustJSON(t, filepath.Join(dir, rundir.StateFile), map[string]any{"version": 1, "ledger": map[string]any{
			"by_caller": map[string]any{"executor/student-1/i0001-csv-parser": map[string]any{"input_tokens": 1000, "output_tokens": 200, "cost_usd": 0.5}}}})
		mustWrite(t, filepath.Join(dir, rundir.SkillsDir, "executor", "SKILL.md"), []byte(oldSkill))
		for it := 1; it <= 3; it++ {
			var part []rundir.MetricRow
			for ti, task := range fixtureTasks {
				reward := fixtureRewards[row][ti][it-1]
				mr := metricRow(row, cond, policy, task, it, reward)
				switch reward {
				case envFailure:
					mr.Status, mr.Reward, mr.EnvFailure = "env_failure", nil, true
				case agentError:
					// The Planner's model failed: no trial ran, so its
					// test counts and timings are NULL.
					mr.Status, mr.Reward, mr.Cause = "agent_error", nil, new("model: planner: overloaded")
					mr.TestsPassed, mr.TestsFailed, mr.TestsTotal, mr.TestsReported, mr.TrialMS, mr.AgentMS = nil, nil, nil, false, nil, nil
				}
				part = append(part, mr)
				trace(t, dir, task, it, reward)
			}
			if err := rundir.WriteMetricsPart(filepath.Join(dir, rundir.MetricsDir), it, part); err != nil {
				t.Fatal(err)
			}
			if row == fixtureRow && it == 1 {
				u := rundir.UpdateRow{RunID: rundir.RunID(fixtureMatrix, row), MatrixID: new(fixtureMatrix), Row: row, Seed: 7,
					Iteration: int32(it), Role: "executor", ProvenanceID: "executor/b001",
					OldHash: "sha256:" + hashOf(oldSkill), NewHash: "sha256:" + hashOf(newSkill)}
				if err := rundir.WriteUpdatesPart(filepath.Join(dir, rundir.MetricsDir), it, []rundir.UpdateRow{u}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	evolvedRow(t, filepath.Join(mdir, fixtureRow))
	return mdir
}

// counts are a fixture row's trials by status, as its run.json keeps them.
func counts(row string) map[rundir.TrialStatus]int {
	out := map[rundir.TrialStatus]int{}
	for _, task := range fixtureRewards[row] {
		for _, r := range task {
			switch r {
			case envFailure:
				out["env_failure"]++
			case agentError:
				out["agent_error"]++
			default:
				out["scored"]++
			}
		}
	}
	return out
}

func metricRow(row, cond, policy, task string, it int, reward float64) rundir.MetricRow {
	r := reward
	withheld := false
	return rundir.MetricRow{RunID: rundir.RunID(fixtureMatrix, row), MatrixID: new(fixtureMatrix), Row: row, Condition: cond,
		SkillUpdatePolicy: policy, Lab: "default", Agent: "lab", Seed: 7, Offline: true, Iteration: int32(it), TaskID: task,
		TrialID: fmt.Sprintf("i%04d-%s", it, task), Status: "scored", Reward: &r, TestsPassed: new(int32(2)),
		TestsFailed: new(int32(2)), TestsTotal: new(int32(4)), TestsReported: true, TrialMS: new(int64(1500)), AgentMS: new(int64(1000)), ExecutorInputTokens: 2000, ExecutorOutputTokens: 150, ExecutorCostUSD: 0.01,
		ModelCalls: 4, ReportWithheld: &withheld}
}

func trace(t testing.TB, dir, task string, it int, reward float64) {
	t.Helper()
	status, r := "scored", &reward
	switch reward {
	case envFailure:
		status, r = "env_failure", nil
	case agentError:
		status, r = "agent_error", nil
	}
	tr := map[string]any{
		"task_id": task, "iteration": it, "trial_id": fmt.Sprintf("i%04d-%s", it, task), "agent": "lab",
		"status": status, "reward": r,
		"tests": map[string]any{"passed": 1, "failed": 1, "total": 2, "results": []map[string]any{
			{"name": "output file exists", "status": "passed"},
			{"name": "records match", "status": "failed", "message": "AssertionError: 3 records, want 4"},
		}},
		"timings":    map[string]any{"build_ns": 2e9, "agent_ns": 1e9, "verifier_ns": 5e8, "total_ns": 3.5e9},
		"started_at": fixtureStart, "finished_at": fixtureStart.Add(4 * time.Second),
	}
	mustJSON(t, filepath.Join(dir, rundir.TracePath(task, it)), tr)
}

// evolvedRow adds what a learning row keeps: the update's provenance,
// snapshots and decision, a plan, a report, a transcript and calls.
func evolvedRow(t testing.TB, dir string) {
	t.Helper()
	for _, s := range []string{oldSkill, newSkill} {
		mustWrite(t, filepath.Join(dir, rundir.SnapshotsDir, "executor", hashOf(s), "SKILL.md"), []byte(s))
	}
	jsonl(t, filepath.Join(dir, rundir.SkillUpdatesFile), map[string]any{
		"id": "executor/b001", "role": "executor", "flow": "advisor_gate", "iteration": 1, "batch_id": "b001",
		"proposal_ids": []string{"full_coevolution/i0001/csv-parser/proposal"}, "rule": "posterior",
		"numbers": map[string]float64{"p_better": 0.97}, "old_hash": "sha256:" + hashOf(oldSkill),
		"new_hash": "sha256:" + hashOf(newSkill), "evidence": "artifacts/validation/b001", "time": fixtureStart,
	})
	jsonl(t, filepath.Join(dir, rundir.TournamentFile), rundir.TournamentRecord{BatchID: "b001", Iteration: 1, ValidateTop: 1,
		Candidates: []rundir.TournamentCandidate{
			{ID: "b001c1", BatchID: "b001", Operator: "refine", Parents: []string{"skill:" + hashOf(oldSkill)[:12]}, Elo: 1016, Rank: 1,
				Validated: true, Accepted: true, Adopted: true, Gain: new(1.0)},
			{ID: "b001c2", BatchID: "b001", Operator: "combine", Parents: []string{"skill:" + hashOf(oldSkill)[:12], "b001c1"}, Elo: 984, Rank: 2},
		},
		Matches:     []rundir.TournamentMatch{{First: "b001c1", Second: "b001c2", Winner: "b001c1"}, {First: "b001c2", Second: "b001c1", Winner: "b001c1"}},
		TrialsSpent: 2, TrialsSaved: 2})
	mustJSON(t, filepath.Join(dir, rundir.ValidationBatchDir("b001"), rundir.DecisionFile), map[string]any{
		"tasks":    []string{"csv-parser"},
		"decision": map[string]any{"accept": true, "rule": "posterior", "reason": "the candidate is better with p 0.97", "final": true},
		"trials": []map[string]any{{"task": "csv-parser", "arm": "current", "index": 0, "reward": 0.0},
			{"task": "csv-parser", "arm": "candidate", "index": 0, "reward": 1.0}},
		"trials_spent": 2,
	})
	trial := "i0002-csv-parser"
	jsonl(t, filepath.Join(dir, rundir.HistoryFile),
		rundir.HistoryRecord{Type: "entry", Entry: &rundir.Entry{ID: "full_coevolution/i0001/csv-parser/proposal", Role: "planner",
			Kind: rundir.EntryProposal, TaskID: "csv-parser", Iteration: 1, Content: "Tell the Executor to run the tests before it submits."}},
		rundir.HistoryRecord{Type: "entry", Entry: &rundir.Entry{ID: "full_coevolution/i0002/csv-parser/plan", Role: "planner",
			Kind: rundir.EntryPlan, TaskID: "csv-parser", Iteration: 2, TrialID: trial,
			Content: "1. Read /app/data/inventory.psv.\n2. Write parse_psv.py and run it."}},
	)
	mustJSON(t, filepath.Join(dir, rundir.ReportPath("csv-parser", 2)), map[string]any{
		"entry_id": "full_coevolution/i0002/csv-parser/report", "task_id": "csv-parser", "iteration": 2, "trial_id": trial,
		"withheld": false, "reason": "the failure is specific", "abstraction_level": "strategy",
		"content": "Check quoted fields before writing the output.",
	})
	jsonl(t, filepath.Join(dir, rundir.JobDir("csv-parser", 2), "agent", "transcript.jsonl"),
		map[string]any{"agent": "coordinator", "event": "setup", "setup": map[string]any{"mode": "hierarchical"}},
		map[string]any{"agent": "coordinator", "event": "message", "message": map[string]any{"role": "system", "content": "You coordinate subagents."}},
		map[string]any{"agent": "coordinator", "event": "message", "message": map[string]any{"role": "user", "content": "# Parse a pipe-separated inventory format into JSON"}},
		map[string]any{"agent": "explore", "dispatch": 1, "event": "dispatch", "detail": "explore", "task": "Find the input files."},
		map[string]any{"agent": "explore", "dispatch": 1, "event": "message", "call": 1, "message": map[string]any{"role": "assistant",
			"tool_calls": []map[string]any{{"id": "c1", "name": "list_dir", "arguments": `{"path":"/app/data"}`}}}},
		map[string]any{"agent": "explore", "dispatch": 1, "event": "message", "call": 1, "message": map[string]any{"role": "tool", "name": "list_dir", "tool_call_id": "c1", "content": "inventory.psv"}},
		map[string]any{"agent": "explore", "dispatch": 1, "event": "dispatch_result", "detail": "The input is /app/data/inventory.psv."},
		map[string]any{"agent": "coordinator", "event": "message", "call": 2, "message": map[string]any{"role": "assistant",
			"tool_calls": []map[string]any{{"id": "c2", "name": "run_command", "arguments": `{"command":"python3 /app/parse_psv.py /app/data/inventory.psv"}`}}}},
		map[string]any{"agent": "coordinator", "event": "tool_error", "call": 2, "detail": "exit status 2: No such file"},
		map[string]any{"agent": "coordinator", "event": "usage", "call": 2, "usage": map[string]any{"input_tokens": 900}},
		map[string]any{"agent": "coordinator", "event": "summary", "call": 3, "stats": map[string]any{"calls": 3, "submitted": true}},
	)
	jsonl(t, filepath.Join(dir, rundir.CallsFile),
		rundir.CallRecord{Time: fixtureStart, Caller: "planner/" + trial, Role: "planner", Task: "csv-parser", Iteration: 2, Model: "offline-planner",
			Request:  rundir.CallRequest{Messages: []rundir.CallMessage{{Role: "user", Content: "Plan the csv-parser task."}}},
			Response: &rundir.CallResponse{Message: rundir.CallMessage{Role: "assistant", Content: "1. Read the input."}},
			Usage:    rundir.CallUsage{InputTokens: 300, OutputTokens: 40}, LatencyMS: 120, Attempts: 1},
		rundir.CallRecord{Time: fixtureStart, Caller: "mediator/" + trial, Role: "mediator", Task: "csv-parser", Iteration: 2, Model: "offline-mediator",
			Usage: rundir.CallUsage{InputTokens: 500, OutputTokens: 60}, LatencyMS: 200, Attempts: 2, Retries: 1, Error: "endpoint said 503"},
	)
}

func writePart(dir string, it int, rows ...rundir.MetricRow) error {
	return rundir.WriteMetricsPart(dir, it, rows)
}
