package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCheck shows the checker at work on small graphs: each forbidden pair
// is a deliberately wrong import that must be reported, each allowed pair
// must pass.
func TestCheck(t *testing.T) {
	rules := map[string][]string{
		"conditions":      {},
		"config":          {"conditions"},
		"harness/rundir":  {"config"},
		"harness/inspect": {"harness/rundir"},
		"harness":         {"harness/rundir", "executor"},
		"executor":        {},
		"cmd/harness":     {"*"},
	}
	isolated := map[string][]string{"harness/inspect": {"github.com/docker/docker"}, "executor": {"llm"}}
	tests := []struct {
		name string
		pkg  Package
		want []string
	}{
		{"allowed: reader imports the format", Package{Path: "harness/inspect", Imports: []string{"harness/rundir", "fmt"}}, nil},
		{"allowed: orchestrator imports the trial contract", Package{Path: "harness", Imports: []string{"executor", "harness/rundir"}}, nil},
		{"allowed: the composition root imports anything", Package{Path: "cmd/harness", Imports: []string{"executor", "harness"}}, nil},
		{"allowed: outside modules are not ruled", Package{Path: "config", Imports: []string{"github.com/BurntSushi/toml"}}, nil},
		{"forbidden: reader imports the orchestrator", Package{Path: "harness/inspect", Imports: []string{"harness"}},
			[]string{"harness/inspect imports harness, which it may not"}},
		{"forbidden: an import pointing up", Package{Path: "conditions", Imports: []string{"config"}},
			[]string{"conditions imports config, which it may not"}},
		{"forbidden: the trial contract imports the orchestrator", Package{Path: "executor", Imports: []string{"harness"}},
			[]string{"executor imports harness, which it may not"}},
		{"forbidden: a reader that pulls in the engine client", Package{Path: "harness/inspect", Imports: []string{"harness/rundir"},
			Deps: []string{"harness/rundir", "github.com/docker/docker/client"}},
			[]string{"harness/inspect depends on github.com/docker/docker (through its imports), which it must not"}},
		{"forbidden: the trial contract that pulls in the model transport", Package{Path: "executor",
			Deps: []string{"config", "llm", "github.com/openai/openai-go/v3"}},
			[]string{"executor depends on llm (through its imports), which it must not"}},
		{"allowed: a package whose name only starts like a banned one", Package{Path: "executor", Deps: []string{"llmx"}}, nil},
		{"forbidden: a package nobody placed", Package{Path: "helpers", Imports: nil},
			[]string{"helpers is not in the import rules: decide which packages it may import and add it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check([]Package{tt.pkg}, rules, isolated)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Check = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestModuleKeepsTheRules checks the module as it is against Allowed and
// Isolated.
func TestModuleKeepsTheRules(t *testing.T) {
	pkgs := graph(listModule(t))
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages; is the test running inside the module?", len(pkgs))
	}
	for _, problem := range Check(pkgs, Allowed(), Isolated()) {
		t.Error(problem)
	}
	// Every rule names a package that exists, so the table cannot drift
	// into protecting nothing.
	have := map[string]bool{}
	for _, p := range pkgs {
		have[p.Path] = true
	}
	for path := range Allowed() {
		if !have[path] {
			t.Errorf("the import rules name %s, which is not a package of the module", path)
		}
	}
}

// listed is one package of the module as go list reports it: its place
// in the import graph and its source files (tests excluded).
type listed struct {
	Package
	Dir   string
	Files []string
}

// listModule runs go list over the whole module (tests excluded: test
// files may import whatever helps them) and returns paths relative to
// Module.
func listModule(t *testing.T) []listed {
	t.Helper()
	root := moduleRoot(t)
	cmd := exec.Command("go", "list", "-json=ImportPath,Dir,GoFiles,CgoFiles,IgnoredGoFiles,Imports,Deps", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var raw struct {
			ImportPath                        string
			Dir                               string
			GoFiles, CgoFiles, IgnoredGoFiles []string
			Imports                           []string
			Deps                              []string
		}
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		var files []string
		for _, f := range slices.Concat(raw.GoFiles, raw.CgoFiles, raw.IgnoredGoFiles) {
			if strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
		pkgs = append(pkgs, listed{
			Package: Package{Path: rel(raw.ImportPath), Imports: mapRel(raw.Imports), Deps: mapRel(raw.Deps)},
			Dir:     raw.Dir,
			Files:   files,
		})
	}
	return pkgs
}

// graph returns the import graph of the listed packages.
func graph(pkgs []listed) []Package {
	out := make([]Package, len(pkgs))
	for i, p := range pkgs {
		out[i] = p.Package
	}
	return out
}

func rel(path string) string {
	if r, ok := strings.CutPrefix(path, Module+"/"); ok {
		return r
	}
	return path
}

func mapRel(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = rel(p)
	}
	return out
}

// TestModelTransportKnowsNoRole keeps llm free of the lab's roles: the
// roles live in mediator and are handed to llm as data, never named by it.
func TestModelTransportKnowsNoRole(t *testing.T) {
	root := moduleRoot(t)
	role := regexp.MustCompile(`(?i)planner|mediator|advisor|reflector`)
	err := filepath.WalkDir(filepath.Join(root, "llm"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := role.FindString(line); m != "" {
				r, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d names the role %q; llm carries messages for any role and must not know them", r, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFunctionsStayShort keeps every function of the module outside tests
// readable: one over MaxFuncLines is split along its steps, unless
// LongExempt names it as a table of data.
func TestFunctionsStayShort(t *testing.T) {
	root := moduleRoot(t)
	var funcs []Func
	for _, p := range listModule(t) {
		for _, name := range p.Files {
			funcs = append(funcs, functionsOf(t, root, p.Path, filepath.Join(p.Dir, name))...)
		}
	}
	if len(funcs) < 100 {
		t.Fatalf("found only %d functions; is the test running inside the module?", len(funcs))
	}
	for _, problem := range CheckLengths(funcs, MaxFuncLines, LongExempt()) {
		t.Error(problem)
	}
}

// functionsOf parses one file of package pkg and returns its functions with
// their lengths, named as LongExempt names them.
func functionsOf(t *testing.T, root, pkg, path string) []Func {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	r, _ := filepath.Rel(root, path)
	var out []Func
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		name := pkg + "." + fn.Name.Name
		if recv := receiverType(fn); recv != "" {
			name = pkg + "." + recv + "." + fn.Name.Name
		}
		start := fset.Position(fn.Pos()).Line
		out = append(out, Func{Name: name, Pos: fmt.Sprintf("%s:%d", r, start), Lines: fset.Position(fn.End()).Line - start + 1})
	}
	return out
}

// receiverType returns the name of a method's receiver type without its
// pointer or type parameters, and "" for a plain function.
func receiverType(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return ""
	}
	typ := fn.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
		case *ast.IndexExpr:
			typ = x.X
		case *ast.IndexListExpr:
			typ = x.X
		case *ast.Ident:
			return x.Name
		default:
			return fmt.Sprintf("%T", x)
		}
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(gomod)))
}
