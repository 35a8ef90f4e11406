package rundir

import (
	"bytes"
	"encoding/json"
	"testing"
)

// traceJSON is a trace as the trial runner has written it, every field set,
// in field order: it must read back and write out byte for byte, so run
// directories of earlier versions keep their meaning.
const traceJSON = `{"task_id":"csv-parser","iteration":3,"trial_id":"i0003-csv-parser","agent":"lab",` +
	`"image":"harness-task-csv:abc","engine":"ssh://gpu1","status":"agent_timeout","reward":0.5,` +
	`"rewards":{"reward":0.5},"tests":{"passed":1,"failed":1,"skipped":0,"total":2,"reported":true,` +
	`"results":[{"name":"t1","status":"passed","duration_ms":12.5,"message":"ok"}]},` +
	`"agent_output":"done","verifier_output":"1 passed","errors":["agent: out of time"],` +
	`"cause":"agent: out of time","model_failure":true,"warnings":["disk limit ignored"],` +
	`"streams":[{"name":"verifier","produced_bytes":10,"kept_bytes":5}],"cancelled":true,` +
	`"timings":{"build_ns":1,"setup_ns":2,"agent_ns":3,"verifier_ns":4,"total_ns":10,"queue_ns":5},` +
	`"usage":{"input_tokens":100,"output_tokens":20,"cost_usd":0.01,"model_calls":3,"malformed_tool_calls":1},` +
	`"transcript_path":"agent/transcript.jsonl","job_dir":"/runs/x/jobs/csv-parser/0003",` +
	`"started_at":"2026-01-02T03:04:05Z","finished_at":"2026-01-02T03:05:05Z"}`

func TestTraceKeepsItsJSONFields(t *testing.T) {
	var tr Trace
	dec := json.NewDecoder(bytes.NewReader([]byte(traceJSON)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tr); err != nil {
		t.Fatalf("read the trace: %v", err)
	}
	out, err := json.Marshal(&tr)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != traceJSON {
		t.Errorf("trace written as\n%s\nwant\n%s", out, traceJSON)
	}
	if tr.Status != TrialAgentTimeout || !tr.Usable() || tr.AgentFault() || tr.EnvFailure() {
		t.Errorf("status %s: usable %v, agent fault %v, env failure %v; want a usable agent timeout",
			tr.Status, tr.Usable(), tr.AgentFault(), tr.EnvFailure())
	}
}

// Test counts the verifier never reported are unknown: trace.json leaves
// them out, as Parquet holds NULL, rather than writing 0/0/0/0; reported
// counts are written even when they are 0.
func TestTraceOmitsUnreportedTestCounts(t *testing.T) {
	for _, tt := range []struct {
		tests Tests
		want  string
	}{
		{Tests{}, `{"reported":false}`},
		{Tests{Reported: true}, `{"passed":0,"failed":0,"skipped":0,"total":0,"reported":true}`},
		{Tests{Passed: 2, Total: 2, Reported: true}, `{"passed":2,"failed":0,"skipped":0,"total":2,"reported":true}`},
	} {
		out, err := json.Marshal(Trace{Tests: tt.tests})
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		if got := string(doc["tests"]); got != tt.want {
			t.Errorf("tests %+v written as %s, want %s", tt.tests, got, tt.want)
		}
		var back Trace
		if err := json.Unmarshal(out, &back); err != nil || back.Tests.Reported != tt.tests.Reported || back.Tests.Total != tt.tests.Total {
			t.Errorf("tests %+v read back as %+v (%v)", tt.tests, back.Tests, err)
		}
	}
}
