package executor

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/internal/tartree"
)

// Paths of the verifier inside the sandbox.
const (
	TestsDir       = "/tests"
	VerifierLogDir = "/logs/verifier"
)

const (
	maxRewardFile   = 64 << 10
	maxCTRFFile     = 32 << 20
	maxVerifierLogs = 256 << 20
	// FileOpTimeout bounds the verifier's small preparing command.
	FileOpTimeout = 60 * time.Second
)

// verifyScript runs test.sh with its output both captured and kept in the
// verifier's log directory, as Harbor does.
const verifyScript = `set -o pipefail
bash /tests/test.sh 2>&1 | tee /logs/verifier/test-stdout.txt`

// stopProcessesScript defines harness_stop_processes, which kills every
// process in the sandbox but its init (pid 1), the keep-alive (the child of
// pid 1 that started first, by start time, not by pid: pids wrap around, and
// a process with a lower pid is not older) and the calling shell and its
// parent (the exec's timeout). Run as root before test.sh, it stops what
// the agent left running, such as a loop that rewrites the reward files. It
// goes by the process tree, not by the exec marker: a process can drop its
// environment, and root cannot read another user's. Builtins only, so it
// starts no process of its own.
//
// Passes first freeze (SIGSTOP) every process no earlier pass froze, while
// they find new ones: a frozen process cannot fork, and unlike a killed one
// it keeps its process slot, so a fork bomb cannot refill the slots the
// passes free. Then every frozen process is killed, and a last pass checks
// that nothing else is left (a process that forked between the last pass
// and the kill); if anything is, it fails, and so does a bomb that outruns
// 50 passes.
const stopProcessesScript = `harness_stop_processes() {
  keep= kst=
  for d in /proc/[0-9]*; do
    read -r s 2>/dev/null < "$d/stat" || continue
    set -- ${s##*) }
    p=${d#/proc/}
    [ "$2" = 1 ] || continue
    if [ -z "$keep" ] || [ "${20}" -lt "$kst" ] || { [ "${20}" = "$kst" ] && [ "$p" -lt "$keep" ]; }; then keep=$p kst=${20}; fi
  done
  frozen=' '
  n=0 hit=1
  while [ -n "$hit" ] && [ $n -lt 50 ]; do
    n=$((n + 1))
    hit=
    for d in /proc/[0-9]*; do
      p=${d#/proc/}
      case $p in 1|$$|$PPID|$keep) continue ;; esac
      case $frozen in *" $p "*) continue ;; esac
      read -r s 2>/dev/null < "$d/stat" || continue
      set -- ${s##*) }
      case $1 in Z|X|x) continue ;; esac
      if kill -STOP "$p" 2>/dev/null; then hit=1; frozen="$frozen$p "; fi
    done
  done
  for p in $frozen; do kill -9 "$p" 2>/dev/null; done
  if [ -n "$hit" ]; then
    echo "harness: the agent's processes kept starting new ones" >&2
    return 1
  fi
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case $p in 1|$$|$PPID|$keep) continue ;; esac
    case $frozen in *" $p "*) continue ;; esac
    read -r s 2>/dev/null < "$d/stat" || continue
    set -- ${s##*) }
    case $1 in Z|X|x) continue ;; esac
    echo "harness: process $p started while the agent's processes were stopped" >&2
    return 1
  done
  return 0
}
`

// resetScript resets the verifier's directories.
const resetScript = "rm -rf -- " + TestsDir + " " + VerifierLogDir +
	" && mkdir -p -- " + TestsDir + " " + VerifierLogDir + " && chmod 0777 " + VerifierLogDir

// streamedResetScript is resetScript for the streamed verifier, in fewer
// processes (each costs the most on a busy engine and a FUSE file system):
// rm runs only when something is in the way, and both directories, the
// log directory with its mode, come from the tar stream itself.
const streamedResetScript = "{ [ ! -e " + TestsDir + " ] && [ ! -L " + TestsDir + " ] && [ ! -e " + VerifierLogDir + " ] && [ ! -L " + VerifierLogDir + " ]; } || " +
	"rm -rf -- " + TestsDir + " " + VerifierLogDir

