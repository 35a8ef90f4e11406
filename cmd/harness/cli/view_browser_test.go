package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// screenshotDirEnv, when set, is a directory the browser test also writes
// its screenshots to (how docs/images got its pictures of the viewer).
const screenshotDirEnv = "HARNESS_VIEW_SCREENSHOTS"

// chromium finds Debian's Chromium, or a Chrome. Without one the browser
// test skips on a developer machine and fails in CI (CI=true), where
// .ci/run installs it, so it can never pass there by not running.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium found (chromium, chromium-browser or google-chrome): CI=true, so the browser test must run; install Debian's chromium")
	}
	t.Skip("no Chromium found: install Debian's chromium to run the browser test")
	return ""
}

// browserTasks are the two tasks of the pinned smoke set the browser test's
// matrix runs: the smallest real matrix that still has a tool call in
// every trial and a skill update that takes effect in its last iteration.
var browserTasks = []string{"csv-parser", "log-analysis"}

// offlineSmokeMatrix runs `harness matrix` offline with the real engine:
// no_feedback and full_coevolution on browserTasks for two iterations. The
// Advisor reviews every proposal at once and the gate runs one trial per
// side under no_regress, so the first iteration's executor-skill update
// is committed and in effect in the second; it returns the matrix
// directory.
func offlineSmokeMatrix(t *testing.T) string {
	t.Helper()
	dockerForTest(t)
	cfgDir := t.TempDir()
	cfg := fmt.Sprintf("[executor_runtime]\ntask_cache_dir = %q\n[experiment]\nadvisor_buffer_max = 1\n"+
		"[validation]\nrule = \"no_regress\"\ntrials_per_task = 1\nmax_trials_per_task = 1\n", t.TempDir())
	if err := os.WriteFile(filepath.Join(cfgDir, "default.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	r := runCLI(t, engineFactory(), "matrix", "--tasks", strings.Join(browserTasks, ","), "--preset", "no_feedback,full_coevolution",
		"--offline", "--iterations", "2", "--config-dir", cfgDir, "--out", out, "-j", "2")
	if r.code != ExitOK {
		t.Fatalf("offline smoke matrix: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
	matrices, _ := filepath.Glob(filepath.Join(out, "*-matrix"))
	if len(matrices) != 1 {
		t.Fatalf("matrix directories: %v", matrices)
	}
	return matrices[0]
}

// TestBrowserReadsAnOfflineSmokeMatrix runs an offline smoke matrix,
// serves it with `harness view` and reads it in a headless Chromium as a
// researcher would: the comparison, the per-task table, the learning
// curves, one trial and one skill diff. Every expected value is read from
// the matrix's own files, and the screenshots are the ones docs/reading.md
// shows.
func TestBrowserReadsAnOfflineSmokeMatrix(t *testing.T) {
	exe := chromium(t)
	if testing.Short() {
		t.Skip("runs a matrix and starts a browser; skipped with -short")
	}
	matrix := offlineSmokeMatrix(t)
	want := readSmokeMatrix(t, matrix)
	base := startView(t, filepath.Dir(matrix))

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	b := &browser{t: t, ctx: ctx}

	id := filepath.Base(matrix)
	row := id + "/" + learningRow
	b.do(chromedp.Navigate(base + "matrix/" + id))
	compare := b.text("#compare")
	matrixShot := b.screenshot()

	b.do(chromedp.Navigate(base+"tasks/"+id), chromedp.WaitVisible(chromedp.CSS("#tasks")))
	tasks := b.text("#tasks")
	taskRow := b.text(fmt.Sprintf("#tasks tbody tr:nth-child(%d)", want.taskIndex+1))

	b.do(chromedp.Navigate(base + "curves/" + id))
	curves := b.textContent("svg.curve")
	curvesShot := b.screenshot()

	b.do(chromedp.Navigate(fmt.Sprintf("%strial/%s?task=%s&i=%d", base, row, want.task, want.iteration)))
	trialReward := b.text("#reward")
	transcript := b.text("#transcript")
	trialShot := b.screenshot()

	b.do(chromedp.Navigate(base + "skill/" + row + "?role=executor"))
	added := b.text(".diff .add")
	skillShot := b.screenshot()

	checks := []struct{ what, got, want string }{
		{"the comparison names the learning row", compare, learningRow},
		{"the comparison names the baseline row", compare, "no_feedback"},
		{"the per-task table lists the first task", tasks, browserTasks[0]},
		{"the per-task table lists the second task", tasks, browserTasks[1]},
		{"the per-task table's task", taskRow, want.task},
		{"the task's mean reward in the learning row", taskRow, want.taskMean},
		{"the curves' legend names the learning row", curves, learningRow},
		{"the trial's reward", trialReward, want.reward},
		{"the Executor's first tool call", transcript, want.toolCall},
		{"the skill diff's added line", added, want.addedLine},
	}
	for _, c := range checks {
		if !strings.Contains(strings.Join(strings.Fields(c.got), ""), strings.Join(strings.Fields(c.want), "")) {
			t.Errorf("%s: %q lacks %q", c.what, c.got, c.want)
		}
	}
	shots := map[string][]byte{"view-matrix.png": matrixShot, "view-trial.png": trialShot, "view-skill.png": skillShot,
		"view-curves.png": curvesShot}
	for _, dir := range []string{t.TempDir(), os.Getenv(screenshotDirEnv)} {
		if dir == "" {
			continue
		}
		for name, png := range shots {
			if len(png) < 1000 {
				t.Errorf("screenshot %s has %d bytes: the page did not render", name, len(png))
			}
			if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// learningRow is the smoke matrix's row whose executor skill changes.
const learningRow = "full_coevolution"

// smokeExpectations are what the pages must show, read from the matrix's
// files: one trial of the learning row in the iteration the skill update
// was in effect, its task's mean reward, its first tool call, and a line
// the update added.
type smokeExpectations struct {
	task      string
	taskIndex int // the task's line in the per-task table, which lists tasks in order
	taskMean  string
	iteration int
	reward    string
	toolCall  string
	addedLine string
}

func readSmokeMatrix(t *testing.T, matrix string) smokeExpectations {
	t.Helper()
	dir := filepath.Join(matrix, learningRow)
	rows, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := smokeExpectations{task: browserTasks[0], taskIndex: slices.Index(browserTasks, browserTasks[0]), iteration: 2}
	var sum float64
	var n int
	for _, r := range rows {
		if r.TaskID != want.task || r.RowPhase() == rundir.PhaseEval || r.Reward == nil {
			continue
		}
		sum, n = sum+*r.Reward, n+1
		if int(r.Iteration) == want.iteration {
			want.reward = fmt.Sprintf("%.3f", *r.Reward)
		}
	}
	if n == 0 || want.reward == "" {
		t.Fatalf("no scored trial of %s in iteration %d of %s", want.task, want.iteration, dir)
	}
	want.taskMean = fmt.Sprintf("%.3f", sum/float64(n))
	want.toolCall = firstToolCall(t, filepath.Join(dir, "jobs", want.task, fmt.Sprintf("%04d", want.iteration), "agent", "transcript.jsonl"))
	want.addedLine = addedSkillLine(t, dir, want.iteration)
	return want
}

// firstToolCall is the first tool call of a transcript as the trial page
// prints it: the tool's name, then its arguments.
func firstToolCall(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var ev struct {
			Message struct {
				ToolCalls []struct{ Name, Arguments string } `json:"tool_calls"`
			} `json:"message"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		if calls := ev.Message.ToolCalls; len(calls) > 0 {
			return calls[0].Name + " " + calls[0].Arguments
		}
	}
	t.Fatalf("%s has no tool call (err %v)", path, sc.Err())
	return ""
}

// addedSkillLine is a non-blank line the executor-skill update committed
// before iteration added to the skill.
func addedSkillLine(t *testing.T, dir string, iteration int) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "history", "skill_updates.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		var u struct {
			Role      string
			Iteration int
			Old       string `json:"old_snapshot"`
			New       string `json:"new_snapshot"`
		}
		if err := json.Unmarshal([]byte(line), &u); err != nil {
			t.Fatal(err)
		}
		if u.Role != "executor" || u.Iteration >= iteration {
			continue
		}
		old, err := os.ReadFile(filepath.Join(dir, u.Old))
		if err != nil {
			t.Fatal(err)
		}
		updated, err := os.ReadFile(filepath.Join(dir, u.New))
		if err != nil {
			t.Fatal(err)
		}
		before := strings.Split(string(old), "\n")
		for _, l := range strings.Split(string(updated), "\n") {
			if strings.TrimSpace(l) != "" && !slices.Contains(before, l) {
				return l
			}
		}
	}
	t.Fatalf("no executor-skill update before iteration %d added a line in %s", iteration, dir)
	return ""
}

// startView runs `harness view ROOT --port 0` until the test ends and
// returns the address it prints.
func startView(t *testing.T, root string) string {
	t.Helper()
	f := testFactory()
	out := &lockedBuffer{}
	f.IO = IOStreams{In: strings.NewReader(""), Out: out, ErrOut: out}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() { code <- Run(ctx, f, []string{"view", root, "--port", "0"}) }()
	t.Cleanup(func() {
		cancel()
		if c := <-code; c != ExitOK {
			t.Errorf("harness view: exit %d: %s", c, out.String())
		}
	})
	addr := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	for deadline := time.Now().Add(10 * time.Second); addr.FindString(out.String()) == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("harness view printed no address: %q", out.String())
		}
	}
	return addr.FindString(out.String())
}

// browser runs steps in one tab and fails the test on the first error.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("drive the browser: %v", err)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("read %s: %v", sel, err)
	}
	return v
}

func (b *browser) screenshot() []byte {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("take a screenshot: %v", err)
	}
	return png
}

// textContent reads an element that has no rendered text of its own, such
// as an SVG drawing.
func (b *browser) textContent(sel string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("read %s: %v", sel, err)
	}
	return v
}
