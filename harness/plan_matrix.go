package harness

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// MatrixRow is one row of a matrix before it is expanded over seeds.
type MatrixRow struct {
	Name      string
	Preset    string
	Condition conditions.Condition
	Policy    conditions.Policy
	Lab       string  // empty: the default lab
	Seeds     []int64 // empty: the matrix's seeds
	// Models and Labs are the row's own [rows.models.<key>] and
	// [rows.labs.<name>] keys, laid over the configuration for this row
	// only (see RowSpec).
	Models map[string]map[string]any
	Labs   map[string]map[string]any
	// Routing is the row's routing; empty: crossed with the plan's values.
	Routing conditions.Routing
}

// BaselineRows are the six baseline presets as matrix rows.
func BaselineRows() []MatrixRow {
	var rows []MatrixRow
	for _, p := range conditions.Presets() {
		rows = append(rows, MatrixRow{Name: p.Name, Preset: p.Name, Condition: p.Condition, Policy: p.Policy})
	}
	return rows
}

// PresetRows turns preset names into matrix rows, in the order given.
func PresetRows(names []string) ([]MatrixRow, error) {
	var rows []MatrixRow
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		p, err := conditions.LookupPreset(n)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(rows, func(r MatrixRow) bool { return r.Name == n }) {
			return nil, fmt.Errorf("preset %q is listed twice", n)
		}
		rows = append(rows, MatrixRow{Name: p.Name, Preset: p.Name, Condition: p.Condition, Policy: p.Policy})
	}
	if len(rows) == 0 {
		return nil, errors.New("no presets given")
	}
	return rows, nil
}

// expandRows checks each row against the design rules and the
// configuration and expands it over its seeds (the row's own, else the
// matrix's). A row with several seeds becomes rows named <name>-seed<S>.
func expandRows(cfg *config.Config, rows []MatrixRow, seeds []int64) ([]RowSpec, error) {
	var out []RowSpec
	for _, r := range rows {
		if err := conditions.Validate(r.Condition, r.Policy); err != nil {
			return nil, fmt.Errorf("matrix row %q: %w", r.Name, err)
		}
		rowCfg, err := overlayRow(cfg, r.Name, r.Models, r.Labs, false)
		if err != nil {
			return nil, err
		}
		lab, err := labName(rowCfg, r.Lab)
		if err != nil {
			return nil, fmt.Errorf("matrix row %q: %w", r.Name, err)
		}
		if err := checkRouting(rowCfg, lab, r.Condition, r.Policy, r.Routing.Or()); err != nil {
			return nil, fmt.Errorf("matrix row %q: %w", r.Name, err)
		}
		rs := r.Seeds
		if len(rs) == 0 {
			rs = seeds
		}
		if dup := firstDuplicate(rs); dup != nil {
			return nil, fmt.Errorf("matrix row %q: seed %d is listed twice", r.Name, *dup)
		}
		for _, s := range rs {
			name := r.Name
			if len(rs) > 1 {
				name = fmt.Sprintf("%s-seed%d", r.Name, s)
			}
			if err := rundir.CheckLabel(name); err != nil {
				return nil, fmt.Errorf("matrix row name: %w", err)
			}
			if slices.ContainsFunc(out, func(o RowSpec) bool { return o.Name == name }) {
				return nil, fmt.Errorf("matrix row %q appears twice: give each row its own name", name)
			}
			out = append(out, RowSpec{Name: name, Preset: r.Preset, Condition: r.Condition, Policy: r.Policy, Lab: lab, Seed: s, Routing: r.Routing.Or(),
				ModelOverrides: r.Models, LabOverrides: r.Labs})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the matrix has no rows")
	}
	return out, nil
}

// onlyRow keeps the row o.OnlyRow names, or the rows of seed o.OnlySeed,
// when either is set.
func onlyRow(rows []RowSpec, o PlanOptions) ([]RowSpec, error) {
	if o.OnlySeed != nil {
		if o.Resume == "" || o.OnlyRow != "" {
			return nil, errors.New("a seed's rows run only in an existing matrix, without --row: give the matrix with --resume DIR")
		}
		out := slices.DeleteFunc(slices.Clone(rows), func(r RowSpec) bool { return r.Seed != *o.OnlySeed })
		if len(out) == 0 {
			return nil, fmt.Errorf("seed %d: matrix %s has no rows of that seed; its seeds are %v", *o.OnlySeed, o.Resume, rowSeeds(rows))
		}
		return out, nil
	}
	if o.OnlyRow == "" {
		return rows, nil
	}
	if o.Resume == "" {
		return nil, errors.New("--row runs one row of an existing matrix: give the matrix with --resume DIR")
	}
	i := slices.IndexFunc(rows, func(r RowSpec) bool { return r.Name == o.OnlyRow })
	if i < 0 {
		return nil, fmt.Errorf("--row %s: matrix %s has no such row; its rows are %s", o.OnlyRow, o.Resume, strings.Join(rowNames(rows), ", "))
	}
	return rows[i : i+1], nil
}

// rowSeeds lists the distinct seeds of the rows in order of appearance.
func rowSeeds(rows []RowSpec) []int64 {
	var out []int64
	for _, r := range rows {
		if !slices.Contains(out, r.Seed) {
			out = append(out, r.Seed)
		}
	}
	return out
}

// MatrixFile is a custom matrix (--matrix FILE):
//
//	name = "ablation"
//	[[rows]]
//	name = "full"
//	preset = "full_coevolution"
//	[[rows]]
//	name = "planner-hier"
//	condition = "learned_mediator"
//	skill_updates = "planner"
//	lab = "hierarchical"
//	seeds = [1, 2, 3]
//	[[rows]]
//	name = "cheap-executor"
//	preset = "full_coevolution"
//	[rows.models.executor]
//	model = "small"
//	context_tokens = 32768
type MatrixFile struct {
	Name string
	Rows []MatrixRow
}

// matrixFileKeys are the keys a matrix file may hold, exactly as spelled.
var matrixFileKeys = []string{"name", "rows", "rows.name", "rows.preset", "rows.condition", "rows.skill_updates", "rows.lab", "rows.seeds", "rows.routing",
	"rows.models", "rows.labs"}

// overrideTables are the tables under which a row's keys are the
// configuration's own, checked when the row is laid over it.
var overrideTables = []string{"rows.models.", "rows.labs."}

type rawMatrixFile struct {
	Name string         `toml:"name"`
	Rows []rawMatrixRow `toml:"rows"`
}

type rawMatrixRow struct {
	Name         string  `toml:"name"`
	Preset       string  `toml:"preset"`
	Condition    string  `toml:"condition"`
	SkillUpdates *string `toml:"skill_updates"`
	Lab          string  `toml:"lab"`
	Seeds        []int64 `toml:"seeds"`
	// Models and Labs are decoded as they are and checked as a layer of
	// the configuration once the plan is built.
	Models  map[string]map[string]any `toml:"models"`
	Labs    map[string]map[string]any `toml:"labs"`
	Routing string                    `toml:"routing"`
}

// LoadMatrixFile reads and checks a custom matrix file.
func LoadMatrixFile(path string) (*MatrixFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read matrix file: %w", err)
	}
	return ParseMatrixFile(data, path)
}