// keepProcessesScript stands in for stopProcessesScript when the
// configuration keeps the agent's processes running for the verifier.
const keepProcessesScript = "harness_stop_processes() { :; }\n"

// processesScript defines harness_stop_processes as opts asks.
func processesScript(opts VerifyOptions) string {
	if opts.KeepAgentProcesses || opts.stoppedOutside {
		return keepProcessesScript
	}
	return stopProcessesScript
}

// prepareScript stops the agent's processes (unless kept) and resets the
// verifier's directories; it must run as root.
func prepareScript(opts VerifyOptions) string {
	return processesScript(opts) + "harness_stop_processes && " + resetScript
}

// prepareFailed, followed by a random token of the run, marks on stderr a
// failure to reset the verifier's directories when that happens in the
// same exec as test.sh; the exec then exits with prepareFailedCode. The
// token alone is not proof, as test.sh's programs can read the script.
const (
	prepareFailed     = "harness: could not prepare the verifier directories"
	prepareFailedCode = "97"
)

func randomHex() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("%x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}

// VerifyOptions configure one verifier run.
type VerifyOptions struct {
	// Timeout bounds test.sh (required).
	Timeout time.Duration
	// LogDir is the host directory that receives a copy of /logs/verifier.
	// Its previous contents are removed first, so stale reward files from an
	// earlier attempt can never be read.
	LogDir string
	// OutputCap caps the captured output of test.sh (<= 0: DefaultOutputCap).
	OutputCap int
	// KeepAgentProcesses leaves what the agent started running while the
	// verifier runs (for tasks whose tests check a service the agent left
	// up); by default they are stopped first, so none can touch the
	// verifier's files.
	KeepAgentProcesses bool
	// stoppedOutside records that the sandbox stopped every process from
	// outside (ProcessStopper), so no command inside needs to.
	stoppedOutside bool
}

// VerifierResult is what the verifier produced. Err is set whenever there is
// no valid reward; Rewards and Tests may still be filled for the record.
type VerifierResult struct {
	// Reward is the verifier's main reward, valid only when Err is nil.
	Reward  float64
	Rewards map[string]float64
	Tests   Tests
	// HaveTests reports that a CTRF report was found and parsed.
	HaveTests bool
	Output    string
	// Stream is how much test.sh wrote and how much of it Output keeps.
	Stream   Stream
	ExitCode int
	TimedOut bool
	Duration time.Duration
	// Notes are problems that did not cost the reward (an unreadable CTRF
	// report, logs too large to copy).
	Notes []string
	Err   error
}

// RunVerifier scores the sandbox's state: it clears /tests and
// /logs/verifier (the agent may have planted files there), copies the task's
// tests/ to /tests, runs /tests/test.sh with the verifier environment and
// opts.Timeout, copies /logs/verifier to opts.LogDir and parses the reward
// strictly and the CTRF report leniently. test.sh's exit code never decides
// the reward.
func RunVerifier(ctx context.Context, sb Sandbox, task *benchmarks.Task, opts VerifyOptions) VerifierResult {
	start := time.Now()
	r := verify(ctx, sb, task, opts)
	r.Duration = time.Since(start)
	return r
}

func verify(ctx context.Context, sb Sandbox, task *benchmarks.Task, opts VerifyOptions) (r VerifierResult) {
	testsDir, err := prepareVerify(task, opts)
	if err != nil {
		r.Err = err
		return r
	}
	res, skipped, copyErr, err := runVerifierExec(ctx, sb, task, testsDir, opts)
	r.Output, r.ExitCode, r.TimedOut = res.Stdout+res.Stderr, res.ExitCode, res.TimedOut
	// The streamed verifier's stdout carried the logs; its result holds
	// test.sh's output as read from them.
	produced := res.StderrBytes + res.StdoutBytes
	r.Stream = Stream{Name: "verifier", Produced: max(produced, int64(len(r.Output))), Kept: int64(len(r.Output))}
	if err != nil {
		r.Err = err
		return r
	}
	return readVerdict(r, opts, skipped, copyErr)
}

// prepareVerify checks opts and the task's tests and empties the host's log
// directory; it returns the task's tests directory.
func prepareVerify(task *benchmarks.Task, opts VerifyOptions) (string, error) {
	if opts.Timeout <= 0 {
		return "", errors.New("verifier timeout is not set")
	}
	if opts.LogDir == "" {
		return "", errors.New("verifier log directory is not set")
	}
	testsDir := filepath.Join(task.Dir, "tests")
	if _, err := os.Stat(filepath.Join(testsDir, "test.sh")); err != nil {
		return "", fmt.Errorf("task %s has no tests/test.sh: %w", task.ID, err)
	}
	if err := os.RemoveAll(opts.LogDir); err != nil {
		return "", fmt.Errorf("clear %s: %w", opts.LogDir, err)
	}
	if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", opts.LogDir, err)
	}
	return testsDir, nil
}

