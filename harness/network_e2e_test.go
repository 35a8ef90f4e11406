package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/network"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm/providers"
	"github.com/mediated-coevo/harness/mediator"
	"github.com/mediated-coevo/harness/skills"
)

// networkConfig is the offline configuration of a three-lab network whose
// labs differ in their skills and their students' behaviour: lab a's skill
// carries the diligence advice, and the careless model (a's and c's) rarely
// writes the outputs unless told to, the careful one (b's) more often, so
// the advice is worth more to some labs than to others.
func networkConfig(t *testing.T, root string) *config.Config {
	t.Helper()
	dir := filepath.Join(root, "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Lab a starts from a skills tree whose executor skill carries the
	// diligence advice; b and c from the shipped skills, which lack it.
	tree := filepath.Join(dir, "skills-a")
	if _, err := os.Stat(tree); os.IsNotExist(err) { // a resuming child finds it written
		if err := skills.WriteDefaults(tree); err != nil {
			t.Fatal(err)
		}
		store := &skills.Store{Root: tree}
		sk, err := store.Read(conditions.RoleExecutor)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Write(conditions.RoleExecutor, []byte(strings.TrimRight(string(sk.Content), "\n")+"\n"+executor.DiligenceAdvice+"\n")); err != nil {
			t.Fatal(err)
		}
	}
	layer := fmt.Sprintf(`
[experiment]
advisor_buffer_max = 1
[evaluation]
trials_per_task = 1
[models.careless]
offline_diligence = 0.05
[models.careful]
offline_diligence = 0.5
[labs.a]
skills_dir = %q
[labs.a.students.s1]
model = "careless"
[labs.b.students.s1]
model = "careful"
[labs.c.students.s1]
model = "careless"
`, tree)
	if err := os.WriteFile(filepath.Join(dir, config.LayerFile), []byte(layer), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ExecutorRuntime.TaskCacheDir = filepath.Join(root, "cache")
	cfg.SetOffline()
	return cfg
}

// runNetwork plans and runs a network offline in the in-memory world, or
// resumes the one in resume.
func runNetwork(t *testing.T, ctx context.Context, cfg *config.Config, s network.Settings, seeds []int64, out, resume string) (*harness.Outcome, error) {
	t.Helper()
	tasks := harness.MemTasks(t, 5)
	popts := harness.PlanOptions{Iterations: 3, Agent: harness.AgentLab, Offline: true, Concurrency: 8, Resume: resume}
	if resume == "" {
		popts.Name, popts.Rows, popts.Seeds, popts.OutDir = "network", s.Rows(), seeds, out
		popts.Tasks = harness.TaskIDs(tasks[:2])
		popts.Split = harness.SplitOptions{Validate: harness.TaskIDs(tasks[2:4]), HeldOut: harness.TaskIDs(tasks[4:])}
	}
	p, err := harness.BuildMatrixPlan(cfg, popts)
	if err != nil {
		t.Fatal(err)
	}
	if resume == "" {
		p.Network = &rundir.NetworkRecord{Labs: s.Labs, Topology: s.Topology, Diffusion: s.Diffusion, DiffusionInterval: s.Interval,
			TokenBudget: s.TokenBudget, StabilityBound: s.StabilityBound, SkipStabilityCheck: true}
	}
	x, err := network.NewExchange("", s)
	if err != nil {
		t.Fatal(err)
	}
	return harness.ExecutePlan(ctx, harness.ExecOptions{Plan: p, Tasks: tasks[:2], ValidateSplit: tasks[2:4], HeldOut: tasks[4:],
		Backend: harness.MemWorld(), Providers: providers.New, OnStart: func(dir string) {
			x.SetDir(dir)
			_ = os.WriteFile(filepath.Join(out, "started"), []byte(dir), 0o644)
		},
		Barrier: x.Barrier, BarrierInterval: s.Interval, RowDone: x.Stopped})
}

func ringSettings() network.Settings {
	s := network.FromConfig(&config.Network{Labs: []string{"a", "b", "c"}, Topology: network.Ring})
	return s
}

// The acceptance network: three labs on a ring, two seeds, every
// treatment. Nothing is sent under none; every item sent has its
// provenance and is delivered once; under mediated some item is adopted
// through a receiving lab's own gate; the comparison shows every
// treatment with an interval over the seeds and the diffusion tokens.
func TestNetworkRingOfThreeLabs(t *testing.T) {
	cfg := networkConfig(t, t.TempDir())
	s := ringSettings()
	out, err := runNetwork(t, context.Background(), cfg, s, []int64{1, 2}, t.TempDir(), "")
	if err != nil || out.Status != rundir.StatusCompleted {
		t.Fatalf("network: %v, %+v", err, out)
	}
	if _, err := os.Stat(filepath.Join(out.Dir, rundir.NetworkDir, rundir.NetworkGroup(network.None, 1))); !os.IsNotExist(err) {
		t.Errorf("diffusion none left exchange files (stat: %v)", err)
	}
	recs, err := network.Records(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	adopted := map[string]int{}
	sent := map[string]int{}
	for _, r := range recs {
		if r.Diffusion == network.None {
			t.Errorf("item %s under diffusion none", r.ID)
		}
		if r.From == "" || r.To == "" || r.Iteration == 0 || r.Kind == "" || r.Decision == "" || r.Edge != r.From+"->"+r.To {
			t.Errorf("item without its provenance: %+v", r)
		}
		if r.Decision != network.DecisionSent {
			continue
		}
		sent[r.Diffusion]++
		if r.Delivered == (r.ReceiverDecision == network.ReceiverDropped) {
			t.Errorf("item %s was sent and is neither taken in nor dropped by its receiver: %+v", r.ID, r)
		}
		if r.Diffusion == network.Mediated && r.ReceiverTokens == 0 {
			t.Errorf("item %s reached a mediated lab without its Mediator deciding on it", r.ID)
		}
		if len(r.Evidence) == 0 {
			t.Errorf("item %s names no evidence it came from", r.ID)
		}
		if r.ReceiverDecision == network.ReceiverAdopted {
			adopted[r.Diffusion]++
			if r.SkillHashBefore == "" || r.SkillHashBefore == r.SkillHashAfter {
				t.Errorf("adopted item %s without the skill hashes before and after: %+v", r.ID, r)
			}
		}
	}
	if sent[network.Broadcast] == 0 || sent[network.Mediated] == 0 {
		t.Errorf("items sent by treatment %v: broadcast and mediated should each send some", sent)
	}
	t.Logf("items sent %v, adopted %v", sent, adopted)
	if adopted[network.Mediated] == 0 {
		t.Errorf("no item adopted through a receiving lab's gate under mediated (adopted: %v)", adopted)
	}
	checkDeliveredOnce(t, out.Dir, recs)
	checkShareSawNoReports(t, out.Dir)
	res, err := network.Compare(out.Dir, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Fatalf("compare gave %d treatments, want 3: %+v", len(res), res)
	}
	for _, r := range res {
		if r.Estimand != "held_out" || r.Low == nil || r.High == nil || len(r.SeedMeans) != 2 {
			t.Errorf("treatment %s: want the held-out estimand with an interval over 2 seeds, got %+v", r.Diffusion, r)
		}
		if r.Diffusion == network.Mediated && r.Tokens == 0 {
			t.Errorf("mediated diffusion spent no tokens: %+v", r)
		}
		adoptedFrom := 0
		for _, l := range r.Labs {
			for _, n := range l.AdoptedFrom {
				adoptedFrom += n
			}
		}
		if len(r.Labs) != 3 || adoptedFrom != r.Adopted {
			t.Errorf("treatment %s: %d labs whose adoptions by origin sum to %d, want 3 labs summing to %d", r.Diffusion, len(r.Labs), adoptedFrom, r.Adopted)
		}
		if r.Diffusion != network.Mediated && r.Tokens != 0 {
			t.Errorf("%s diffusion spent %d tokens deciding: only mediated decides", r.Diffusion, r.Tokens)
		}
	}
}

// checkDeliveredOnce holds the inbox ledgers to the items: every id a
// ledger lists was sent to that lab, and no id is listed twice.
func checkDeliveredOnce(t *testing.T, dir string, recs []network.Record) {
	t.Helper()
	sentTo := map[string]string{}
	for _, r := range recs {
		if r.Decision == network.DecisionSent {
			sentTo[r.ID+"@"+rundir.NetworkGroup(r.Diffusion, r.Seed)] = r.To
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, rundir.NetworkDir, "*", "inbox", "*", "*.json"))
	seen := map[string]bool{}
	for _, f := range files {
		var rec struct {
			IDs     []string
			Dropped map[string]string
		}
		data, err := os.ReadFile(f)
		if err != nil || json.Unmarshal(data, &rec) != nil {
			t.Fatalf("inbox ledger %s: %v", f, err)
		}
		group := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(f))))
		lab := filepath.Base(filepath.Dir(f))
		for id := range rec.Dropped {
			rec.IDs = append(rec.IDs, id) // decided on, and so received, once
		}
		for _, id := range rec.IDs {
			key := id + "@" + group
			if seen[key] {
				t.Errorf("item %s delivered twice", key)
			}
			seen[key] = true
			if sentTo[key] != lab {
				t.Errorf("lab %s took in %s, which was sent to %q", lab, key, sentTo[key])
			}
		}
	}
	if len(seen) != len(sentTo) {
		t.Errorf("%d items delivered, %d sent", len(seen), len(sentTo))
	}
}

