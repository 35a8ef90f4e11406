package docker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"

	"github.com/mediated-coevo/harness/internal/tartree"
)

// walkBuildContext is tartree.Walk over a task's build context, leaving out what
// the context's .dockerignore excludes, as docker build does. The Dockerfile
// and .dockerignore themselves are always part of the context. Both the
// image tag (ContextHash) and the tar sent to the engine come from this walk,
// so an edit to an ignored file neither reaches the image nor rebuilds it.
func walkBuildContext(root string, fn tartree.WalkFunc) error {
	pm, err := readDockerignore(root)
	if err != nil {
		return err
	}
	if pm == nil {
		return tartree.Walk(root, fn)
	}
	return tartree.Walk(root, func(rel string, d fs.DirEntry, full string) error {
		excluded, err := pm.MatchesOrParentMatches(rel)
		if err != nil {
			return fmt.Errorf("match %s against .dockerignore: %w", rel, err)
		}
		if !excluded {
			return fn(rel, d, full)
		}
		if d.IsDir() && !exceptionBelow(pm, rel) {
			return fs.SkipDir
		}
		// An excluded directory with a "!" exception below it is walked
		// without its own entry; the engine creates the parents of what
		// is kept.
		return nil
	})
}

// readDockerignore returns the matcher for root/.dockerignore, or nil when
// there is no such file or it holds no patterns.
func readDockerignore(root string) (*patternmatcher.PatternMatcher, error) {
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read .dockerignore: %w", err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read .dockerignore: %w", err)
	}
	if len(patterns) == 0 {
		return nil, nil
	}
	patterns = append(patterns, "!Dockerfile", "!.dockerignore")
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return nil, fmt.Errorf("parse .dockerignore in %s: %w", root, err)
	}
	return pm, nil
}

// exceptionBelow reports whether some "!" pattern names a path inside the
// directory dir, so the walk must enter it. Like docker build, it looks at
// the pattern's literal leading path only.
func exceptionBelow(pm *patternmatcher.PatternMatcher, dir string) bool {
	for _, p := range pm.Patterns() {
		if p.Exclusion() && strings.HasPrefix(p.String()+"/", dir+"/") {
			return true
		}
	}
	return false
}
