package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/network"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// networkConfigDir is a configuration directory with labs a, b and c.
func networkConfigDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	layer := "[labs.a]\nstudents = 1\n[labs.b]\nstudents = 1\n[labs.c]\nstudents = 1\n"
	if err := os.WriteFile(filepath.Join(dir, config.LayerFile), []byte(layer), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Every bad network is refused with exit 2, says what to fix and creates
// nothing; without a stability record the refusal names both ways out.
func TestNetworkRefusals(t *testing.T) {
	cfgDir := networkConfigDir(t)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no stability record", nil, []string{"--baseline DIR", "no_feedback matrix", "--skip-stability-check"}},
		{"a baseline that is not there", []string{"--baseline", "/nonexistent/baseline"}, []string{"refusing to start", "baseline stability check failed"}},
		{"baseline and skip together", []string{"--baseline", "x", "--skip-stability-check"}, []string{"cannot be combined"}},
		{"one lab", []string{"--labs", "a", "--skip-stability-check"}, []string{"at least two labs"}},
		{"an unknown lab", []string{"--labs", "a,zz", "--skip-stability-check"}, []string{"zz"}},
		{"an unknown topology", []string{"--topology", "mesh", "--skip-stability-check"}, []string{`unknown topology "mesh"`}},
		{"an edge to nowhere", []string{"--topology", "a->q", "--skip-stability-check"}, []string{`lab "q" is not in the network's labs`}},
		{"an unknown treatment", []string{"--diffusion", "gossip", "--skip-stability-check"}, []string{`unknown diffusion "gossip"`}},
		{"a bad interval", []string{"--diffusion-interval", "-1", "--skip-stability-check"}, []string{"diffusion_interval must be at least 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			args := append([]string{"network", "--tasks", "csv-parser", "--offline", "--config-dir", cfgDir, "--out", out}, tt.args...)
			if !slices.Contains(tt.args, "--labs") {
				args = append(args, "--labs", "a,b,c")
			}
			r := runCLI(t, nil, args...)
			if r.code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, ExitUsage, r.errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.errOut, w) {
					t.Errorf("stderr %q does not say %q", r.errOut, w)
				}
			}
			if ents, _ := os.ReadDir(out); len(ents) != 0 {
				t.Errorf("a refused network created %d entries", len(ents))
			}
		})
	}
}

// The dry run plans one row per treatment, lab and seed and records the
// design and the skipped stability check.
func TestNetworkDryRunJSON(t *testing.T) {
	r := runCLI(t, nil, "network", "--labs", "a,b,c", "--topology", "ring", "--diffusion", "none,broadcast,mediated", "--seeds", "1,2",
		"--tasks", "csv-parser", "--iterations", "2", "--offline", "--skip-stability-check", "--dry-run", "--json",
		"--config-dir", networkConfigDir(t), "--out", t.TempDir())
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	var p harness.Plan
	if err := json.Unmarshal([]byte(r.out), &p); err != nil {
		t.Fatalf("stdout is not a plan: %v\n%s", err, r.out)
	}
	if len(p.Rows) != 3*3*2 || p.Rows[0].Name != "none-a-seed1" || p.Rows[0].Lab != "a" {
		t.Errorf("rows = %+v", p.Rows)
	}
	if n := p.Network; n == nil || !n.SkipStabilityCheck || n.Topology != "ring" || n.DiffusionInterval != 1 || len(n.Labs) != 3 {
		t.Errorf("network record = %+v", p.Network)
	}
}

// The network hands the orchestrator its barrier: every row gets one, at
// the interval asked for.
func TestNetworkHandsTheBarrierOn(t *testing.T) {
	var got *ValidatedPlan
	f := testFactory()
	f.Execute = func(_ context.Context, x *ValidatedPlan) error { got = x; return nil }
	r := runCLI(t, f, "network", "--labs", "a,b", "--diffusion", "mediated", "--diffusion-interval", "2", "--tasks", "csv-parser",
		"--offline", "--skip-stability-check", "--no-preflight", "--config-dir", networkConfigDir(t), "--out", t.TempDir())
	if r.code != 0 || got == nil || got.Tune == nil {
		t.Fatalf("exit %d (%s), execution %+v", r.code, r.errOut, got)
	}
	var opts harness.ExecOptions
	got.Tune(&opts)
	if opts.Barrier == nil || opts.BarrierInterval != 2 || opts.RowDone == nil || opts.OnStart == nil {
		t.Errorf("options = barrier %v, interval %d", opts.Barrier != nil, opts.BarrierInterval)
	}
	if b := opts.Barrier(got.Plan.Rows[0]); b == nil {
		t.Error("a row got no barrier")
	}
}