// stopInsideWithin bounds the first, cheap attempt to stop the agent's
// processes from inside the sandbox before the sandbox is asked to stop
// them from outside.
const stopInsideWithin = 15 * time.Second

// runVerifierExec stops the agent's processes (unless kept), puts the tests
// in place, runs test.sh and brings the logs out.
//
// A root test.sh gets one exec that does it all, stopping the agent's
// processes itself, which costs far less than the sandbox stopping them
// from outside (a container's restart). When that exec cannot get as far
// as test.sh (a fork bomb holds every process slot, or the processes kept
// forking), a sandbox that can (ProcessStopper) stops them from outside and
// the exec runs again. Another user's test.sh cannot stop root's
// processes: the sandbox stops them from outside first when it can.
func runVerifierExec(ctx context.Context, sb Sandbox, task *benchmarks.Task, testsDir string, opts VerifyOptions) (res ExecResult, skipped []string, copyErr error, err error) {
	user, asRoot := testUser(sb, task)
	stopper, canStop := sb.(ProcessStopper)
	canStop = canStop && !opts.KeepAgentProcesses
	stopOutside := func() error {
		if err := stopper.StopProcesses(ctx); err != nil {
			return fmt.Errorf("stop the agent's processes before the verifier: %w", err)
		}
		opts.stoppedOutside = true
		return nil
	}
	if asRoot {
		within := time.Duration(0)
		if canStop {
			within = stopInsideWithin
		}
		run := verifyStreamed(ctx, sb, task, testsDir, user, opts, within)
		if canStop && run.done && !run.started && ctx.Err() == nil {
			if err := stopOutside(); err != nil {
				return run.res, nil, nil, err
			}
			run = verifyStreamed(ctx, sb, task, testsDir, user, opts, 0)
		}
		if run.done {
			return run.res, run.skipped, run.copyErr, run.err
		}
	} else if canStop {
		if err := stopOutside(); err != nil {
			return res, nil, nil, err
		}
	}
	res, err = runTests(ctx, sb, task, testsDir, user, asRoot, opts)
	if err == nil {
		// Copy the logs out even after a timeout: they show where it hung.
		skipped, copyErr = copyLogsOut(ctx, sb, opts.LogDir)
	}
	return res, skipped, copyErr, err
}

