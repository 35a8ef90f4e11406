// Package harness is the orchestrator of experiments. It turns options into
// a checked plan (BuildRunPlan, BuildMatrixPlan), and Execute carries a plan
// out: it creates the run or matrix directory through package rundir, builds
// one model client per role and the lab agents, and runs every row. A row
// runs its iterations; each iteration plans and runs one trial per task,
// gathers feedback, runs the evolution steps (Advisor batches, the
// validation gate, reflection), writes its metric rows and checkpoints.
//
// The sandbox backend and the model providers are handed in; this package
// never builds an engine (docs/architecture.md).
package harness
