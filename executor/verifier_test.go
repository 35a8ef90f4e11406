package executor

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// logsTar is a tar of a verifier/ directory holding files.
func logsTar(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "verifier/", Typeflag: tar.TypeDir, Mode: 0o755})
	for _, name := range slices.Sorted(maps.Keys(files)) {
		tw.WriteHeader(&tar.Header{Name: "verifier/" + name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[name]))})
		tw.Write([]byte(files[name]))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadStreamedLogs(t *testing.T) {
	tarred := logsTar(t, map[string]string{"reward.txt": "1\n", "test-stdout.txt": "ok\n"})
	tests := []struct {
		name      string
		stream    []byte
		finished  bool
		exitCode  int
		wantFiles []string
		wantErr   string
	}{
		{"exit line then logs", append([]byte(testExitMarker+"3\n"), tarred...), true, 3, []string{"reward.txt", "test-stdout.txt"}, ""},
		{"exit line, no logs", []byte(testExitMarker + "0\n"), true, 0, nil, ""},
		{"nothing: test.sh never ended", nil, false, 0, nil, "ended before test.sh"},
		{"not our line", append([]byte("something else\n"), tarred...), false, 0, nil, "ended before test.sh"},
		{"unreadable code", []byte(testExitMarker + "x\n"), true, -1, nil, ""},
		{"corrupt tar", append([]byte(testExitMarker+"0\n"), bytes.Repeat([]byte{0xff}, 1024)...), true, 0, nil, "read tar"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l := readStreamedLogs(bytes.NewReader(tt.stream), dir, nil)
			if l.finished != tt.finished || (tt.finished && l.exitCode != tt.exitCode) {
				t.Errorf("finished %v exit %d, want %v %d", l.finished, l.exitCode, tt.finished, tt.exitCode)
			}
			if (l.err == nil) != (tt.wantErr == "") || (l.err != nil && !strings.Contains(l.err.Error(), tt.wantErr)) {
				t.Errorf("err %v, want %q", l.err, tt.wantErr)
			}
			var got []string
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				got = append(got, e.Name())
			}
			if !slices.Equal(got, tt.wantFiles) {
				t.Errorf("files %v, want %v", got, tt.wantFiles)
			}
		})
	}
}

func TestPrepareFailure(t *testing.T) {
	const token = "0123abcd"
	marker := prepareFailed + " " + token
	tests := []struct {
		name   string
		res    ExecResult
		failed bool
	}{
		{"marker and prepare code", ExecResult{ExitCode: 97, Stderr: "mkdir: Not a directory\n" + marker + "\n"}, true},
		{"fixed text without the token", ExecResult{ExitCode: 97, Stderr: prepareFailed + "\n"}, false},
		{"another run's token", ExecResult{ExitCode: 97, Stderr: prepareFailed + " ffff0000\n"}, false},
		{"marker but another exit code", ExecResult{ExitCode: 1, Stderr: marker + "\n"}, false},
		{"clean run", ExecResult{ExitCode: 0}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := prepareFailure(tt.res, token); (err != nil) != tt.failed {
				t.Errorf("prepareFailure = %v, want failure %v", err, tt.failed)
			}
		})
	}
}

func TestExtractTar(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, typ byte, body string) {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: typ, Size: int64(len(body)), Mode: 0o644, Linkname: "/etc/passwd"})
		tw.Write([]byte(body))
	}
	add("verifier/", tar.TypeDir, "")
	add("verifier/reward.txt", tar.TypeReg, "1")
	add("verifier/sub/deep.txt", tar.TypeReg, "deep")
	add("verifier/../../escape.txt", tar.TypeReg, "esc")
	add("/abs/evil.txt", tar.TypeReg, "abs")
	add("verifier/link", tar.TypeSymlink, "")
	add("verifier/big.bin", tar.TypeReg, strings.Repeat("b", 100))
	tw.Close()

	root := t.TempDir()
	dst := filepath.Join(root, "out")
	skipped, err := extractTar(&buf, dst, 20)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(skipped, []string{"big.bin"}) {
		t.Errorf("skipped %v, want big.bin", skipped)
	}
	for path, want := range map[string]string{"reward.txt": "1", "sub/deep.txt": "deep", "evil.txt": "abs"} {
		got, err := os.ReadFile(filepath.Join(dst, path))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dst, "link")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("symlink was extracted: %v", err)
	}
	for _, p := range []string{filepath.Join(root, "escape.txt"), filepath.Join(dst, "escape.txt")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the escaping entry was written to %s", p)
		}
	}
}

// streamSandbox is a root sandbox whose one streamed verifier exec ends as
// res, writing nothing to stdout; it may stop its processes from outside.
type streamSandbox struct {
	fakeSandbox
	res     ExecResult
	stopErr error
	stopped int
	lastCmd string
}

func (s *streamSandbox) DefaultUserIsRoot() bool { return true }
func (s *streamSandbox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	if req.Stdin != nil {
		go io.Copy(io.Discard, req.Stdin)
	}
	s.lastCmd = strings.Join(req.Cmd, " ")
	return s.res, nil
}

type stoppingSandbox struct{ *streamSandbox }

func (s stoppingSandbox) StopProcesses(ctx context.Context) error {
	s.stopped++
	return s.stopErr
}