// readVerdict reads the reward and the test report that test.sh left in
// the host's copy of its logs into r.
func readVerdict(r VerifierResult, opts VerifyOptions, skipped []string, copyErr error) VerifierResult {
	for _, s := range skipped {
		r.Notes = append(r.Notes, "verifier log not copied (over the size limit): "+s)
	}

	if data, ok, err := readCapped(filepath.Join(opts.LogDir, "ctrf.json"), maxCTRFFile); err != nil {
		r.Notes = append(r.Notes, err.Error())
	} else if ok {
		if t, err := ParseCTRF(data); err != nil {
			r.Notes = append(r.Notes, err.Error())
		} else {
			t.Reported = true
			r.Tests, r.HaveTests = t, true
		}
	}

	switch {
	case r.TimedOut:
		r.Err = fmt.Errorf("tests/test.sh did not finish within %s (verifier timeout)", opts.Timeout.Round(time.Second))
		return r
	case copyErr != nil:
		r.Err = fmt.Errorf("copy %s out: %w", VerifierLogDir, copyErr)
		return r
	}
	txt, haveTxt, err := readCapped(filepath.Join(opts.LogDir, "reward.txt"), maxRewardFile)
	if err != nil {
		r.Err = err
		return r
	}
	js, haveJSON, err := readCapped(filepath.Join(opts.LogDir, "reward.json"), maxRewardFile)
	if err != nil {
		r.Err = err
		return r
	}
	r.Reward, r.Rewards, r.Err = ParseReward(txt, js, haveTxt, haveJSON)
	return r
}

// testUser is the user test.sh runs as ("" for the image's default) and
// whether that is root: [verifier] user when the task sets one, else the
// image's default user as far as the sandbox knows it. Only a root test.sh
// may share its exec with the reset of the verifier's directories.
func testUser(sb Sandbox, task *benchmarks.Task) (user string, root bool) {
	if user = task.Config.Verifier.User; user != "" {
		return user, IsRootUser(user)
	}
	rooted, ok := sb.(interface{ DefaultUserIsRoot() bool })
	return "", ok && rooted.DefaultUserIsRoot()
}

// IsRootUser reports whether a user spec (name or uid, with an optional
// group) names root.
func IsRootUser(user string) bool {
	switch user {
	case "", "root", "0", "0:0", "root:root", "root:0", "0:root":
		return true
	}
	return false
}

// runTests puts the tests in place and runs test.sh as user with its output
// captured, leaving the logs in the sandbox for copyLogsOut. asRoot says
// test.sh runs as root.
func runTests(ctx context.Context, sb Sandbox, task *benchmarks.Task, testsDir, user string, asRoot bool, opts VerifyOptions) (ExecResult, error) {
	script, token := verifyScript, ""
	if asRoot {
		// test.sh runs as root anyway: the tests go to a fresh directory
		// whose name the agent cannot know, and one exec resets the
		// verifier's directories, moves them into place and runs test.sh.
		staging := "/.harness-tests-" + randomHex()
		if err := sb.CopyDirIn(ctx, testsDir, staging); err != nil {
			return ExecResult{}, fmt.Errorf("copy tests in: %w", err)
		}
		token = randomHex()
		script = "{ " + prepareScript(opts) + " && rmdir -- " + TestsDir + " && mv -- " + staging + " " + TestsDir +
			"; } || { echo '" + prepareFailed + " " + token + "' >&2; exit " + prepareFailedCode + "; }\n" + verifyScript
	} else {
		// As root, since the agent may have left files only root can
		// remove; the log directory is then opened to whatever user test.sh
		// runs as.
		prep, err := sb.Exec(ctx, ExecRequest{
			Cmd:     []string{"sh", "-c", prepareScript(opts)},
			Timeout: FileOpTimeout,
			User:    "0",
		})
		if err == nil && (prep.ExitCode != 0 || prep.TimedOut) {
			err = fmt.Errorf("exit code %d: %s", prep.ExitCode, Clip(strings.TrimSpace(prep.Stderr), 300))
		}
		if err != nil {
			return ExecResult{}, fmt.Errorf("prepare %s and %s: %w", TestsDir, VerifierLogDir, err)
		}
		if err := sb.CopyDirIn(ctx, testsDir, TestsDir); err != nil {
			return ExecResult{}, fmt.Errorf("copy tests in: %w", err)
		}
	}
	res, err := sb.Exec(ctx, ExecRequest{
		Cmd:       []string{"bash", "-c", script},
		Env:       EnvList(task.Config.Verifier.Env),
		Timeout:   opts.Timeout,
		OutputCap: opts.OutputCap,
		User:      user,
	})
	if err != nil {
		return res, fmt.Errorf("run tests/test.sh: %w", err)
	}
	if token == "" {
		return res, nil
	}
	return res, prepareFailure(res, token)
}

