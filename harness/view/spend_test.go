package view

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// The runs page counts the checkpoint's spend (its total, or the sum over
// callers when it has none) and what the spend journal holds since, and
// nothing the checkpoint has already folded in.
func TestAddSpendCountsTheJournal(t *testing.T) {
	journal := `{"epoch":2,"charges":{"planner/i0001-a":{"input_tokens":100,"output_tokens":10,"cost_usd":0.5}},"elapsed_ns":1}
{"epoch":3,"charges":{"executor/student-1/i0002-a":{"input_tokens":1000,"output_tokens":200,"cost_usd":1}},"elapsed_ns":2}
`
	tests := []struct {
		name  string
		state string
	}{
		{"checkpoint with its total", `{"version":1,"spend_epoch":3,"ledger":{"by_caller":{"planner/i0001-a":{"input_tokens":100,"output_tokens":10,"cost_usd":0.5}},"total":{"input_tokens":100,"output_tokens":10,"cost_usd":0.5}}}`},
		{"checkpoint without a total", `{"version":1,"spend_epoch":3,"ledger":{"by_caller":{"planner/i0001-a":{"input_tokens":100,"output_tokens":10,"cost_usd":0.5}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, rundir.StateFile), []byte(tt.state), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, rundir.SpendJournalFile), []byte(journal), 0o644); err != nil {
				t.Fatal(err)
			}
			tokens, cost := addSpend(dir, 0, 0)
			if tokens != 1310 || cost != 1.5 {
				t.Errorf("spend %d tokens, $%v; want 1310 and $1.5 (the checkpoint and its epoch's journal line)", tokens, cost)
			}
		})
	}
}