// inspect --diffusion --json lists a network's items, one object each with
// at least from, to, iteration, kind and decision; on a directory that is
// not a network it is bad usage naming what to give.
func TestInspectDiffusionJSON(t *testing.T) {
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	md, err := rundir.Create(t.TempDir(), rundir.Spec{Manifest: rundir.Manifest{Kind: rundir.KindMatrix, Name: "network", Seeds: []int64{1},
		Rows: []string{"broadcast-a", "broadcast-b"}, Network: &rundir.NetworkRecord{Labs: []string{"a", "b"}, Topology: "ring",
			Diffusion: []string{"broadcast"}, DiffusionInterval: 1}}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	items := []network.Item{
		{ID: "net/a-b/i0001/1", Diffusion: "broadcast", Seed: 1, From: "a", To: "b", Edge: "a->b", Iteration: 1, Kind: network.KindReport, Decision: network.DecisionSent, Content: "r"},
		{ID: "net/a-b/i0002/1", Diffusion: "broadcast", Seed: 1, From: "a", To: "b", Edge: "a->b", Iteration: 2, Kind: network.KindSkillDiff, Decision: network.DecisionSent, Content: "- x"},
	}
	for i, it := range items {
		p := filepath.Join(md.Path, rundir.NetworkOutbox(rundir.NetworkGroup("broadcast", 1), "a", i+1))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal([]network.Item{it})
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runCLI(t, nil, "inspect", md.Path, "--diffusion", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(r.out), &got); err != nil {
		t.Fatalf("stdout is not a JSON list: %v\n%s", err, r.out)
	}
	if len(got) != 2 {
		t.Fatalf("%d items, want 2: %s", len(got), r.out)
	}
	for i, g := range got {
		for _, k := range []string{"from", "to", "iteration", "kind", "decision"} {
			if _, ok := g[k]; !ok {
				t.Errorf("item %d has no %q: %v", i, k, g)
			}
		}
		if g["receiver_decision"] != network.ReceiverNotDelivered {
			t.Errorf("item %d: receiver_decision %v, want not_delivered (no inbox ledger)", i, g["receiver_decision"])
		}
	}
	if got[0]["iteration"] != 1.0 || got[1]["kind"] != network.KindSkillDiff {
		t.Errorf("items out of order: %s", r.out)
	}
	plain := runCLI(t, nil, "inspect", filepath.Join(md.Path), "--diffusion")
	if plain.code != 0 || !strings.Contains(plain.out, "a->b") {
		t.Errorf("text listing: exit %d, %q", plain.code, plain.out)
	}
	run, err := rundir.Create(t.TempDir(), rundir.Spec{Manifest: rundir.Manifest{Kind: rundir.KindRun, Condition: "no_feedback"}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, nil, "inspect", run.Path, "--diffusion"); r.code != ExitUsage || !strings.Contains(r.errOut, "not a network experiment") {
		t.Errorf("a run directory: exit %d, %q", r.code, r.errOut)
	}
}

// The compare text shows each treatment with its interval over seeds (or
// says there is none) and each lab's adoptions by origin.
func TestWriteNetworkCompare(t *testing.T) {
	lo, hi := 0.4, 0.8
	res := []network.TreatmentResult{
		{Diffusion: "none", Estimand: "held_out", Mean: 0.5, Level: 0.95, Labs: []network.LabResult{{Lab: "a", AdoptedFrom: map[string]int{}}}},
		{Diffusion: "mediated", Estimand: "held_out", Mean: 0.6, Low: &lo, High: &hi, Level: 0.95, Items: 3, Adopted: 2, Tokens: 120,
			Labs: []network.LabResult{{Lab: "b", Sent: 1, AdoptedFrom: map[string]int{"a": 2}}}},
	}
	var b strings.Builder
	if err := writeNetworkCompare(&b, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- (one seed)", "[0.400, 0.800] 95%", "120", "a:2", "Per lab:"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("compare text lacks %q:\n%s", want, b.String())
		}
	}
}

// A network resumed as a plain matrix would run its labs without their
// barrier: refused, naming the command that resumes it.
func TestMatrixRefusesToResumeANetwork(t *testing.T) {
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	md, err := rundir.Create(t.TempDir(), rundir.Spec{Manifest: rundir.Manifest{Kind: rundir.KindMatrix, Name: "network",
		Rows: []string{"none-a"}, Network: &rundir.NetworkRecord{Labs: []string{"a", "b"}, Topology: "ring", Diffusion: []string{"none"}}}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "matrix", "--resume", md.Path)
	if r.code != ExitUsage || !strings.Contains(r.errOut, "harness network --resume") {
		t.Errorf("exit %d, stderr %q", r.code, r.errOut)
	}
}

// The dry run prices the mediated treatment's share and intake decisions:
// its Mediator tokens exceed those of the same network under none, whose
// other roles it matches.
func TestNetworkDryRunPricesTheDiffusionCalls(t *testing.T) {
	cfgDir := networkConfigDir(t)
	byRole := func(diffusion string) map[conditions.Role]int64 {
		t.Helper()
		r := runCLI(t, nil, "network", "--labs", "a,b,c", "--diffusion", diffusion, "--tasks", "csv-parser", "--iterations", "2", "--offline",
			"--skip-stability-check", "--dry-run", "--json", "--config-dir", cfgDir, "--out", t.TempDir())
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s", diffusion, r.code, r.errOut)
		}
		var p harness.Plan
		if err := json.Unmarshal([]byte(r.out), &p); err != nil {
			t.Fatalf("stdout is not a plan: %v\n%s", err, r.out)
		}
		return p.EstimatedTokensByRole
	}
	none, mediated := byRole("none"), byRole("mediated")
	for role, n := range none {
		switch {
		case role == conditions.RoleMediator && mediated[role] <= n:
			t.Errorf("mediated diffusion estimates %d Mediator tokens, no more than none's %d", mediated[role], n)
		case role != conditions.RoleMediator && mediated[role] != n:
			t.Errorf("%s: mediated %d tokens, none %d", role, mediated[role], n)
		}
	}
}
