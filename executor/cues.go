package executor

// The offline lab agent stands in for a model without network or key. It
// responds to a few fixed texts in its skill and plan, so that offline runs
// show skills and plans changing outcomes end to end. Offline roles that
// write skills and plans use the same texts.

// DiligenceAdvice is the executor advice line that makes the offline agent
// always create the output files a task names. It heads the offline
// Planner's list of advice, so adopting it is the one skill edit whose
// effect is visible in offline rewards.
const DiligenceAdvice = "- Before you submit, create every output file the instruction names, even if your answer is incomplete."

// ExecutorAdviceLines returns the offline Planner's fixed list of generic
// executor advice, DiligenceAdvice first.
func ExecutorAdviceLines() []string {
	return []string{
		DiligenceAdvice,
		"- List the working directory and read the input files the instruction mentions before changing anything.",
		"- Run the program or script you wrote at least once and read its output before you submit.",
		"- Match the output format the instruction asks for exactly: file names, paths, separators and trailing newlines.",
		"- When a command fails, read its error message and fix the cause instead of repeating the command.",
		"- Keep each command short and give long-running commands an explicit timeout.",
	}
}

// OutputsFirstStep is the step the offline Planner puts first when the prior
// context it was shown reports a missing output (a failed "exists" test, a
// file not found); the offline agent follows it. Feedback thus changes
// offline outcomes end to end (prior context, plan, behaviour, reward), so
// the conditions of an offline matrix exercise that whole path.
const OutputsFirstStep = "0. An earlier attempt left an output missing: create every output file the instruction names first, then fill it in."
