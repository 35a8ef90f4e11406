package cli

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

// leakMarker is printed by the verifier of testdata/tasks/leak-marker in its
// assertion messages and its output, never in a test name.
const leakMarker = "LEAKMARK-5d1e9b"

// What the Executor's command prints first, for the Mediator check.
const commandHead = "HEAD-OF-OUTPUT-31f"

// labServer answers every role of a lab through the fake endpoint, as a
// cooperative model would: the Executor runs one failing command and then
// submits (writing an answer when the plan says so); a coordinator dispatches the code subagent once;
// the structured roles answer their schema.
func labServer(t *testing.T) *llmtest.Server {
	srv := llmtest.NewServer(t)
	// Plans alternate by their call's seed, in the order the seeds first
	// arrive: a plan's seed follows its task and iteration (the prompt names
	// neither iteration nor row), so consecutive iterations get different
	// plans in every row.
	var mu sync.Mutex
	seedOrder := map[int64]int{}
	writes := func(q llmtest.Request) bool {
		if q.Chat.Seed == nil {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		n, ok := seedOrder[*q.Chat.Seed]
		if !ok {
			n = len(seedOrder)
			seedOrder[*q.Chat.Seed] = n
		}
		return n%2 == 0
	}
	srv.Handle(func(q llmtest.Request) llmtest.Reply {
		reply := func(r llmtest.Reply) llmtest.Reply {
			r.PromptTokens, r.CompletionTokens = 500, 50
			return r
		}
		if len(q.Chat.Tools) > 0 {
			return reply(agentStep(q))
		}
		var rf struct {
			JSONSchema struct {
				Name string `json:"name"`
			} `json:"json_schema"`
		}
		_ = json.Unmarshal(q.Chat.ResponseFormat, &rf)
		switch rf.JSONSchema.Name {
		case "plan":
			// Every other plan tells the Executor to write an answer, so
			// rewards alternate and plans form contrastive pairs.
			plan := "1. Read the question.\n2. Think.\n3. Submit."
			if writes(q) {
				plan = "1. Read the question.\n2. " + writeStep + "\n3. Submit."
			}
			return reply(llmtest.JSON(map[string]any{"plan": plan}))
		case "report":
			return reply(llmtest.JSON(map[string]any{"abstraction_level": "trace", "withheld": false,
				"content": "The Executor did not check its answer before submitting.", "reasoning": "a lesson for the Planner"}))
		case "proposal":
			return reply(llmtest.JSON(map[string]any{"propose": true, "old_content": "",
				"new_content": "- Reread the question and check the answer file before you submit.", "reasoning": "the answer was unchecked"}))
		case "advice":
			return reply(llmtest.JSON(map[string]any{"approve": true, "feedback": "Keep the edit short."}))
		case "skill_draft":
			// A tournament's operators draft different candidates.
			extra := ""
			for _, op := range []string{"Combine:", "Simplify:", "Explore:"} {
				if strings.Contains(requestText(q), op) {
					extra = "- " + op + " keep the answer file short.\n"
				}
			}
			return reply(llmtest.JSON(map[string]any{"content": "---\nname: executor\ndescription: How to work on a task.\n---\n\n" +
				"# Executor\n\n- Reread the question and check the answer file before you submit.\n" + extra}))
		case "judgement":
			return reply(llmtest.JSON(map[string]any{"winner": "first", "reasoning": "the first candidate is more concrete"}))
		case "meta_review":
			return reply(llmtest.JSON(map[string]any{"note": "- Edits keep restating the same check."}))
		case "reflection":
			return reply(llmtest.JSON(map[string]any{"no_change": true, "content": "", "reasoning": "the pairs show no pattern"}))
		case "route":
			// Route the first item of the other students as a note.
			routes := []map[string]any{}
			text := requestText(q)
			if i := strings.Index(text, "the items you may route"); i >= 0 {
				if _, rest, ok := strings.Cut(text[i:], "item: "); ok {
					id, _, _ := strings.Cut(rest, "\n")
					routes = append(routes, map[string]any{"item": id, "form": "note",
						"note": "Check the answer file before you submit.", "reason": "the other student's trial holds a lesson"})
				}
			}
			return reply(llmtest.JSON(map[string]any{"routes": routes, "reasoning": "routed what the student lacks"}))
		case "trace_summary":
			// A faithful summariser keeps the assertion message it was
			// shown, so what it passes on follows what it received.
			summary := "The attempt ran one command and submitted."
			if strings.Contains(requestText(q), leakMarker) {
				summary += " The verifier said: " + leakMarker + " expected 42.0017."
			}
			return reply(llmtest.JSON(map[string]any{"summary": summary}))
		}
		t.Errorf("request with no tools and unknown schema %q", rf.JSONSchema.Name)
		return llmtest.Status(400, "unexpected request")
	})
	return srv
}

// writeStep is the plan step that makes the Executor write an answer.
const writeStep = "Write the answer file."

// requestText joins the text of a request's messages.
func requestText(q llmtest.Request) string {
	var b strings.Builder
	for _, m := range q.Chat.Messages {
		b.WriteString(string(m.Content))
		b.WriteString("\n")
	}
	return b.String()
}

// agentStep is one step of an Executor loop: a coordinator (it holds
// dispatch) sends the code subagent once; an agent that runs commands runs
// one that fails; after a tool result, both submit.
func agentStep(q llmtest.Request) llmtest.Reply {
	var dispatch, toolResult bool
	for _, tool := range q.Chat.Tools {
		dispatch = dispatch || tool.Function.Name == "dispatch"
	}
	for _, m := range q.Chat.Messages {
		toolResult = toolResult || m.Role == "tool"
	}
	switch {
	case toolResult:
		return llmtest.ToolCall("submit-1", "submit", `{"summary":"Wrote what I could and submitted."}`)
	case dispatch:
		return llmtest.ToolCall("dispatch-1", "dispatch", `{"agent":"code","task":"Answer /app/question.txt in /app/answer.txt."}`)
	}
	cmd := "echo " + commandHead + "; ls /no-such-dir; exit 3"
	if strings.Contains(requestText(q), writeStep) {
		cmd = "echo 41 > /app/answer.txt; " + cmd
	}
	args, _ := json.Marshal(map[string]string{"command": cmd})
	return llmtest.ToolCall("run-1", "run_command", string(args))
}

// leakRow is one row of the leak matrix.
type leakRow struct {
	name, policy, lab string
	cond              conditions.Condition
	routing           conditions.Routing
}

// routedLab is the lab of two students with their own executor skills,
// whose rows cross the conditions that evolve executor skills with every
// routing that passes evidence between students.
const routedLab = "students"

// leakMatrix is every condition, with the widest skill-update policy its
// design rules allow, in each lab; in routedLab, the conditions with
// executor updates under pooled and mediated routing.
func leakMatrix(labs ...string) []leakRow {
	policies := map[conditions.Condition]string{
		conditions.NoFeedback: "none", conditions.FullTraces: "executor,planner", conditions.SharedNotes: "planner",
		conditions.StaticMediator: "executor,planner", conditions.LearnedMediator: "all",
	}
	var rows []leakRow
	for _, lab := range labs {
		for _, c := range conditions.All() {
			if lab != routedLab {
				rows = append(rows, leakRow{name: string(c) + "-" + lab, policy: policies[c], lab: lab, cond: c, routing: conditions.RoutingIsolated})
				continue
			}
			if !strings.Contains(policies[c], "executor") && policies[c] != "all" {
				continue
			}
			for _, r := range []conditions.Routing{conditions.RoutingPooled, conditions.RoutingMediated} {
				rows = append(rows, leakRow{name: string(c) + "-" + lab + "-" + string(r), policy: policies[c], lab: lab, cond: c, routing: r})
			}
		}
	}
	return rows
}

// leakRows is the leak matrix as a matrix file.
func leakRows(labs ...string) string {
	var b strings.Builder
	b.WriteString("name = \"visibility\"\n")
	for _, r := range leakMatrix(labs...) {
		fmt.Fprintf(&b, "[[rows]]\nname = %q\ncondition = %q\nskill_updates = %q\nlab = %q\nrouting = %q\n",
			r.name, r.cond, r.policy, r.lab, r.routing)
	}
	return b.String()
}

// leakConfig points every role at srv and makes co-evolution run in the
// first iterations of a short run.
func leakConfig(t *testing.T, srv *llmtest.Server, level conditions.VerifierFeedback) string {
	tasks, err := filepath.Abs(filepath.Join("testdata", "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[experiment]\nverifier_feedback = %q\ncoevo_interval = 1\nadvisor_buffer_max = 1\n", level)
	b.WriteString("[validation]\ntrials_per_task = 1\nmax_trials_per_task = 1\n")
	b.WriteString("[reflection]\nmin_reward_gap = 0.1\n")
	// Candidates compete, and the Reflector writes a meta-review, so the
	// judge's and the meta-review's calls are held to the contract too.
	b.WriteString("[tournament]\nn_candidates = 2\nmeta_review_interval = 1\n")
	fmt.Fprintf(&b, "[executor_runtime]\ntask_cache_dir = %q\ntask_dirs = [%q]\n", t.TempDir(), tasks)
	for _, role := range conditions.ModelRoles() {
		fmt.Fprintf(&b, "[models.%s]\nbase_url = %q\napi_key_env = \"HARNESS_LEAK_TEST_KEY\"\nmodel = \"test/%s\"\nmax_retries = 0\ncontext_tokens = 65536\n",
			role, srv.URL(), role)
	}
	fmt.Fprintf(&b, "[labs.%s]\nassignment = \"all\"\n[labs.%s.students.one]\nown_skill = true\n[labs.%s.students.two]\nown_skill = true\n",
		routedLab, routedLab, routedLab)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "default.toml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// consumerOf names the kind of model call a call record is.
func consumerOf(c rundir.CallRecord) conditions.Consumer {
	if c.Role == string(conditions.RoleMediator) && llm.Kind(c.Kind) == "route" {
		return conditions.ConsumerRouter
	}
	if c.Role == string(conditions.RolePlanner) {
		switch llm.Kind(c.Kind) {
		case "proposal":
			return conditions.ConsumerPlannerProposal
		case "skill_draft", "skill_variant":
			return conditions.ConsumerPlannerDraft
		}
		return conditions.ConsumerPlannerPlan
	}
	if llm.Kind(c.Kind) == "meta_review" {
		return conditions.ConsumerMetaReview
	}
	return conditions.Consumer(c.Role)
}

// leakIterations is the shortest run in which every kind of call is made
// after a trial has been verified: the first iteration's trial, proposal,
// review, draft, gate and reflection give the second iteration's plans
// (and the second reflection's pairs) something to carry.
const leakIterations = 2

// runLeakMatrix runs the matrix and returns, per row, its setting and call
// records, after checking the server saw exactly what the call logs hold.
// The caller sets HARNESS_LEAK_TEST_KEY to leakKey.
func runLeakMatrix(t *testing.T, level conditions.VerifierFeedback, labs ...string) (map[string]conditions.Setting, map[string][]rundir.CallRecord, *llmtest.Server) {
	srv := labServer(t)
	cfgDir := leakConfig(t, srv, level)
	matrixFile := filepath.Join(t.TempDir(), "matrix.toml")
	if err := os.WriteFile(matrixFile, []byte(leakRows(labs...)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	r := runCLI(t, engineFactory(), "matrix", "--matrix", matrixFile, "--tasks", "leak-marker", "--iterations", fmt.Sprint(leakIterations),
		"--config-dir", cfgDir, "--out", out, "-j", "2")
	if r.code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
	matrices, _ := filepath.Glob(filepath.Join(out, "*-matrix"))
	if len(matrices) != 1 {
		t.Fatalf("want one matrix directory under %s, got %v", out, matrices)
	}
	settings := map[string]conditions.Setting{}
	calls := map[string][]rundir.CallRecord{}
	total := 0
	for _, lr := range leakMatrix(labs...) {
		row := lr.name
		settings[row] = conditions.Setting{Condition: lr.cond, Verifier: level, Routing: lr.routing}
		err := rundir.ReadCalls(filepath.Join(matrices[0], row, rundir.CallsFile), func(rec rundir.CallRecord) error {
			calls[row] = append(calls[row], rec)
			return nil
		})
		if err != nil {
			t.Fatalf("row %s: %v", row, err)
		}
		total += len(calls[row])
	}
	if total != srv.Count() {
		t.Errorf("the call logs hold %d records, the server answered %d requests", total, srv.Count())
	}
	for row, recs := range calls {
		checkCallLog(t, filepath.Join(matrices[0], row), recs)
	}
	return settings, calls, srv
}

const leakKey = "sk-leak-test-0b7c2d"

// checkCallLog checks a row's call log against its ledger (one record per
// charged call, per caller), that no file of the row holds the API key, and
// that inspect --calls --role mediator --json returns the Mediator's calls.
func checkCallLog(t *testing.T, dir string, recs []rundir.CallRecord) {
	t.Helper()
	st, err := harness.LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	perCaller := map[string]int64{}
	mediator := 0
	for _, c := range recs {
		perCaller[c.Caller]++
		if c.Role == string(conditions.RoleMediator) {
			mediator++
		}
	}
	for caller, u := range st.Ledger.ByCaller {
		if u.Calls != perCaller[caller] {
			t.Errorf("%s: the ledger charged %s with %d calls, the call log holds %d", dir, caller, u.Calls, perCaller[caller])
		}
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(data), leakKey) {
			t.Errorf("%s holds the API key", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "inspect", dir, "--calls", "--role", "mediator", "--json")
	if r.code != ExitOK {
		t.Fatalf("inspect --calls: exit %d: %s", r.code, r.errOut)
	}
	var listed []rundir.CallRecord
	if err := json.Unmarshal([]byte(r.out), &listed); err != nil {
		t.Fatalf("inspect --calls --json output: %v\n%s", err, r.out)
	}
	if len(listed) != mediator {
		t.Errorf("%s: inspect lists %d Mediator calls, the log holds %d", dir, len(listed), mediator)
	}
}

func recordText(t *testing.T, c rundir.CallRecord) string {
	data, err := json.Marshal(c.Request)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestVerifierDiagnostics runs the two levels of verifier_feedback side by
// side: each matrix has its own endpoint, configuration and output, and a
// trial spends most of its time waiting for the engine.
func TestVerifierDiagnostics(t *testing.T) {
	dockerForTest(t)
	// Here, not in the subtests: a parallel test may not set the environment.
	t.Setenv("HARNESS_LEAK_TEST_KEY", leakKey)
	// The group returns when both levels have, so that this test's own
	// duration (what CI lists) is theirs.
	t.Run("levels", func(t *testing.T) {
		t.Run("ReachNoModelByDefault", func(t *testing.T) {
			t.Parallel()
			verifierDiagnosticsReachNoModelByDefault(t)
		})
		t.Run("ReachExactlyTheContractsRoles", func(t *testing.T) {
			t.Parallel()
			verifierDiagnosticsReachExactlyTheContractsRoles(t)
		})
	})
}

// Under the default verifier_feedback = "tests", nothing the verifier
// printed reaches any model, in any condition or executor mode: not in the
// requests the endpoint received, not in the run's call log.
func verifierDiagnosticsReachNoModelByDefault(t *testing.T) {
	_, calls, srv := runLeakMatrix(t, conditions.VerifierTests, "default", "hierarchical", routedLab)
	for i, q := range srv.Requests() {
		if strings.Contains(string(q.Raw), leakMarker) {
			t.Errorf("request %d to %s carries the verifier's marker", i, q.Chat.Model)
		}
	}
	seen := map[conditions.Consumer]bool{}
	for row, recs := range calls {
		for _, c := range recs {
			seen[consumerOf(c)] = true
			if strings.Contains(recordText(t, c), leakMarker) {
				t.Errorf("row %s: call %s (%s) carries the verifier's marker", row, c.Caller, c.Kind)
			}
		}
	}
	// The check means something only if every role that can carry a
	// trial's evidence was asked.
	for _, c := range []conditions.Consumer{conditions.ConsumerPlannerPlan, conditions.ConsumerPlannerProposal,
		conditions.ConsumerPlannerDraft, conditions.ConsumerExecutor, conditions.ConsumerCode, conditions.ConsumerMediator,
		conditions.ConsumerRouter, conditions.ConsumerAdvisor, conditions.ConsumerReflector} {
		if !seen[c] {
			t.Errorf("no %s call was made: the matrix does not exercise it", c)
		}
	}
}

// Under verifier_feedback = "diagnostics" the verifier's output reaches
// exactly the kinds of call the contract allows it, and no other.
func verifierDiagnosticsReachExactlyTheContractsRoles(t *testing.T) {
	settings, calls, _ := runLeakMatrix(t, conditions.VerifierDiagnostics, "default", routedLab)
	made := map[conditions.Consumer]bool{}
	for _, recs := range calls {
		for _, c := range recs {
			made[consumerOf(c)] = true
		}
	}
	for _, k := range []conditions.Consumer{conditions.ConsumerJudge, conditions.ConsumerMetaReview, conditions.ConsumerRouter} {
		if !made[k] {
			t.Errorf("no %s call was made: the check below does not cover it", k)
		}
	}
	for row, recs := range calls {
		s := settings[row]
		carried := map[conditions.Consumer]bool{}
		for _, c := range recs {
			k := consumerOf(c)
			has := strings.Contains(recordText(t, c), leakMarker)
			carried[k] = carried[k] || has
			if has && !s.Visible(k).Has(conditions.EvidenceDiagnostics) {
				t.Errorf("row %s: %s call %s carries diagnostics the contract does not allow", row, k, c.Caller)
			}
		}
		for _, k := range diagnosticConsumers(s, recs) {
			if !carried[k] {
				t.Errorf("row %s: the contract shows %s the verifier's diagnostics, but no %s call carried them", row, k, k)
			}
		}
	}
}

// diagnosticConsumers are the kinds of call in recs that the contract shows
// diagnostics to and that were made after a trial had been verified (the
// first iteration's plans come before any).
func diagnosticConsumers(s conditions.Setting, recs []rundir.CallRecord) []conditions.Consumer {
	var out []conditions.Consumer
	seen := map[conditions.Consumer]bool{}
	for _, c := range recs {
		k := consumerOf(c)
		if seen[k] || !s.Visible(k).Has(conditions.EvidenceDiagnostics) || (k == conditions.ConsumerPlannerPlan && c.Iteration < 2) {
			continue
		}
		seen[k] = true
		out = append(out, k)
	}
	return out
}

// The Mediator is shown what the Executor did: the command it ran, its exit
// code and the head of its output, within the transcript budget.
func TestMediatorSeesTheExecutorsCommands(t *testing.T) {
	dockerForTest(t)
	t.Setenv("HARNESS_LEAK_TEST_KEY", leakKey)
	srv := labServer(t)
	cfgDir := leakConfig(t, srv, conditions.VerifierTests)
	out := t.TempDir()
	r := runCLI(t, engineFactory(), "run", "--tasks", "leak-marker", "--iterations", "1", "--condition", "static_mediator",
		"--skill-updates", "none", "--config-dir", cfgDir, "--out", out)
	if r.code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
	var mediator []string
	for _, q := range srv.Requests() {
		if q.Chat.Model == "test/mediator" {
			mediator = append(mediator, requestText(q))
		}
	}
	if len(mediator) != 1 {
		t.Fatalf("%d Mediator requests, want 1", len(mediator))
	}
	for _, want := range []string{"ls /no-such-dir", "exit 3", commandHead} {
		if !strings.Contains(mediator[0], want) {
			t.Errorf("the Mediator's request lacks %q:\n%s", want, mediator[0])
		}
	}
	if strings.Contains(mediator[0], leakMarker) {
		t.Errorf("the Mediator was shown the verifier's diagnostics under verifier_feedback = tests")
	}
}