// ParseMatrixFile parses a matrix file (file names it in errors). Unknown
// keys, including keys that differ only in case, are errors naming the key
// and file; every row is checked against the design rules, and the error
// names the row and the rule. Labs are checked when the plan is built.
func ParseMatrixFile(data []byte, file string) (*MatrixFile, error) {
	var raw rawMatrixFile
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&raw)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("matrix file %s line %d: %s", file, pe.Position.Line, pe.Message)
		}
		return nil, fmt.Errorf("matrix file %s: %w", file, err)
	}
	// Decoding matches keys regardless of case, so check the spelling of
	// every key in the file, not only the ones the decoder left over.
	for _, k := range md.Keys() {
		parts := make([]string, len(k))
		copy(parts, k)
		ks := strings.Join(parts, ".")
		if slices.Contains(matrixFileKeys, ks) || slices.ContainsFunc(overrideTables, func(p string) bool { return strings.HasPrefix(ks, p) }) {
			continue
		}
		where := file
		if line := keyLine(data, k[len(k)-1]); line > 0 {
			where += " line " + strconv.Itoa(line)
		}
		hint := "known keys: name, and per [[rows]]: name, preset, condition, skill_updates, lab, seeds, routing, and the tables [rows.models.<key>] and [rows.labs.<name>]"
		if i := slices.IndexFunc(matrixFileKeys, func(s string) bool { return strings.EqualFold(s, ks) }); i >= 0 {
			want := matrixFileKeys[i]
			hint = fmt.Sprintf("keys are lower case: write %q", want[strings.LastIndex(want, ".")+1:])
		}
		return nil, fmt.Errorf("matrix file %s: unknown key %q (%s)", where, ks, hint)
	}

	mf := &MatrixFile{Name: strings.TrimSpace(raw.Name)}
	if mf.Name != "" {
		if err := rundir.CheckLabel(mf.Name); err != nil {
			return nil, fmt.Errorf("matrix file %s: name: %w", file, err)
		}
	}
	if len(raw.Rows) == 0 {
		return nil, fmt.Errorf("matrix file %s has no rows: add [[rows]] tables, each with a preset, or a condition and skill_updates", file)
	}
	for i, rr := range raw.Rows {
		row, err := rr.row()
		if err != nil {
			label := fmt.Sprintf("row %d", i+1)
			if rr.Name != "" {
				label = fmt.Sprintf("row %q", rr.Name)
			} else if rr.Preset != "" {
				label = fmt.Sprintf("row %d (%s)", i+1, rr.Preset)
			}
			return nil, fmt.Errorf("matrix file %s, %s: %w", file, label, err)
		}
		if slices.ContainsFunc(mf.Rows, func(o MatrixRow) bool { return o.Name == row.Name }) {
			return nil, fmt.Errorf("matrix file %s: row %q appears twice: give each row its own name", file, row.Name)
		}
		mf.Rows = append(mf.Rows, row)
	}
	return mf, nil
}

