// Package lab is the LLM Executor of the lab: a tool-calling agent that
// works on a task inside its trial's sandbox, alone or as a coordinator of
// subagents, with its container tools, its transcript, and the player that
// stands in for its model offline.
package lab
