package view

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"

	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/rundir"
)

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// open resolves the request's directory and reads its manifest.
func (s *Server) open(r *http.Request) (target, rundir.Manifest, error) {
	t, err := s.resolve(r)
	if err != nil {
		return t, rundir.Manifest{}, err
	}
	d, err := rundir.Open(t.Path)
	if err != nil {
		return t, rundir.Manifest{}, err
	}
	return t, d.Manifest(), nil
}

// matrixRow is one compared row and the directories of its runs.
type matrixRow struct {
	inspect.RowComparison
	Dirs []crumb
}

func (s *Server) matrix(w http.ResponseWriter, r *http.Request) error {
	t, m, err := s.open(r)
	if err != nil {
		return err
	}
	if m.Kind != rundir.KindMatrix {
		http.Redirect(w, r, pageURL("run", t.Rel, nil), http.StatusFound)
		return nil
	}
	c, err := s.comparison(t.Path)
	if err != nil {
		return err
	}
	routing, err := s.routing(t)
	if err != nil {
		return err
	}
	rows := make([]matrixRow, len(c.Rows))
	for i, rc := range c.Rows {
		rows[i] = matrixRow{RowComparison: rc, Dirs: rowDirs(t, rc)}
	}
	s.render(w, "matrix", page{Title: "matrix " + m.ID, Crumbs: crumbs(t), Refresh: m.Status == rundir.StatusRunning,
		Data: struct {
			T       target
			M       rundir.Manifest
			C       *inspect.Comparison
			Rows    []matrixRow
			Routing *routingView
		}{t, m, c, rows, routing}})
	return nil
}

// rowDirs are the run directories of a compared row: the row's own, or
// one per seed (<row>-seed<S>).
func rowDirs(t target, rc inspect.RowComparison) []crumb {
	if fileExists(filepath.Join(t.Path, rc.Row, rundir.ManifestFile)) {
		c := t.child(rc.Row)
		return []crumb{{rc.Row, pageURL("run", c.Rel, nil)}}
	}
	var out []crumb
	for _, seed := range rc.Seeds {
		name := fmt.Sprintf("%s-seed%d", rc.Row, seed)
		if fileExists(filepath.Join(t.Path, name, rundir.ManifestFile)) {
			out = append(out, crumb{name, pageURL("run", t.child(name).Rel, nil)})
		}
	}
	return out
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) error {
	t, m, err := s.open(r)
	if err != nil {
		return err
	}
	if m.Kind == rundir.KindMatrix {
		http.Redirect(w, r, pageURL("matrix", t.Rel, nil), http.StatusFound)
		return nil
	}
	rv, err := s.runView(t.Path)
	if err != nil {
		return err
	}
	tv, err := s.tournamentView(t.Path)
	if err != nil {
		return err
	}
	routing, err := s.routing(t)
	if err != nil {
		return err
	}
	s.render(w, "run", page{Title: "run " + t.Name(), Crumbs: crumbs(t), Refresh: m.Status == rundir.StatusRunning,
		Data: struct {
			T          target
			V          *inspect.RunView
			Curve      any
			Roles      []string
			Tournament *inspect.TournamentReport
			Routing    *routingView
		}{t, rv, runCurve(rv), skillRoles(t.Path), tv, routing}})
	return nil
}

