package rundir

import "time"

// TournamentCandidate is one competitor of a tournament, as history/tournament.jsonl
// records it.
type TournamentCandidate struct {
	ID      string `json:"id"`
	BatchID string `json:"batch_id"`
	// Operator is how it was drafted (refine, combine, simplify, explore); Parents what
	// from: "skill:<hash>" for an executor skill, or a candidate id.
	Operator string   `json:"operator"`
	Parents  []string `json:"parents"`
	Hash     string   `json:"hash,omitempty"`
	// Pooled marks a candidate of an earlier batch that competed again.
	Pooled bool `json:"pooled,omitempty"`
	// EloStart is its rating when this tournament began; Elo when it ended.
	EloStart float64 `json:"elo_start"`
	Elo      float64 `json:"elo"`
	// Rank is its place by rating, from 1; 0 when it did not compete.
	Rank      int  `json:"rank,omitempty"`
	Validated bool `json:"validated"`
	// Accepted and Adopted say what the gate decided and whether the
	// candidate became the skill.
	Accepted bool `json:"accepted,omitempty"`
	Adopted  bool `json:"adopted,omitempty"`
	// Gain is the validated gain: the candidate arm's macro mean minus the
	// current skill's; nil when not validated or not measurable.
	Gain        *float64 `json:"gain,omitempty"`
	TrialsSpent int      `json:"trials_spent,omitempty"`
	Evidence    string   `json:"evidence,omitempty"`
	// Dropped says why a draft did not compete (unusable, invalid, a copy).
	Dropped string `json:"dropped,omitempty"`
	Content string `json:"content,omitempty"`
}

// TournamentMatch is one ordered comparison: the candidate shown first, the one
// shown second, and the winner's id (empty for a draw).
type TournamentMatch struct {
	First     string `json:"first"`
	Second    string `json:"second"`
	Winner    string `json:"winner"`
	Reasoning string `json:"reasoning,omitempty"`
	FellBack  bool   `json:"fell_back,omitempty"`
}

// TournamentRecord is one line of history/tournament.jsonl.
type TournamentRecord struct {
	BatchID     string                `json:"batch_id"`
	Student     string                `json:"student,omitempty"`
	Iteration   int                   `json:"iteration"`
	ValidateTop int                   `json:"validate_top"`
	EloK        float64               `json:"elo_k"`
	EloInitial  float64               `json:"elo_initial"`
	Candidates  []TournamentCandidate `json:"candidates"`
	Matches     []TournamentMatch     `json:"matches"`
	// TrialsSpent are the validation trials of this tournament;
	// TrialsSaved estimates those validating every competitor would have
	// added: the competitors not validated, times the mean spent per
	// validated one.
	TrialsSpent int       `json:"trials_spent"`
	TrialsSaved float64   `json:"trials_saved"`
	Time        time.Time `json:"time"`
}
