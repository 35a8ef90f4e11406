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
			inline := strings.Contains(strings.Join(sb.execs[0], " "), "tar -x -f - -C "+SolutionDir)
			if inline != tt.wantInline {
				t.Errorf("first exec %q unpacks the solution: %v, want %v", sb.execs[0], inline, tt.wantInline)
			}
			if inline && !slices.Contains(sb.stdins[0], "solve.sh") || inline && !slices.Contains(sb.stdins[0], "data/x") {
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
