package executor

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// oracleSandbox records what the oracle asks of a sandbox whose default
// user is root (or not), and answers its inline exec as an image with or
// without tar would.
type oracleSandbox struct {
	fakeSandbox
	root   bool
	noTar  bool
	copies []string   // CopyDirIn destinations
	execs  [][]string // commands
	stdins [][]string // the tar entries each exec got on stdin
}

func (s *oracleSandbox) DefaultUserIsRoot() bool { return s.root }

func (s *oracleSandbox) CopyDirIn(ctx context.Context, hostDir, dst string) error {
	s.copies = append(s.copies, dst)
	return nil
}

func (s *oracleSandbox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	s.execs = append(s.execs, slices.Clone(req.Cmd))
	var names []string
	if req.Stdin != nil {
		tr := tar.NewReader(req.Stdin)
		for {
			h, err := tr.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					return ExecResult{}, err
				}
				break
			}
			names = append(names, h.Name)
		}
	}
	s.stdins = append(s.stdins, names)
	script := strings.Join(req.Cmd, " ")
	if s.noTar && strings.Contains(script, "command -v tar") {
		// The script's own words, with the token it was given.
		token := script[strings.LastIndex(script, solutionNoTar+" ")+len(solutionNoTar)+1:]
		token = token[:strings.IndexByte(token, '\'')]
		return ExecResult{ExitCode: solutionNoTarCode, Stderr: solutionNoTar + " " + token + "\n"}, nil
	}
	return ExecResult{Stdout: "solved\n"}, nil
}

func oracleTask(t *testing.T, agentUser string) AgentInput {
	task := fakeTask(t)
	task.Config.Agent.User = agentUser
	os.MkdirAll(filepath.Join(task.Dir, "solution", "data"), 0o755)
	os.WriteFile(filepath.Join(task.Dir, "solution", "solve.sh"), []byte("cat data/x\n"), 0o755)
	os.WriteFile(filepath.Join(task.Dir, "solution", "data", "x"), []byte("x\n"), 0o644)
	return AgentInput{Task: task}
}

// A root oracle gets its solution on the stdin of solve.sh's own exec, and
// no copy through the engine; any other user gets the copy, made by
// Prepare before solve.sh; an image without tar gets the copy after all.
func TestOracleSolutionDelivery(t *testing.T) {
	tests := []struct {
		name       string
		root       bool
		agentUser  string
		noTar      bool
		wantCopies int
		wantExecs  int
		wantInline bool
	}{
		{"root default user: inline", true, "", false, 0, 1, true},
		{"root named: inline", false, "root", false, 0, 1, true},
		{"non-root default user: copied", false, "", false, 1, 1, false},
		{"named non-root user: copied", true, "solver", false, 1, 1, false},
		{"root without tar: copied after all", true, "", true, 1, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := oracleTask(t, tt.agentUser)
			sb := &oracleSandbox{root: tt.root, noTar: tt.noTar}
			in.Sandbox = sb
			if err := (OracleAgent{}).Prepare(context.Background(), in); err != nil {
				t.Fatal(err)
			}
			res, err := OracleAgent{}.Run(context.Background(), in)
			if err != nil || !res.Submitted {
				t.Fatalf("oracle: submitted %v, err %v", res.Submitted, err)
			}
			if len(sb.copies) != tt.wantCopies || len(sb.execs) != tt.wantExecs {
				t.Fatalf("copies %v and execs %q, want %d and %d", sb.copies, sb.execs, tt.wantCopies, tt.wantExecs)
			}
			inline := strings.Contains(strings.Join(sb.execs[0], " "), "tar -x -f - -C /")
			if inline != tt.wantInline {
				t.Errorf("first exec %q unpacks the solution: %v, want %v", sb.execs[0], inline, tt.wantInline)
			}
			if inline && !slices.Contains(sb.stdins[0], "solution/solve.sh") || inline && !slices.Contains(sb.stdins[0], "solution/data/x") {
				t.Errorf("the inline exec got %q on stdin, want the solution's files", sb.stdins[0])
			}
			last := sb.execs[len(sb.execs)-1]
			if !inline || tt.noTar {
				if !slices.Equal(last, []string{"bash", SolutionDir + "/solve.sh"}) {
					t.Errorf("solve.sh ran as %q", last)
				}
			}
		})
	}
}

// A failed unpack is an error that says so, not a solve.sh failure.
func TestOracleUnpackFailure(t *testing.T) {
	in := oracleTask(t, "")
	in.Sandbox = unpackFailing{&oracleSandbox{root: true}}
	_, err := OracleAgent{}.Run(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "unpack the solution into /solution") {
		t.Fatalf("err %v, want the unpack failure", err)
	}
}

// unpackFailing answers the inline exec as a read-only root would.
type unpackFailing struct{ *oracleSandbox }