// prepareFailure is the error of a verifier exec whose reset of the
// verifier's directories failed, as its script reports with the run's
// token on stderr and its exit code; else nil.
func prepareFailure(res ExecResult, token string) error {
	if strconv.Itoa(res.ExitCode) != prepareFailedCode || !strings.Contains(res.Stderr, prepareFailed+" "+token) {
		return nil
	}
	return fmt.Errorf("prepare %s and %s: exit code %d: %s", TestsDir, VerifierLogDir, res.ExitCode, Clip(strings.TrimSpace(res.Stderr), 300))
}

// Markers of the streamed verifier script.
const (
	noTarMarker    = "harness: no tar in the image"
	noTarCode      = "98"
	testExitMarker = "harness: test.sh exit "
	// testsStartMarker is the streamed script's first line on stdout: the
	// agent's processes are stopped and the tests are in place.
	testsStartMarker = "harness: test.sh starts"
)

// streamedScript stops the agent's processes (first, so that none is left
// when an image without tar sends the caller to the copying path), resets
// the verifier's directories, unpacks the tests and the log directory from
// stdin (verifierInput, at /), runs test.sh under its own time limit
// (%[1]d seconds; its output goes to test-stdout.txt, which the logs bring
// back, rather than through a pipe and tee: two processes fewer) and then
// writes to stdout one line with test.sh's exit code followed by
// /logs/verifier as a tar. Before test.sh it writes a line
// that says it got that far. The line comes first on stdout
// because stderr is capped and could lose it. %[2]s is the run's token for
// the prepare failure marker. processesScript defines
// harness_stop_processes before it.
const streamedScript = `harness_stop_processes || { echo '` + prepareFailed + ` %[2]s' >&2; exit ` + prepareFailedCode + `; }
command -v tar >/dev/null 2>&1 || { echo '` + noTarMarker + `' >&2; exit ` + noTarCode + `; }
{ ` + streamedResetScript + ` && tar -x -f - -C /; } || { echo '` + prepareFailed + ` %[2]s' >&2; exit ` + prepareFailedCode + `; }
echo "` + testsStartMarker + `"
timeout -k 5 %[1]d bash /tests/test.sh </dev/null >/logs/verifier/test-stdout.txt 2>&1
echo "` + testExitMarker + `$?"
tar -c -f - -C /logs verifier`

// streamedLogs reads what streamedScript writes to stdout: the exit line,
// then the logs, unpacked into dir.
type streamedLogs struct {
	started  bool // the agent's processes were stopped and test.sh was about to start
	exitCode int
	finished bool // the exit line arrived: test.sh ended within its limit or was stopped by it
	skipped  []string
	err      error
}

// readStreamedLogs reads the streamed script's stdout into l and dir; it
// calls started (unless nil) when the line before test.sh arrives.
func readStreamedLogs(r io.Reader, dir string, started func()) (l streamedLogs) {
	br := bufio.NewReader(r)
	defer io.Copy(io.Discard, br) // the tar's end padding, or what a failed read left
	line, err := br.ReadString('\n')
	if err == nil && strings.TrimSpace(line) == testsStartMarker {
		l.started = true
		if started != nil {
			started()
		}
		line, err = br.ReadString('\n')
	}
	code, ok := strings.CutPrefix(strings.TrimSpace(line), testExitMarker)
	if err != nil || !ok {
		l.err = errors.New("the verifier ended before test.sh did")
		return l
	}
	l.finished = true
	if l.exitCode, err = strconv.Atoi(code); err != nil {
		l.exitCode = -1
	}
	l.skipped, l.err = extractTar(br, dir, maxVerifierLogs)
	return l
}

// streamedRun is what one streamed verifier exec gave.
type streamedRun struct {
	res     ExecResult
	skipped []string
	copyErr error
	// done is false, with nothing changed, when the image has no tar; the
	// caller then takes the copying path.
	done bool
	// started: the agent's processes were stopped and the tests in place.
	started bool
	err     error
}

