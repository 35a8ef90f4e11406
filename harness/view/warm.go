package view

import (
	"context"
	"os"
	"path/filepath"

	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// warmDirs is how many of the newest directories the viewer reads ahead
// when it starts.
const warmDirs = 4

// The computed views, each kept in the cache until its files change.

func (s *Server) comparison(dir string) (*inspect.Comparison, error) {
	v, err := s.cache.get("compare", dir, func() (any, error) { return inspect.Compare(dir, inspect.CompareOptions{}) })
	if err != nil {
		return nil, err
	}
	return v.(*inspect.Comparison), nil
}

func (s *Server) taskGrid(dir string) (*inspect.TaskGrid, error) {
	v, err := s.cache.get("tasks", dir, func() (any, error) { return inspect.Tasks(dir) })
	if err != nil {
		return nil, err
	}
	return v.(*inspect.TaskGrid), nil
}

func (s *Server) series(dir string) ([]inspect.RowSeries, error) {
	v, err := s.cache.get("series", dir, func() (any, error) { return inspect.Series(dir) })
	if err != nil {
		return nil, err
	}
	return v.([]inspect.RowSeries), nil
}

func (s *Server) studentSeries(dir string) ([]inspect.RowSeries, error) {
	v, err := s.cache.get("series-students", dir, func() (any, error) { return inspect.SeriesByStudent(dir) })
	if err != nil {
		return nil, err
	}
	return v.([]inspect.RowSeries), nil
}

func (s *Server) runView(dir string) (*inspect.RunView, error) {
	v, err := s.cache.get("run", dir, func() (any, error) { return inspect.ReadRunView(dir) })
	if err != nil {
		return nil, err
	}
	return v.(*inspect.RunView), nil
}

// tournamentView is the run's tournaments, nil when it ran none: the run
// page shows them only then.
func (s *Server) tournamentView(dir string) (*inspect.TournamentReport, error) {
	if _, err := os.Stat(filepath.Join(dir, rundir.TournamentFile)); err != nil {
		return nil, nil
	}
	v, err := s.cache.get("tournament", dir, func() (any, error) { return inspect.Tournament(dir) })
	if err != nil {
		return nil, err
	}
	return v.(*inspect.TournamentReport), nil
}

// warm reads ahead, one view at a time, so the first visit finds its page
// computed instead of waiting for a scan of every metric row and a
// bootstrap: first the index line of every directory, then the views of
// the newest warmDirs. It stops with ctx; errors are left for the page
// that shows them.
func (s *Server) warm(ctx context.Context) {
	dirs, err := s.dirs()
	if err != nil {
		return
	}
	var steps []func()
	for _, d := range dirs {
		steps = append(steps, func() { s.cache.get("listed", d.Path, func() (any, error) { return summarize(d) }) })
	}
	for _, d := range dirs[:min(len(dirs), warmDirs)] {
		if k, err := inspect.Kind(d.Path); err == nil && k == rundir.KindRun {
			steps = append(steps, func() { s.runView(d.Path) })
		} else {
			steps = append(steps, func() { s.comparison(d.Path) })
		}
		steps = append(steps, func() { s.taskGrid(d.Path) }, func() { s.series(d.Path) })
	}
	for _, step := range steps {
		if ctx.Err() != nil {
			return
		}
		step()
	}
}
