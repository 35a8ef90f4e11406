// Package executor owns the trial contract and its runner, independent of
// any container engine: the Agent an experiment plugs in, the Backend and
// Sandbox interfaces a sandbox engine implements, the Runner that takes one
// trial from image to score, the verifier, reward modes and CTRF reports,
// the Trace every trial leaves, and the oracle and nop agents. It also names
// the cues the offline lab agent responds to, so offline roles can write
// them. Engines live in subpackages (executor/docker), and so does the LLM
// lab agent (executor/lab).
package executor
