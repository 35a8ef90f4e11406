package rundir

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// Kind says whether a directory holds one run or a matrix of runs.
type Kind string

// Kinds of run directory.
const (
	KindRun    Kind = "run"
	KindMatrix Kind = "matrix"
)

// Status is how far a run or matrix got (run.json "status"). A run's result
// uses the same words, so the two are one type.
type Status string

// Manifest statuses.
const (
	StatusRunning     Status = "running"
	StatusCompleted   Status = "completed"
	StatusFailed      Status = "failed"
	StatusInterrupted Status = "interrupted"
	// StatusBudgetExhausted marks a run or matrix stopped by a budget.
	StatusBudgetExhausted Status = "budget_exhausted"
)

// Files at the top of a run or matrix directory.
const (
	ManifestFile   = "run.json"
	ConfigFile     = "config.toml"
	MatrixPlanFile = "matrix.toml"
	// StateFile is a run's checkpoint; see State.
	StateFile = "state.json"
	// SpendJournalFile holds the spend of each trial since the last
	// checkpoint, one appended record per save; see SpendRecord.
	SpendJournalFile = "spend.jsonl"
	// LockFile is held (flock) by the one process working in the
	// directory, and names it; see Dir.Lock.
	LockFile = "harness.lock"
)

// DefaultRoot is where run and matrix directories go unless told otherwise.
const DefaultRoot = "data/experiments"

// DirTimeFormat is the UTC timestamp that starts a run directory's name.
const DirTimeFormat = "20060102T150405Z"

// Folders of a run directory, relative to it; docs/outputs.md describes
// each. A matrix directory holds row directories instead.
const (
	MetricsDir    = "metrics"
	ReportsDir    = "artifacts/reports"
	TracesDir     = "artifacts/traces"
	ValidationDir = "artifacts/validation"
	HistoryDir    = "history"
	JobsDir       = "jobs"
	SkillsDir     = "skills"
	// SnapshotsDir keeps every skill version a run used, by role and hash.
	SnapshotsDir = "skills_snapshots"
	// StudentsDir holds, per student with a skill of its own, its skills
	// tree and snapshots (see StudentSkillsDir).
	StudentsDir = "students"
	// NotesDir is where people drop notes for a running run.
	NotesDir = "notes"
)

// ReportOutputDir is where `harness report` writes inside the directory it
// reports on, unless told otherwise.
const ReportOutputDir = "report"

// runLayout lists the directories every run (one row) starts with.
var runLayout = []string{
	MetricsDir,
	ReportsDir,
	TracesDir,
	ValidationDir,
	HistoryDir,
	JobsDir,
	SkillsDir,
	SnapshotsDir,
	NotesDir,
}

// The append-only files of a run, relative to its directory.
const (
	HistoryFile      = "history/history.jsonl"
	RejectedFile     = "history/rejected_proposals.jsonl"
	SkillUpdatesFile = "history/skill_updates.jsonl"
	ReflectionsFile  = "history/reflections.jsonl"
	// TournamentFile keeps one record per batch whose candidates competed.
	TournamentFile = "history/tournament.jsonl"
	// MetaReviewsFile keeps every meta-review note for the Planner.
	MetaReviewsFile = "history/meta_reviews.jsonl"
	// CallsFile keeps every model call of the run, one CallRecord per
	// line. Unlike the history it is never cut back on resume: a call
	// made in an iteration that is redone was still made.
	CallsFile = "history/calls.jsonl"
)

// MetricsPartExt ends the name of every metrics part.
const MetricsPartExt = ".parquet"

// MetricsPartPattern matches the names MetricsPartName gives (filepath.Match).
const MetricsPartPattern = "part-*" + MetricsPartExt

const metricsPartFormat = "part-%05d" + MetricsPartExt

// MetricsPartName is the file, in MetricsDir, holding one iteration's rows.
// Re-running an iteration after a crash rewrites the same name, so a run
// never holds two parts for one iteration.
func MetricsPartName(iteration int) string {
	return fmt.Sprintf(metricsPartFormat, iteration)
}

