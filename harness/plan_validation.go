package harness

import (
	"fmt"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
)

// noteValidationSource tells, in the dry run, where the gate will find the
// tasks it validates candidates on, when some row can propose executor
// edits: the same order Run.validationTasks follows.
func (p *Plan) noteValidationSource(cfg *config.Config) {
	if !cfg.Validation.Enabled || !p.anyRowGated() {
		return
	}
	var note string
	switch {
	case len(p.ValidateTasks) > 0:
		note = fmt.Sprintf("the gate validates candidates on the validation split (%d tasks), never on the tasks their proposals came from", len(p.ValidateTasks))
	case len(cfg.Validation.Pool) > 0:
		note = fmt.Sprintf("the gate validates candidates on [validation] pool tasks (%d) that contributed no proposal to the batch; when none is compatible, on the row's other tasks", len(cfg.Validation.Pool))
	default:
		note = "the gate validates each candidate on the row's tasks that contributed no proposal to its batch (the batch's own tasks only when every task contributed); a --split with a validation part keeps validation apart from the evolve tasks altogether"
	}
	p.Notes = append(p.Notes, note)
}

// anyRowGated reports whether some row can propose executor edits, which
// the gate then validates.
func (p *Plan) anyRowGated() bool {
	for _, r := range p.Rows {
		if r.Policy.Executor && r.Condition.ProposalFeedback() != conditions.FeedbackNone {
			return true
		}
	}
	return false
}