// verifyStreamed runs the verifier in one exec as user, who is root: the
// tests go in on stdin and the logs come out on stdout, each as a tar, which
// saves the two copy round trips of the engine's archive API. With
// startWithin > 0 the exec is given up when it has not stopped the agent's
// processes and unpacked the tests by then.
func verifyStreamed(ctx context.Context, sb Sandbox, task *benchmarks.Task, testsDir, user string, opts VerifyOptions, startWithin time.Duration) (run streamedRun) {
	secs := WholeSeconds(opts.Timeout)
	limit := time.Duration(secs) * time.Second
	in, inW := io.Pipe()
	go func() { inW.CloseWithError(verifierInput(inW, testsDir)) }()
	defer in.CloseWithError(errors.New("verifier exec ended"))
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := make(chan struct{})
	if startWithin > 0 {
		go func() {
			select {
			case <-started:
			case <-time.After(startWithin):
				cancel()
			case <-ectx.Done():
			}
		}()
	}
	out, outW := io.Pipe()
	logs := make(chan streamedLogs, 1)
	go func() { logs <- readStreamedLogs(out, opts.LogDir, func() { close(started) }) }()
	token := randomHex()
	res, err := sb.Exec(ectx, ExecRequest{
		Cmd:     []string{"bash", "-c", processesScript(opts) + fmt.Sprintf(streamedScript, secs, token)},
		Env:     EnvList(task.Config.Verifier.Env),
		Stdin:   in,
		Stdout:  outW,
		Timeout: limit + streamMargin, // room for the tars around test.sh's own limit
		// test.sh's output arrives on stderr.
		OutputCap: opts.OutputCap,
		User:      user,
	})
	outW.Close()
	l := <-logs
	// What test.sh wrote comes back in its log file; the exec's stdout
	// carried the logs' tar.
	res.Stdout, res.StdoutBytes = testOutput(opts.LogDir, opts.OutputCap)
	run = streamedRun{res: res, skipped: l.skipped, copyErr: l.err, done: true, started: l.started}
	if err != nil {
		run.err = fmt.Errorf("run tests/test.sh: %w", err)
		return run
	}
	run.res, run.err = streamedOutcome(res, l, token, limit)
	if !l.finished {
		run.skipped, run.copyErr = nil, nil
		if run.err == nil && run.res.TimedOut {
			run.copyErr = l.err
		}
		run.done = !(strconv.Itoa(res.ExitCode) == noTarCode && strings.Contains(res.Stderr, noTarMarker))
	}
	return run
}