// skillRoles are the roles whose skill the run keeps a copy of.
func skillRoles(dir string) []string {
	entries, err := os.ReadDir(filepath.Join(dir, rundir.SkillsDir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

func (s *Server) tasks(w http.ResponseWriter, r *http.Request) error {
	t, m, err := s.open(r)
	if err != nil {
		return err
	}
	g, err := s.taskGrid(t.Path)
	if err != nil {
		return err
	}
	s.render(w, "tasks", page{Title: "tasks of " + t.Name(), Crumbs: crumbs(t), Refresh: m.Status == rundir.StatusRunning,
		Data: struct {
			T        target
			G        *inspect.TaskGrid
			Statuses []rundir.TrialStatus
		}{t, g, g.Statuses()}})
	return nil
}

func (s *Server) curves(w http.ResponseWriter, r *http.Request) error {
	t, m, err := s.open(r)
	if err != nil {
		return err
	}
	by := r.URL.Query().Get("by")
	if by != "" && by != inspect.ByRow && by != inspect.ByStudent {
		return fmt.Errorf("%w: ?by=%s: draw the curves by %s or %s", errNotFound, by, inspect.ByRow, inspect.ByStudent)
	}
	series, err := s.series(t.Path)
	if err != nil {
		return err
	}
	students, err := s.studentSeries(t.Path)
	if err != nil {
		return err
	}
	// Rows of one student each have no curves of their students to show.
	hasStudents := len(students) > len(series)
	if by == inspect.ByStudent && hasStudents {
		series = students
	} else {
		by = inspect.ByRow
	}
	s.render(w, "curves", page{Title: "learning curves of " + t.Name(), Crumbs: crumbs(t), Refresh: m.Status == rundir.StatusRunning,
		Data: struct {
			T        target
			Curve    any
			By       string
			Students bool
		}{t, seriesCurve(series), by, hasStudents}})
	return nil
}

// iterationRow is one trial of an iteration's metrics part.
type iterationRow struct {
	rundir.MetricRow
	Tokens int64
	Cost   float64
	// TrialStudent addresses the trial page of one student's trial when
	// several students attempted the task in the iteration; "" otherwise.
	TrialStudent string
}

func (s *Server) iteration(w http.ResponseWriter, r *http.Request) error {
	t, m, err := s.open(r)
	if err != nil {
		return err
	}
	it, err := iterationParam(r)
	if err != nil {
		return err
	}
	rows, err := readPart(t.Path, it)
	if err != nil {
		return err
	}
	// ?student=ID keeps one student's trials.
	student := r.URL.Query().Get("student")
	var out []iterationRow
	var students []string
	for _, row := range rows {
		if row.Student != "" && !slices.Contains(students, row.Student) {
			students = append(students, row.Student)
		}
		if student != "" && row.Student != student {
			continue
		}
		ir := iterationRow{MetricRow: row, Tokens: rowTokens(row), Cost: rowCost(row)}
		if row.Student != "" && row.TrialID == rundir.StudentTrialID(it, row.TaskID, row.Student) {
			ir.TrialStudent = row.Student
		}
		out = append(out, ir)
	}
	slices.Sort(students)
	s.render(w, "iteration", page{Title: fmt.Sprintf("iteration %d of %s", it, t.Name()), Crumbs: crumbs(t),
		Refresh: m.Status == rundir.StatusRunning,
		Data: struct {
			T         target
			Iteration int
			Rows      []iterationRow
			Student   string
			Students  []string
		}{t, it, out, student, students}})
	return nil
}

// readPart reads the metric rows of one iteration: a single part, however
// long the run.
func readPart(dir string, it int) ([]rundir.MetricRow, error) {
	rows, err := rundir.ReadMetricsFile(filepath.Join(dir, rundir.MetricsDir, rundir.MetricsPartName(it)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: iteration %d has no metrics yet", errNotFound, it)
	}
	return rows, err
}

func rowTokens(r rundir.MetricRow) int64 {
	return r.PlannerInputTokens + r.PlannerOutputTokens + r.ExecutorInputTokens + r.ExecutorOutputTokens +
		r.MediatorInputTokens + r.MediatorOutputTokens + r.CompactorInputTokens + r.CompactorOutputTokens +
		r.CoevoInputTokens + r.CoevoOutputTokens
}

func rowCost(r rundir.MetricRow) float64 {
	return r.PlannerCostUSD + r.ExecutorCostUSD + r.MediatorCostUSD + r.CompactorCostUSD + r.CoevoCostUSD
}