func (rr rawMatrixRow) row() (MatrixRow, error) {
	r := MatrixRow{Name: strings.TrimSpace(rr.Name), Lab: strings.TrimSpace(rr.Lab), Seeds: rr.Seeds, Models: rr.Models, Labs: rr.Labs}
	switch {
	case rr.Preset != "" && (rr.Condition != "" || rr.SkillUpdates != nil):
		return r, errors.New("give either a preset, or a condition and skill_updates, not both")
	case rr.Preset != "":
		p, err := conditions.LookupPreset(strings.TrimSpace(rr.Preset))
		if err != nil {
			return r, err
		}
		r.Preset, r.Condition, r.Policy = p.Name, p.Condition, p.Policy
		if r.Name == "" {
			r.Name = p.Name
		}
	case rr.Condition == "":
		return r, errors.New("needs a preset, or a condition and skill_updates")
	default:
		c, err := conditions.ParseCondition(rr.Condition)
		if err != nil {
			return r, err
		}
		if rr.SkillUpdates == nil {
			return r, errors.New(`needs skill_updates next to its condition ("none", "all", or a comma list of executor, planner, mediator)`)
		}
		pol, err := conditions.ParsePolicy(*rr.SkillUpdates)
		if err != nil {
			return r, err
		}
		r.Condition, r.Policy = c, pol
		if r.Name == "" {
			return r, errors.New(`needs a name (name = "...") when it uses a condition rather than a preset`)
		}
	}
	if err := rundir.CheckLabel(r.Name); err != nil {
		return r, fmt.Errorf("name: %w", err)
	}
	if err := conditions.Validate(r.Condition, r.Policy); err != nil {
		return r, err
	}
	if dup := firstDuplicate(r.Seeds); dup != nil {
		return r, fmt.Errorf("seed %d is listed twice", *dup)
	}
	lab := cmp.Or(r.Lab, config.DefaultLab)
	for name := range r.Labs {
		if name != lab {
			return r, fmt.Errorf("[rows.labs.%s] changes a lab the row does not run: a row changes only its own lab (%s); write [rows.labs.%s], or set lab = %q", name, lab, lab, name)
		}
	}
	if rr.Routing != "" {
		routing, err := conditions.ParseRouting(rr.Routing)
		if err != nil {
			return r, err
		}
		r.Routing = routing
	}
	if err := conditions.ValidateRouting(r.Condition, r.Policy, r.Routing.Or()); err != nil {
		return r, err
	}
	return r, nil
}

// overlayRow lays a row's own models and lab keys over cfg, as a
// --config-dir file would be laid (a model or lab the configuration lacks
// starts from the executor's or the default lab), and checks the result.
// Without overrides it returns cfg itself. An offline plan stays offline
// whatever provider a row names.
func overlayRow(cfg *config.Config, row string, models, labs map[string]map[string]any, offline bool) (*config.Config, error) {
	if len(models)+len(labs) == 0 {
		return cfg, nil
	}
	tables := map[string]any{}
	if len(models) > 0 {
		tables["models"] = models
	}
	if len(labs) > 0 {
		tables["labs"] = labs
	}
	out, err := cfg.Overlay(tables, fmt.Sprintf("matrix row %q ([rows.models] and [rows.labs] keys)", row))
	if err != nil {
		return nil, err
	}
	if offline {
		out.SetOffline()
	}
	return out, nil
}