// verifierInput is the streamed verifier's stdin: the log directory
// (mode 0777, so that test.sh may write there as any user) and the tests,
// as a tar to unpack at /.
func verifierInput(w io.Writer, testsDir string) error {
	tw := tar.NewWriter(w)
	hdr := &tar.Header{Name: strings.TrimPrefix(VerifierLogDir, "/") + "/", Typeflag: tar.TypeDir, Mode: 0o777,
		ModTime: time.Now(), Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if err := tw.Flush(); err != nil { // the tests' entries follow in the same archive
		return err
	}
	return tartree.WriteUnder(w, testsDir, path.Base(TestsDir), tartree.Walk)
}

// testOutput is the head (up to limit bytes, <= 0: DefaultOutputCap) of
// test-stdout.txt in the host's copy of the logs, and its size.
func testOutput(logDir string, limit int) (string, int64) {
	if limit <= 0 {
		limit = DefaultOutputCap
	}
	f, err := os.Open(filepath.Join(logDir, "test-stdout.txt"))
	if err != nil {
		return "", 0
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return "", 0
	}
	head, _ := io.ReadAll(io.LimitReader(f, int64(limit)))
	return string(head), max(info.Size(), int64(len(head)))
}

// streamedOutcome reads the streamed verifier exec's result res with what
// its stdout said (l): test.sh's exit code and whether its limit stopped
// it, or why it never reported.
func streamedOutcome(res ExecResult, l streamedLogs, token string, limit time.Duration) (ExecResult, error) {
	if l.finished {
		res.ExitCode = l.exitCode
		res.TimedOut = res.TimedOut || StoppedByTimeout(l.exitCode, res.Duration, limit)
		return res, nil
	}
	if strconv.Itoa(res.ExitCode) == noTarCode && strings.Contains(res.Stderr, noTarMarker) {
		return res, nil
	}
	// The exit line follows the prepare step, so only a script that never
	// got to test.sh can have failed to prepare.
	if err := prepareFailure(res, token); err != nil {
		return res, err
	}
	if res.TimedOut || res.Duration >= limit {
		// The exec's own, wider limit stopped the script before the exit
		// line: test.sh outlived its limit and the kill.
		res.TimedOut = true
		return res, nil
	}
	// The script ended early without a word about test.sh: something
	// killed it, or it could not start. That is no timeout.
	return res, neverReported(res)
}

// neverReported is the error of a verifier exec that ended, before its
// limit, without reporting test.sh's exit: it says how long it really ran.
func neverReported(res ExecResult) error {
	msg := fmt.Sprintf("the verifier ended after %s without reporting test.sh's exit (exit code %d)",
		res.Duration.Round(time.Millisecond), res.ExitCode)
	if tail := strings.TrimSpace(res.Stderr); tail != "" {
		if len(tail) > 300 {
			tail = "…" + strings.ToValidUTF8(tail[len(tail)-300:], "")
		}
		msg += ": " + tail
	}
	return errors.New(msg)
}

// streamMargin is how much longer than test.sh's limit the streamed
// verifier exec may take: unpacking the tests and packing the logs.
const streamMargin = 30 * time.Second

// readCapped reads a file of at most max bytes; a missing file is ok=false.
func readCapped(p string, max int64) (data []byte, ok bool, err error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if !info.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s is not a regular file", filepath.Base(p))
	}
	if info.Size() > max {
		return nil, false, fmt.Errorf("%s is %d bytes, over the limit of %d", filepath.Base(p), info.Size(), max)
	}
	data, err = io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// copyLogsOut copies /logs/verifier into dir.
func copyLogsOut(ctx context.Context, sb Sandbox, dir string) (skipped []string, err error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(sb.CopyOut(ctx, VerifierLogDir, pw)) }()
	skipped, err = extractTar(pr, dir, maxVerifierLogs)
	pr.CloseWithError(errors.New("extraction ended"))
	return skipped, err
}

// extractTar unpacks a tar stream of one directory (as the copy API sends
// it, under the directory's base name) into dst, dropping that first path
// component. Only directories and regular files are written; links and
// special files are skipped, and no entry can land outside dst. Files that
// would take the total past maxTotal are skipped and named.
func extractTar(r io.Reader, dst string, maxTotal int64) (skipped []string, err error) {
	tr := tar.NewReader(r)
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return skipped, nil
		}
		if err != nil {
			return skipped, fmt.Errorf("read tar: %w", err)
		}
		rel := stripFirst(hdr.Name)
		if rel == "" {
			continue
		}
		target := filepath.Join(dst, filepath.FromSlash(rel))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return skipped, err
			}
		case tar.TypeReg:
			if total+hdr.Size > maxTotal {
				skipped = append(skipped, rel)
				continue
			}
			total += hdr.Size
			if err := writeFromTar(target, tr, hdr.Size); err != nil {
				return skipped, err
			}
		}
	}
}

// stripFirst cleans a tar entry name and drops its first component; it
// returns "" for the top directory itself and for names that would escape.
func stripFirst(name string) string {
	name = path.Clean("/" + strings.ReplaceAll(name, "\\", "/"))
	_, rest, ok := strings.Cut(strings.TrimPrefix(name, "/"), "/")
	if !ok || rest == "" || rest == "." {
		return ""
	}
	return rest // path.Clean on a rooted path already removed every ".."
}

func writeFromTar(target string, r io.Reader, size int64) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.CopyN(f, r, size)
	return errors.Join(err, f.Close())
}
