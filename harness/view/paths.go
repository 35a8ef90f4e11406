package view

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// errNotFound answers 404: an unknown page, a directory outside the root,
// or a run or trial that is not there.
var errNotFound = errors.New("not found")

// target is the run or matrix directory a request names.
type target struct {
	Rel  string // slash path under the root; "" is the root itself
	Path string // on disk
}

// Name is what a page calls the directory.
func (t target) Name() string {
	if t.Rel == "" {
		return filepath.Base(t.Path)
	}
	return t.Rel
}

// resolve maps the {dir} of a request to a directory under the root that
// holds a run.json. Paths that leave the root, by ".." or by a symbolic
// link, are refused as not found.
func (s *Server) resolve(r *http.Request) (target, error) {
	rel := strings.Trim(r.PathValue("dir"), "/")
	if rel != "" && (!filepath.IsLocal(filepath.FromSlash(rel)) || path.Clean(rel) != rel) {
		return target{}, fmt.Errorf("%w: %q is not a directory under the viewer's root", errNotFound, rel)
	}
	p := filepath.Join(s.root, filepath.FromSlash(rel))
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return target{}, fmt.Errorf("%w: no directory %s", errNotFound, rel)
	}
	if real != s.root && !strings.HasPrefix(real, s.root+string(filepath.Separator)) {
		return target{}, fmt.Errorf("%w: %s leads outside the viewer's root", errNotFound, rel)
	}
	if _, err := os.Stat(filepath.Join(real, rundir.ManifestFile)); err != nil {
		return target{}, fmt.Errorf("%w: %s is not a run or matrix directory (no %s)", errNotFound, rel, rundir.ManifestFile)
	}
	return target{Rel: rel, Path: real}, nil
}

// child is the target of a directory inside t (a matrix row).
func (t target) child(name string) target {
	rel := name
	if t.Rel != "" {
		rel = t.Rel + "/" + name
	}
	return target{Rel: rel, Path: filepath.Join(t.Path, name)}
}

// taskParam reads a task id from the query: one path element, since it
// names folders under the run.
func taskParam(r *http.Request) (string, error) {
	task := r.URL.Query().Get("task")
	if task == "" || strings.ContainsAny(task, `/\`) || !filepath.IsLocal(task) {
		return "", fmt.Errorf("%w: %q is not a task id (pass ?task=ID)", errNotFound, task)
	}
	return task, nil
}

// studentParam reads the optional ?student=ID of a trial: set when several
// students attempted the task in the iteration, each with its own files.
func studentParam(r *http.Request) (string, error) {
	student := r.URL.Query().Get("student")
	if student == "" {
		return "", nil
	}
	if strings.ContainsAny(student, `/\@`) || !filepath.IsLocal(student) {
		return "", fmt.Errorf("%w: %q is not a student id (pass ?student=ID, or leave it out for a task one student attempted)", errNotFound, student)
	}
	return student, nil
}

// iterationParam reads a 1-based iteration from ?i=N.
func iterationParam(r *http.Request) (int, error) {
	i, err := strconv.Atoi(r.URL.Query().Get("i"))
	if err != nil || i < 1 {
		return 0, fmt.Errorf("%w: %q is not an iteration (pass ?i=N, from 1)", errNotFound, r.URL.Query().Get("i"))
	}
	return i, nil
}