// ParseMetricsPart reads the iteration back from a part's base name.
func ParseMetricsPart(name string) (iteration int, ok bool) {
	_, err := fmt.Sscanf(name, metricsPartFormat, &iteration)
	return iteration, err == nil
}

// UpdatesDir, inside MetricsDir, holds the updates table: one row per
// committed skill update, in one file per iteration that committed any.
const UpdatesDir = "updates"

// UpdatesPartExt ends the name of an updates part. It is not
// MetricsPartExt, so that no glob of metric parts, however deep
// (read_parquet('<matrix>/**/*.parquet')), mixes the updates table, whose
// schema differs, into the metric rows; Parquet readers read a file of
// any name.
const UpdatesPartExt = ".pq"

// UpdatesPartPattern matches the names UpdatesPartName gives.
const UpdatesPartPattern = "updates-*" + UpdatesPartExt

// OldUpdatesPartPattern matches updates parts written before they had
// their own extension; readers still read them.
const OldUpdatesPartPattern = "updates-*" + MetricsPartExt

const (
	updatesPartFormat    = "updates-%05d" + UpdatesPartExt
	oldUpdatesPartFormat = "updates-%05d" + MetricsPartExt
)

// UpdatesPartName is the file, in MetricsDir/UpdatesDir, holding the skill
// updates committed in one iteration.
func UpdatesPartName(iteration int) string { return fmt.Sprintf(updatesPartFormat, iteration) }

// ParseUpdatesPart reads the iteration back from an updates part's name
// (either extension).
func ParseUpdatesPart(name string) (iteration int, ok bool) {
	for _, format := range []string{updatesPartFormat, oldUpdatesPartFormat} {
		var it int
		if n, err := fmt.Sscanf(name, format, &it); err == nil && n == 1 && fmt.Sprintf(format, it) == name {
			return it, true
		}
	}
	return 0, false
}

// RunID is the run id of a run's metric rows, unique across matrices: the
// run directory's name, qualified by the matrix for a matrix row (row
// directories repeat their names from one matrix to the next).
func RunID(matrixID, dirName string) string {
	if matrixID == "" {
		return dirName
	}
	return matrixID + "/" + dirName
}

// EvalPartPattern matches the names EvalPartName gives.
const EvalPartPattern = "eval-*" + MetricsPartExt

const evalPartFormat = "eval-c%05d" + MetricsPartExt

// EvalPartName is the file, in MetricsDir, holding the held-out evaluation
// rows of the skills a row held after an iteration (0: its initial skills).
// It is written whole once the checkpoint's trials are done, so its
// presence says the checkpoint is evaluated.
func EvalPartName(checkpoint int) string { return fmt.Sprintf(evalPartFormat, checkpoint) }

// ParseEvalPart reads the checkpoint back from an evaluation part's name.
func ParseEvalPart(name string) (checkpoint int, ok bool) {
	_, err := fmt.Sscanf(name, evalPartFormat, &checkpoint)
	return checkpoint, err == nil
}

// EvalTrialID names one evaluation trial: "e0030-k02-<task>" is the second
// trial of task with the skills held after iteration 30.
func EvalTrialID(checkpoint, k int, task string) string {
	return fmt.Sprintf("e%04d-k%02d-%s", checkpoint, k, task)
}

// EvalJobDir is the working directory of one evaluation trial, relative to
// the run directory; its trace is kept there as trace.json.
func EvalJobDir(checkpoint, k int, task string) string {
	return filepath.Join(JobsDir, "eval", "c"+iterationName(checkpoint), task, fmt.Sprintf("k%02d", k))
}

// iterationName is how an iteration appears in a file or folder name.
func iterationName(iteration int) string { return fmt.Sprintf("%04d", iteration) }

// StudentTrialKey is the task segment of the paths of one student's trial
// (TracePath, ReportPath, JobDir) when several students attempt the task in
// one iteration ([labs.<name>] assignment = "all"): "<task>@<student>", so
// the trials of one task in one iteration never share a file. A task
// attempted once in an iteration keeps the task id alone.
func StudentTrialKey(task, student string) string { return task + "@" + student }