// rowConfig is the configuration row r runs with: cfg with the row's own
// keys laid over it.
func (p *Plan) rowConfig(cfg *config.Config, r RowSpec) (*config.Config, error) {
	return overlayRow(cfg, r.Name, r.ModelOverrides, r.LabOverrides, p.Offline)
}

// RowConfig returns a copy of the configuration row r runs with: the
// plan's (Config), with the row's own [rows.models] and [rows.labs] keys
// laid over it.
func (p *Plan) RowConfig(r RowSpec) (*config.Config, error) {
	c, err := p.rowConfig(p.config, r)
	if err != nil {
		return nil, err
	}
	return c.Clone(), nil
}

// keyLine finds the first line that assigns key (best effort, for messages).
func keyLine(data []byte, key string) int {
	re, err := regexp.Compile(`^\s*(?:"` + regexp.QuoteMeta(key) + `"|` + regexp.QuoteMeta(key) + `)\s*=`)
	if err != nil {
		return 0
	}
	for i, line := range strings.Split(string(data), "\n") {
		if re.MatchString(line) {
			return i + 1
		}
	}
	// A table header such as [rows.extra] or [[Rows]].
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.Trim(strings.TrimSpace(line), "[]")
		if t == key || strings.HasSuffix(t, "."+key) {
			return i + 1
		}
	}
	return 0
}

// WriteMatrixFile writes the plan's rows as a matrix file, one entry per
// expanded row with its seed, so that `harness matrix --matrix` on it (or a
// resume) plans the same rows. Tasks and iterations are recorded in the
// header comment and in run.json.
func (p *Plan) WriteMatrixFile(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Plan of matrix %s: %d rows x %d tasks x %d iterations = %d trials.\n", p.Name, len(p.Rows), len(p.Tasks), p.Iterations, p.Trials)
	fmt.Fprintf(&b, "# Tasks: %s\n", strings.Join(p.Tasks, ", "))
	b.WriteString("# Run it again with: harness matrix --matrix <this file> --tasks ... --iterations ...\n\n")
	fmt.Fprintf(&b, "name = %s\n", strconv.Quote(p.Name))
	for _, r := range p.Rows {
		b.WriteString("\n[[rows]]\n")
		fmt.Fprintf(&b, "name = %s\n", strconv.Quote(r.Name))
		if r.Preset != "" {
			fmt.Fprintf(&b, "preset = %s\n", strconv.Quote(r.Preset))
		} else {
			fmt.Fprintf(&b, "condition = %s\n", strconv.Quote(string(r.Condition)))
			fmt.Fprintf(&b, "skill_updates = %s\n", strconv.Quote(r.Policy.String()))
		}
		if r.Lab != "" {
			fmt.Fprintf(&b, "lab = %s\n", strconv.Quote(r.Lab))
		}
		fmt.Fprintf(&b, "routing = %s\n", strconv.Quote(string(r.Routing.Or())))
		fmt.Fprintf(&b, "seeds = [%d]\n", r.Seed)
		if err := writeOverrides(&b, "rows.models", r.ModelOverrides); err != nil {
			return err
		}
		if err := writeOverrides(&b, "rows.labs", r.LabOverrides); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeOverrides writes a row's override tables under prefix, one
// [prefix.<key>] table each, sorted, so the file reads back the same.
func writeOverrides(b *bytes.Buffer, prefix string, tables map[string]map[string]any) error {
	for _, k := range slices.Sorted(maps.Keys(tables)) {
		var body bytes.Buffer
		enc := toml.NewEncoder(&body)
		enc.Indent = ""
		if err := enc.Encode(tables[k]); err != nil {
			return fmt.Errorf("write [%s.%s]: %w", prefix, k, err)
		}
		head := prefix + "." + tomlKey(k)
		fmt.Fprintf(b, "[%s]\n", head)
		// Nested tables (a lab's students) are headed below the row's.
		for _, line := range strings.SplitAfter(body.String(), "\n") {
			if t := strings.TrimSpace(line); strings.HasPrefix(t, "[") && !strings.Contains(t, "=") {
				open := "["
				if strings.HasPrefix(t, "[[") {
					open = "[["
				}
				line = strings.Replace(line, open, open+head+".", 1)
			}
			b.WriteString(line)
		}
	}
	return nil
}

// tomlKey quotes a key unless it is bare.
func tomlKey(k string) string {
	if bareKey.MatchString(k) {
		return k
	}
	return strconv.Quote(k)
}

var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