// A verifier exec that ends before its limit without reporting test.sh's
// exit is an error that says so, with the time it really took; it is no
// timeout. Processes are stopped from outside when the sandbox can, and
// then no command inside kills them.
func TestVerifierNeverReported(t *testing.T) {
	early := ExecResult{ExitCode: 125, Stderr: "timeout: fork system call failed", Duration: 90 * time.Millisecond}
	late := ExecResult{ExitCode: 137, Duration: 40 * time.Second}
	tests := []struct {
		name        string
		res         ExecResult
		stopper     bool
		stopErr     error
		wantErr     string
		wantTimeout bool
		wantKillIn  bool
	}{
		{"ended early", early, false, nil, "ended after 90ms without reporting test.sh's exit (exit code 125): timeout: fork system call failed", false, true},
		{"ended at the limit", late, false, nil, "did not finish within 30s", true, true},
		{"stopped outside first", early, true, nil, "ended after 90ms", false, false},
		// The cheap stop inside was tried first, then the one outside.
		{"stopping failed", early, true, errors.New("engine gone"), "stop the agent's processes before the verifier: engine gone", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := fakeTask(t)
			ss := &streamSandbox{res: tt.res, stopErr: tt.stopErr}
			var sb Sandbox = ss
			if tt.stopper {
				sb = stoppingSandbox{ss}
			}
			r := RunVerifier(context.Background(), sb, task, VerifyOptions{Timeout: 30 * time.Second, LogDir: filepath.Join(t.TempDir(), "v")})
			if r.Err == nil || !strings.Contains(r.Err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want it to contain %q", r.Err, tt.wantErr)
			}
			if r.TimedOut != tt.wantTimeout {
				t.Errorf("TimedOut = %v, want %v", r.TimedOut, tt.wantTimeout)
			}
			if tt.stopper && ss.stopped != 1 {
				t.Errorf("StopProcesses called %d times, want 1", ss.stopped)
			}
			if ss.lastCmd != "" && strings.Contains(ss.lastCmd, "kill -9") != tt.wantKillIn {
				t.Errorf("exec kills inside: %v, want %v", strings.Contains(ss.lastCmd, "kill -9"), tt.wantKillIn)
			}
		})
	}
}

// floodSandbox answers every exec with a capped output of a larger flood.
type floodSandbox struct{ fakeSandbox }

func (s *floodSandbox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	return ExecResult{Stdout: "head", StdoutBytes: 1 << 30, Stderr: "e", StderrBytes: 7, Truncated: true}, nil
}

// The oracle's and the verifier's records say how much output was
// produced and how much of it was kept.
func TestStreamsRecordProducedAndKept(t *testing.T) {
	task := fakeTask(t)
	os.MkdirAll(filepath.Join(task.Dir, "solution"), 0o755)
	os.WriteFile(filepath.Join(task.Dir, "solution", "solve.sh"), []byte("yes\n"), 0o755)
	res, err := OracleAgent{}.Run(context.Background(), AgentInput{Task: task, Sandbox: &floodSandbox{}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Stream{{Name: "solve_stdout", Produced: 1 << 30, Kept: 4}, {Name: "solve_stderr", Produced: 7, Kept: 1}}
	if !slices.Equal(res.Streams, want) {
		t.Errorf("oracle streams %+v, want %+v", res.Streams, want)
	}
	v := RunVerifier(context.Background(), &floodSandbox{}, task, VerifyOptions{Timeout: time.Minute, LogDir: filepath.Join(t.TempDir(), "v")})
	if v.Stream != (Stream{Name: "verifier", Produced: 1<<30 + 7, Kept: 5}) {
		t.Errorf("verifier stream %+v", v.Stream)
	}
}

// reportingSandbox is a root sandbox whose streamed verifier exec stops
// the agent's processes itself, runs test.sh and reports its exit, with
// reward.txt as the logs.
type reportingSandbox struct {
	fakeSandbox
	stopped int
	execs   int
}

func (s *reportingSandbox) DefaultUserIsRoot() bool { return true }
func (s *reportingSandbox) StopProcesses(ctx context.Context) error {
	s.stopped++
	return nil
}
func (s *reportingSandbox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	s.execs++
	io.Copy(io.Discard, req.Stdin)
	io.WriteString(req.Stdout, testsStartMarker+"\n"+testExitMarker+"0\n")
	tw := tar.NewWriter(req.Stdout)
	tw.WriteHeader(&tar.Header{Name: "verifier/reward.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2})
	io.WriteString(tw, "1\n")
	tw.Close()
	return ExecResult{Duration: time.Millisecond}, nil
}

// When the verifier's own exec stops the agent's processes and gets to
// test.sh, the sandbox is not asked to stop them from outside (a restart
// of its container): one exec does the whole verifier.
func TestVerifierStopsInsideFirst(t *testing.T) {
	sb := &reportingSandbox{}
	r := RunVerifier(context.Background(), sb, fakeTask(t), VerifyOptions{Timeout: 30 * time.Second, LogDir: filepath.Join(t.TempDir(), "v")})
	if r.Err != nil || r.Reward != 1 {
		t.Fatalf("reward %v error %v, want 1", r.Reward, r.Err)
	}
	if sb.stopped != 0 || sb.execs != 1 {
		t.Errorf("stopped from outside %d times with %d execs, want 0 and 1", sb.stopped, sb.execs)
	}
}
