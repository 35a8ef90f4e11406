package mediator

// Size caps on what a prompt may carry from tasks and history. Task text is
// written by outside authors and agents, so nothing reaches a model uncapped.
const (
	maxExcerptChars  = 4000 // one verifier or agent excerpt, one plan
	maxErrorChars    = 500  // one error line
	maxErrors        = 10
	maxFailedTests   = 20
	maxSkillChars    = 40000 // a SKILL.md shown for review or rewriting (skills cap at 32 KiB)
	maxProposalChars = 2000  // one side (old or new) of a proposal, its reasoning
	maxEntryChars    = 3000  // one history entry in a contrastive pair
	maxDigestChars   = 3000  // the feedback one proposal was made from, as the Advisor sees it
	maxLaterRewards  = 10    // the most recent rewards of a proposal's task the Advisor sees
	maxPairLineChars = 400   // one pair in the one-line form the offline Reflector reads
)

// maxTranscriptChars caps a condensed transcript when the Mediator is given
// no budget of its own.
const maxTranscriptChars = 20000