// TracePath is where the trace of a training trial is kept, relative to
// the run directory; key is its task, or its StudentTrialKey.
func TracePath(key string, iteration int) string {
	return filepath.Join(TracesDir, key, iterationName(iteration)+".json")
}

// ReportPath is where the Mediator's report on a training trial is kept,
// relative to the run directory; key as for TracePath.
func ReportPath(key string, iteration int) string {
	return filepath.Join(ReportsDir, key, iterationName(iteration)+".json")
}

// JobDir is the working directory of a training trial, relative to the
// run directory; key as for TracePath.
func JobDir(key string, iteration int) string {
	return filepath.Join(JobsDir, key, iterationName(iteration))
}

// StudentSkillsDir is the skills tree of a student with its own executor
// skill, relative to the run directory.
func StudentSkillsDir(student string) string {
	return filepath.Join(StudentsDir, student, SkillsDir)
}

// StudentSnapshotsDir keeps every version of a student's own executor
// skill, as SnapshotsDir does the lab's, relative to the run directory.
func StudentSnapshotsDir(student string) string {
	return filepath.Join(StudentsDir, student, SnapshotsDir)
}

// ValidationBatchDir holds the evidence of one batch's validation, relative
// to the run directory.
func ValidationBatchDir(batchID string) string {
	return filepath.Join(ValidationDir, batchID)
}

// DecisionFile, in a ValidationBatchDir, records the gate's decision.
const DecisionFile = "decision.json"

// ValidationTrialDir is the working directory of one validation trial,
// relative to its ValidationBatchDir.
func ValidationTrialDir(arm, task string, index int) string {
	return filepath.Join(arm, task, "k"+strconv.Itoa(index))
}

// NotePath is a note's file, relative to the run directory.
func NotePath(name string) string {
	return filepath.Join(NotesDir, name)
}

// The files of a matrix whose rows ran as the elements of Slurm job arrays
// (harness/launch), relative to the matrix directory. The folder's name
// can never be a row's: row names start with a letter or digit.
const (
	SlurmDir = "_slurm"
	// SlurmJobsFile records every job array submitted for the matrix, one
	// JSON object per line: job id, time, script and each element's index
	// and row.
	SlurmJobsFile = "_slurm/jobs.jsonl"
	// SlurmOutputPattern is where each element's output goes, as sbatch
	// --output takes it (%A the job id, %a the element's index).
	SlurmOutputPattern = "_slurm/%A_%a.out"
)

// SlurmScript is the batch script of the matrix's n-th submission (from 1).
func SlurmScript(n int) string { return filepath.Join(SlurmDir, fmt.Sprintf("array-%02d.sh", n)) }

// SlurmOutput is the output file of one element of job array jobID.
func SlurmOutput(jobID string, index int) string {
	return filepath.Join(SlurmDir, fmt.Sprintf("%s_%d.out", jobID, index))
}

// NetworkDir, in a network experiment's directory (a matrix directory
// whose run.json has a network record), holds the items its labs
// exchanged, per treatment and seed (NetworkGroup): each lab's outbox, one
// file per barrier, and its inbox ledger of the ids it took in.
const NetworkDir = "network"

// NetworkGroup names the labs of one treatment and seed, which exchange
// items with each other only.
func NetworkGroup(diffusion string, seed int64) string {
	return fmt.Sprintf("%s-seed%d", diffusion, seed)
}

// NetworkOutbox is the file of what lab sent at the barrier after
// iteration it, relative to the experiment directory.
func NetworkOutbox(group, lab string, it int) string {
	return filepath.Join(NetworkDir, group, "outbox", lab, "i"+iterationName(it)+".json")
}

// NetworkInbox is the ledger of the item ids lab took in at the barrier
// after iteration it, relative to the experiment directory.
func NetworkInbox(group, lab string, it int) string {
	return filepath.Join(NetworkDir, group, "inbox", lab, "i"+iterationName(it)+".json")
}
