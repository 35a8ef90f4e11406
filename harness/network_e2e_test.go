package harness_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/network"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm/providers"
)

// networkConfig is the offline configuration of a three-lab network whose
// labs differ in their students' behaviour: lab a's model rarely writes
// the outputs unless told to, b's and c's more often, so the diligence
// advice is worth more to some labs than to others.
func networkConfig(t *testing.T) *config.Config {
	t.Helper()
	dir := t.TempDir()
	layer := `
[experiment]
advisor_buffer_max = 1
[validation]
max_trials_per_task = 3
[evaluation]
trials_per_task = 1
[models.careless]
offline_diligence = 0.05
[models.careful]
offline_diligence = 0.5
[labs.a.students.s1]
model = "careless"
[labs.b.students.s1]
model = "careful"
[labs.c.students.s1]
model = "careless"
`
	if err := os.WriteFile(filepath.Join(dir, config.LayerFile), []byte(layer), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ExecutorRuntime.TaskCacheDir = filepath.Join(t.TempDir(), "cache")
	cfg.SetOffline()
	return cfg
}

// runNetwork plans and runs a network offline in the in-memory world, or
// resumes the one in resume.
func runNetwork(t *testing.T, ctx context.Context, cfg *config.Config, s network.Settings, resume string) (*harness.Outcome, error) {
	t.Helper()
	tasks := harness.MemTasks(t, 8)
	popts := harness.PlanOptions{Iterations: 3, Agent: harness.AgentLab, Offline: true, Concurrency: 2, Resume: resume}
	if resume == "" {
		popts.Name, popts.Rows, popts.Seeds, popts.OutDir = "network", s.Rows(), []int64{1, 2}, t.TempDir()
		popts.Tasks = harness.TaskIDs(tasks[:2])
		popts.Split = harness.SplitOptions{Validate: harness.TaskIDs(tasks[2:6]), HeldOut: harness.TaskIDs(tasks[6:])}
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
	return harness.ExecutePlan(ctx, harness.ExecOptions{Plan: p, Tasks: tasks[:2], ValidateSplit: tasks[2:6], HeldOut: tasks[6:],
		Backend: harness.MemWorld(), Providers: providers.New, OnStart: x.SetDir,
		Barrier: x.Barrier, BarrierInterval: s.Interval, RowDone: x.Stopped})
}

func ringSettings() network.Settings {
	s := network.FromConfig(config.Network{Labs: []string{"a", "b", "c"}, Topology: network.Ring})
	return s
}

// The acceptance network: three labs on a ring, two seeds, every
// treatment. Nothing is sent under none; every item sent has its
// provenance and is delivered once; under mediated some item is adopted
// through a receiving lab's own gate; the comparison shows every
// treatment with an interval over the seeds and the diffusion tokens.
func TestNetworkRingOfThreeLabs(t *testing.T) {
	cfg := networkConfig(t)
	s := ringSettings()
	out, err := runNetwork(t, context.Background(), cfg, s, "")
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
		if !r.Delivered {
			t.Errorf("item %s was sent and never delivered", r.ID)
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
	if adopted[network.Mediated] == 0 {
		t.Errorf("no item adopted through a receiving lab's gate under mediated (adopted: %v)", adopted)
	}
	checkDeliveredOnce(t, out.Dir, recs)
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
		var rec struct{ IDs []string }
		data, err := os.ReadFile(f)
		if err != nil || json.Unmarshal(data, &rec) != nil {
			t.Fatalf("inbox ledger %s: %v", f, err)
		}
		group := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(f))))
		lab := filepath.Base(filepath.Dir(f))
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