func (s unpackFailing) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	script := strings.Join(req.Cmd, " ")
	i := strings.LastIndex(script, solutionUnpack+" ")
	if i < 0 {
		return ExecResult{}, errors.New("not the inline exec")
	}
	token := script[i+len(solutionUnpack)+1:]
	token = token[:strings.IndexByte(token, '\'')]
	return ExecResult{ExitCode: solutionUnpackCode, Stderr: "mkdir: cannot create directory '/solution': Read-only file system\n" +
		solutionUnpack + " " + token + "\n"}, nil
}

// firstSandbox is an oracleSandbox that started (or skipped) the oracle's
// first command with itself, as a backend handed the spec's First would.
type firstSandbox struct {
	*oracleSandbox
	first  *FirstCommand // what the sandbox ran; nil: skipped
	result ExecResult
	stdin  []string // the tar entries the first command got on stdin
}

func (s *firstSandbox) FirstResult(ctx context.Context) (ExecResult, *FirstCommand, error) {
	return s.result, s.first, nil
}

// run makes the sandbox run first as a backend would: its stdin is read.
func (s *firstSandbox) run(t *testing.T, first *FirstCommand) {
	t.Helper()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(first.WriteStdin(pw)) }()
	tr := tar.NewReader(pr)
	for {
		h, err := tr.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		s.stdin = append(s.stdin, h.Name)
	}
	s.first = first
}

// The oracle offers solve.sh, with its solution on stdin, as the sandbox's
// first command when it runs as root; a sandbox that ran it leaves the
// oracle nothing to exec, one that skipped it (its default user is not
// root) gets the ordinary exec; an image without tar gets the copy.
func TestOracleFirstCommand(t *testing.T) {
	tests := []struct {
		name       string
		agentUser  string
		root, skip bool
		noTar      bool
		wantFirst  bool
		wantExecs  int
		wantCopies int
	}{
		{"root: solve.sh starts with the sandbox", "", true, false, false, true, 0, 0},
		{"named root user", "root", true, false, false, true, 0, 0},
		{"named non-root user: no first command", "solver", true, false, false, false, 1, 1},
		{"sandbox user not root: skipped, copied and exec'd", "", false, true, false, true, 1, 1},
		{"root without tar: copied and exec'd", "", true, false, true, true, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := oracleTask(t, tt.agentUser)
			first := OracleAgent{}.FirstCommand(in.Task, 5*60e9)
			if (first != nil) != tt.wantFirst {
				t.Fatalf("first command %v, want one: %v", first, tt.wantFirst)
			}
			sb := &firstSandbox{oracleSandbox: &oracleSandbox{root: tt.root}}
			if first != nil && !tt.skip {
				sb.run(t, first)
				if !slices.Contains(sb.stdin, "solution/solve.sh") || !slices.Contains(sb.stdin, "solution/data/x") {
					t.Fatalf("the first command got %q on stdin, want the solution's files", sb.stdin)
				}
				sb.result = ExecResult{Stdout: "solved\n"}
				if tt.noTar {
					sb.result = ExecResult{ExitCode: solutionNoTarCode, Stderr: solutionNoTar + " " + first.Token + "\n"}
				}
			}
			in.Sandbox = sb
			if err := (OracleAgent{}).Prepare(context.Background(), in); err != nil {
				t.Fatal(err)
			}
			res, err := OracleAgent{}.Run(context.Background(), in)
			if err != nil || !res.Submitted {
				t.Fatalf("oracle: submitted %v, err %v", res.Submitted, err)
			}
			if len(sb.execs) != tt.wantExecs || len(sb.copies) != tt.wantCopies {
				t.Fatalf("execs %q and copies %v, want %d and %d", sb.execs, sb.copies, tt.wantExecs, tt.wantCopies)
			}
		})
	}
}

// The runner asks the agent for its first command and hands it to the
// backend with the sandbox's spec, timed by the agent timeout; an agent
// without one starts nothing with the sandbox.
func TestRunnerHandsFirstCommandToBackend(t *testing.T) {
	tests := []struct {
		name      string
		agent     Agent
		wantFirst bool
	}{
		{"oracle", OracleAgent{}, true},
		{"nop", NopAgent{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := oracleTask(t, "")
			in.Task.Config.Agent.TimeoutSec = 42
			b := &fakeBackend{sb: &fakeSandbox{}}
			r := &Runner{Backend: b}
			r.Run(context.Background(), TrialSpec{Task: in.Task, Agent: tt.agent})
			if b.started != 1 {
				t.Fatalf("started %d sandboxes", b.started)
			}
			first := b.spec.First
			if (first != nil) != tt.wantFirst {
				t.Fatalf("spec's first command %+v, want one: %v", first, tt.wantFirst)
			}
			if first != nil && (first.Timeout != 42*time.Second || first.WriteStdin == nil || first.Token == "" ||
				!strings.Contains(strings.Join(first.Cmd, " "), "solve.sh")) {
				t.Errorf("first command %+v: want solve.sh with its stdin, a token and the 42 s agent timeout", first)
			}
		})
	}
}
