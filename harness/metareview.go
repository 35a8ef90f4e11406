package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// maxCritiquesKept bounds the critiques a checkpoint carries to the next
// meta-review.
const maxCritiquesKept = 40

// metaReviewRecord is one line of history/meta_reviews.jsonl.
type metaReviewRecord struct {
	Iteration int       `json:"iteration"`
	Critiques int       `json:"critiques"`
	Note      string    `json:"note"`
	Outcome   string    `json:"outcome"` // noted | no_critiques | invalid | error
	Reason    string    `json:"reason,omitempty"`
	Time      time.Time `json:"time"`
}

// addCritique keeps one critique (a judge's reason, the Advisor's feedback,
// a rejection) for the next meta-review; nothing is kept when meta-reviews
// are off, so such a run's checkpoint does not change.
func (r *Run) addCritique(text string) {
	if r.Config.Tournament.MetaReviewInterval <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ts := r.tournamentState()
	ts.Critiques = append(ts.Critiques, text)
	if n := len(ts.Critiques) - maxCritiquesKept; n > 0 {
		ts.Critiques = ts.Critiques[n:]
	}
}

// metaNote is the latest meta-review note, empty when there is none.
func (r *Run) metaNote() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st.Tournament == nil {
		return ""
	}
	return r.st.Tournament.MetaNote
}

// metaReview has the Reflector summarise the critiques kept since the last
// meta-review into the note the Planner reads from the next iteration on,
// every meta_review_interval iterations. The call is budgeted like any
// other; a model that keeps failing leaves the last note in place.
func (r *Run) metaReview(ctx context.Context, it int) error {
	every := r.Config.Tournament.MetaReviewInterval
	if every <= 0 || it%every != 0 || r.visible(conditions.ConsumerMetaReview).Empty() {
		return nil
	}
	r.mu.Lock()
	critiques := append([]string(nil), r.tournamentState().Critiques...)
	r.mu.Unlock()
	planner, err := r.store.Read(conditions.RolePlanner)
	if err != nil {
		return err
	}
	rf := *r.reflector
	rf.Caller = rundir.MetaReviewCaller(it).String()
	rec := metaReviewRecord{Iteration: it, Critiques: len(critiques), Time: time.Now().UTC()}
	note, fellBack, err := rf.MetaReview(ctx, it, string(planner.Content), critiques)
	switch {
	case err != nil && r.stopsRun(ctx, err):
		return fmt.Errorf("meta-review after iteration %d: %w", it, err)
	case err != nil:
		rec.Outcome, rec.Reason = "error", "the Reflector's model failed: "+err.Error()
	case fellBack:
		rec.Outcome, rec.Reason = "invalid", "the Reflector's note was unusable twice"
	case len(critiques) == 0:
		rec.Outcome = "no_critiques"
	default:
		rec.Outcome, rec.Note = "noted", note
		r.mu.Lock()
		ts := r.tournamentState()
		ts.MetaNote, ts.Critiques = note, nil
		r.mu.Unlock()
	}
	if err := r.metaReviews().Append(rec); err != nil {
		return fmt.Errorf("record the meta-review of iteration %d: %w", it, err)
	}
	return nil
}