const networkBaseEnv = "HARNESS_TEST_NETWORK_BASE"

// TestNetworkHelperProcess is the child TestNetworkKillAndResume kills: it
// starts a broadcast network under the base directory the parent names,
// or resumes the one it started. It does nothing in a normal test run.
func TestNetworkHelperProcess(t *testing.T) {
	base := os.Getenv(networkBaseEnv)
	if base == "" {
		t.Skip("helper process for TestNetworkKillAndResume")
	}
	cfg := networkConfig(t, base)
	s := ringSettings()
	s.Diffusion = []string{network.Broadcast}
	resume := ""
	if data, err := os.ReadFile(filepath.Join(base, "started")); err == nil {
		resume = string(data)
	}
	out, err := runNetwork(t, context.Background(), cfg, s, []int64{1}, base, resume)
	if err != nil || out.Status != rundir.StatusCompleted {
		t.Fatalf("network: %v, %+v", err, out)
	}
}

// A network killed with SIGKILL at random points and resumed each time
// loses no item and delivers none twice: every item sent is in its
// receiver's inbox ledger once, and in its receiver's history once.
func TestNetworkKillAndResume(t *testing.T) {
	base := t.TempDir()
	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNetworkHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), networkBaseEnv+"="+base)
		return cmd
	}
	outboxes := func() int {
		files, _ := filepath.Glob(filepath.Join(base, "*", rundir.NetworkDir, "*", "outbox", "*", "*.json"))
		return len(files)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	// Kill once the first, fourth and seventh outbox are written (the
	// first, second and third barrier), a random moment later.
	for _, after := range []int{1, 4, 7} {
		cmd := child()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(60 * time.Second); outboxes() < after && time.Now().Before(deadline); {
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		t.Logf("killed with %d outboxes on disk", outboxes())
	}
	if out, err := child().CombinedOutput(); err != nil {
		t.Fatalf("final resume failed: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(base, "started"))
	if err != nil {
		t.Fatal(err)
	}
	dir := string(data)
	recs, err := network.Records(dir)
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	for _, r := range recs {
		if r.Decision == network.DecisionSent {
			sent++
		}
	}
	if sent == 0 {
		t.Fatal("the network sent nothing: the test shows nothing")
	}
	checkDeliveredOnce(t, dir, recs)
	for _, lab := range []string{"a", "b", "c"} {
		taken := map[string]int{}
		hist := filepath.Join(dir, network.Broadcast+"-"+lab, rundir.HistoryFile)
		data, err := os.ReadFile(hist)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range splitLines(data) {
			var rec struct {
				Type  string
				Entry *rundir.Entry
			}
			if json.Unmarshal(line, &rec) == nil && rec.Entry != nil && rec.Entry.Role == rundir.AuthorNetwork {
				taken[rec.Entry.ID]++
			}
		}
		for _, r := range recs {
			if r.To == lab && r.Decision == network.DecisionSent && taken[r.ID] != 1 {
				t.Errorf("lab %s's history holds item %s %d times, want once", lab, r.ID, taken[r.ID])
			}
		}
	}
}

func splitLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := 0
		for i < len(data) && data[i] != '\n' {
			i++
		}
		out = append(out, data[:i])
		if i < len(data) {
			i++
		}
		data = data[i:]
	}
	return out
}

// checkShareSawNoReports holds the share decisions to the visibility
// contract: without cross-task feedback a Mediator deciding what to send
// is shown its lab's adopted lines, never its reports of several tasks.
func checkShareSawNoReports(t *testing.T, dir string) {
	t.Helper()
	calls := 0
	for _, lab := range []string{"a", "b", "c"} {
		for _, seed := range []int64{1, 2} {
			row := filepath.Join(dir, fmt.Sprintf("%s-%s-seed%d", network.Mediated, lab, seed))
			err := rundir.ReadCalls(filepath.Join(row, rundir.CallsFile), func(c rundir.CallRecord) error {
				if c.Kind != string(mediator.KindShare) {
					return nil
				}
				calls++
				if c.Role != "mediator" {
					t.Errorf("a share decision charged to role %q, want mediator", c.Role)
				}
				for _, m := range c.Request.Messages {
					if strings.Contains(m.Content, "Your reports since the last exchange") {
						t.Errorf("%s: a share decision was shown the lab's reports without cross-task feedback", row)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if calls == 0 {
		t.Error("no share decision was made under mediated diffusion")
	}
}
