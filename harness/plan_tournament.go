package harness

import (
	"fmt"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
)

// The call kinds a tournament adds: a candidate drafted by an operator
// other than refine (sized as a draft), one judge comparison (the batch,
// the current skill, and two candidates: judgeCandidates adds the two
// candidates' text, an executor skill each), and a meta-review.
var (
	kindVariant     = callKind{Role: conditions.RolePlanner, Frame: 900, Inputs: 1500, Output: 1600, Reads: conditions.RoleExecutor}
	kindJudge       = callKind{Role: conditions.RoleJudge, Frame: 700, Inputs: 1500, Output: 80, Reads: conditions.RoleExecutor}
	judgeCandidates = callKind{Role: conditions.RoleJudge, Reads: conditions.RoleExecutor}
	kindMetaReview  = callKind{Role: conditions.RoleReflector, Frame: 500, Inputs: 1500, Output: 150, Reads: conditions.RolePlanner}
)

// approvalRate is the share of batches the Advisor approves (the offline
// Advisor's rate); only an approved batch holds a tournament.
const approvalRate = 2.0 / 3

// judgeCalls is how many comparisons a line's tournaments make over
// batches approved batches: each pairing holding a new candidate, in both
// orders. The first batch has n new candidates; each later one also meets
// the pool, which keeps the n - validate_top candidates not validated.
func judgeCalls(t config.Tournament, batches float64) float64 {
	if !t.Active() || batches <= 0 {
		return 0
	}
	n, pool := float64(t.Candidates()), float64(t.Candidates()-t.Top())
	return batches*n*(n-1) + max(batches-1, 0)*2*n*pool
}

// tournamentRequests adds what a row's tournaments and meta-reviews send
// over batches expected batches (approvalRate of them approved) and its
// remaining iterations (done already run): the extra drafts, the comparisons, and one meta-review
// every meta_review_interval iterations.
func tournamentRequests(tokens map[conditions.Role]roleTokens, m requestModel, r RowSpec, batches float64, iterations, done int) {
	t := m.cfg.Tournament
	batches *= approvalRate
	if t.Active() && batches > 0 {
		m.add(tokens, kindVariant, batches*float64(t.Candidates()-1))
		calls := judgeCalls(t, batches)
		m.add(tokens, kindJudge, calls)
		m.add(tokens, judgeCandidates, 2*calls)
	}
	if every := t.MetaReviewInterval; every > 0 && r.Condition.ProposalFeedback() != conditions.FeedbackNone {
		m.add(tokens, kindMetaReview, float64(max((done+iterations)/every-done/every, 0)))
	}
}

// tournamentNote says, in the dry run, what the tournament does to each
// approved batch.
func tournamentNote(cfg *config.Config) string {
	t := cfg.Tournament
	if !t.Active() {
		return ""
	}
	n := t.Candidates()
	return fmt.Sprintf("tournament: each approved batch yields %d candidates (%d judge calls for the first batch, more once the pool fills), and only the best %d of them are validated",
		n, n*(n-1), t.Top())
}
