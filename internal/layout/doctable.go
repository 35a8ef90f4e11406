package layout

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The package table of docs/architecture.md: one row per package (or per
// packages that import the same), from the top of the layout down.
var (
	docTableHeader = []string{"package", "owns", "imports of ours"}
	backticked     = regexp.MustCompile("`([^`]+)`")
)

// docRow is one row of the package table: the packages in its first
// column and the imports in its last, as written.
type docRow struct {
	line     int
	packages []string
	imports  []string
	any      bool // the row says "any": its packages may import anything
}

// CheckDocTable compares the package table of a Markdown page (the one
// headed | package | owns | imports of ours |) with allowed, and returns one
// line per disagreement, sorted: a package missing on either side, an import
// the row lists that allowed does not permit or the other way round, and an
// import listed above its importer (the page promises that a package imports
// only packages below it).
func CheckDocTable(doc string, allowed map[string][]string) []string {
	rows, err := parseDocTable(doc)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	position := map[string]int{}
	for i, r := range rows {
		for _, p := range r.packages {
			if _, dup := position[p]; dup {
				out = append(out, fmt.Sprintf("docs table line %d: %s has a row already: keep one", r.line, p))
			}
			position[p] = i
		}
	}
	for path := range allowed {
		if _, ok := position[path]; !ok {
			out = append(out, fmt.Sprintf("docs table: %s is in Allowed() but has no row: add one with what it owns and imports", path))
		}
	}
	for i, r := range rows {
		for _, p := range r.packages {
			out = append(out, compareRow(r, p, allowed)...)
		}
		for _, imp := range r.imports {
			if at, ok := position[imp]; ok && at < i {
				out = append(out, fmt.Sprintf("docs table line %d: %s imports %s, which is listed above it: move the rows so that every package sits above what it imports",
					r.line, strings.Join(r.packages, ", "), imp))
			}
		}
	}
	slices.Sort(out)
	return out
}

// compareRow reports where the row's imports for one of its packages differ
// from allowed.
func compareRow(r docRow, path string, allowed map[string][]string) []string {
	may, ok := allowed[path]
	if !ok {
		return []string{fmt.Sprintf("docs table line %d: %s is not in Allowed(): remove the row or add the package to the rules", r.line, path)}
	}
	if slices.Contains(may, "*") || r.any {
		if slices.Contains(may, "*") && r.any {
			return nil
		}
		return []string{fmt.Sprintf("docs table line %d: %s may import anything on one side only: say \"any\" in the row exactly when Allowed() gives it \"*\"", r.line, path)}
	}
	var out []string
	for _, imp := range r.imports {
		if !slices.Contains(may, imp) {
			out = append(out, fmt.Sprintf("docs table line %d: %s lists %s, which Allowed() does not permit: fix the row or the rule", r.line, path, imp))
		}
	}
	for _, imp := range may {
		if !slices.Contains(r.imports, imp) {
			out = append(out, fmt.Sprintf("docs table line %d: %s does not list %s, which Allowed() permits: add it to the row", r.line, path, imp))
		}
	}
	return out
}

// parseDocTable finds the package table and reads its rows. An imports cell
// is "none", "any" followed by anything, or the imported packages in
// backticks (their paths relative to Module) with any prose between them.
func parseDocTable(doc string) ([]docRow, error) {
	lines := strings.Split(doc, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return slices.Equal(cells(l), docTableHeader) })
	if start < 0 {
		return nil, fmt.Errorf("docs: no package table (a table headed | %s |): the import rules must be written down", strings.Join(docTableHeader, " | "))
	}
	var rows []docRow
	for i := start + 2; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
		c := cells(lines[i])
		if len(c) != len(docTableHeader) {
			return nil, fmt.Errorf("docs table line %d: %d cells, want %d", i+1, len(c), len(docTableHeader))
		}
		r := docRow{line: i + 1, packages: quoted(c[0]), any: strings.HasPrefix(c[2], "any")}
		if len(r.packages) == 0 {
			return nil, fmt.Errorf("docs table line %d: the first cell names no package in backticks", i+1)
		}
		if !r.any && c[2] != "none" {
			r.imports = quoted(c[2])
			if len(r.imports) == 0 {
				return nil, fmt.Errorf("docs table line %d: the imports cell %q is neither \"none\", \"any ...\", nor packages in backticks", i+1, c[2])
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// cells splits one Markdown table line into its trimmed cells.
func cells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil
	}
	parts := strings.Split(line[1:len(line)-1], "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// quoted returns the backticked words of a cell, in order.
func quoted(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}
