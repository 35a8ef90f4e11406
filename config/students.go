package config

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/mediated-coevo/harness/conditions"
)

// Values of [labs.<name>] assignment: which student meets which task in
// which iteration.
const (
	// AssignRotate is a Latin-square rotation: in iteration i, task t goes
	// to student (t+i-1) mod n, so over every n iterations each student
	// meets each task once. Empty (a lab recorded before the key existed)
	// means rotate.
	AssignRotate = "rotate"
	// AssignAll has every student attempt every task every iteration.
	AssignAll = "all"
)

var assignments = []string{AssignRotate, AssignAll}

// Student is [labs.<name>.students.<id>]: one Executor agent of a lab,
// with its own model and, when OwnSkill is set, its own executor skill.
type Student struct {
	// Model names a [models.<key>] entry; empty means [models.executor].
	Model string `toml:"model"`
	// ExecutorMode is single or hierarchical; empty means the lab's.
	ExecutorMode string `toml:"executor_mode"`
	// OwnSkill gives the student an executor skill of its own, evolved
	// from what reaches it; false shares the lab's.
	OwnSkill bool `toml:"own_skill"`
}

// Students is a lab's `students` key. It is either a count of alike
// students (`students = 2`: the lab's model and skill, named student-1,
// student-2, ...) or a table of named students
// ([labs.<name>.students.<id>]); a file that gives the tables replaces the
// count.
type Students struct {
	Count int
	ByID  map[string]Student
}

// UnmarshalTOML reads either form.
func (s *Students) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case int64:
		*s = Students{Count: int(v)}
		return nil
	case map[string]any:
		byID := make(map[string]Student, len(v))
		for id, raw := range v {
			st, err := decodeStudent(id, raw)
			if err != nil {
				return err
			}
			byID[id] = st
		}
		*s = Students{ByID: byID}
		return nil
	}
	return fmt.Errorf("students must be a number of students or [labs.<name>.students.<id>] tables, not %T", v)
}

func decodeStudent(id string, raw any) (Student, error) {
	tbl, ok := raw.(map[string]any)
	if !ok {
		return Student{}, fmt.Errorf("students.%s must be a table ([labs.<name>.students.%s] with model, executor_mode, own_skill)", id, id)
	}
	var st Student
	for k, v := range tbl {
		var ok bool
		switch k {
		case "model":
			st.Model, ok = v.(string)
		case "executor_mode":
			st.ExecutorMode, ok = v.(string)
		case "own_skill":
			st.OwnSkill, ok = v.(bool)
		default:
			return Student{}, fmt.Errorf("unknown key students.%s.%s (known keys here: model, executor_mode, own_skill)", id, k)
		}
		if !ok {
			return Student{}, fmt.Errorf("students.%s.%s has the wrong type (%T)", id, k, v)
		}
	}
	return st, nil
}

// MarshalTOML writes the count as a number, as `students` was written
// before the tables existed (so such a run keeps its fingerprint), and the
// tables as one inline table, sorted by id.
func (s Students) MarshalTOML() ([]byte, error) {
	if len(s.ByID) == 0 {
		return []byte(strconv.Itoa(s.Count)), nil
	}
	var b bytes.Buffer
	b.WriteString("{")
	for i, id := range sortedKeys(s.ByID) {
		if i > 0 {
			b.WriteString(", ")
		}
		st := s.ByID[id]
		fmt.Fprintf(&b, "%s = {model = %s, executor_mode = %s, own_skill = %t}",
			tomlKey(id), strconv.Quote(st.Model), strconv.Quote(st.ExecutorMode), st.OwnSkill)
	}
	b.WriteString("}")
	return b.Bytes(), nil
}

// tomlKey quotes a key unless it is a bare key.
func tomlKey(k string) string {
	if labNameRE.MatchString(k) {
		return k
	}
	return strconv.Quote(k)
}

func (s Students) clone() Students {
	if s.ByID != nil {
		out := make(map[string]Student, len(s.ByID))
		for k, v := range s.ByID {
			out[k] = v
		}
		s.ByID = out
	}
	return s
}

// LabStudent is one student of a lab, resolved: its id, the [models.<key>]
// entry its Executor uses, its executor mode, and whether it has its own
// skill.
type LabStudent struct {
	ID           string
	ModelKey     string
	ExecutorMode string
	OwnSkill     bool
}

// Roster lists the lab's students in a fixed order: student-1..N for a
// count, the tables' ids sorted otherwise.
func (l Lab) Roster() []LabStudent {
	if len(l.Students.ByID) == 0 {
		out := make([]LabStudent, max(1, l.Students.Count))
		for i := range out {
			out[i] = LabStudent{ID: "student-" + strconv.Itoa(i+1), ModelKey: "executor", ExecutorMode: l.ExecutorMode}
		}
		return out
	}
	var out []LabStudent
	for _, id := range sortedKeys(l.Students.ByID) {
		st := l.Students.ByID[id]
		ls := LabStudent{ID: id, ModelKey: st.Model, ExecutorMode: st.ExecutorMode, OwnSkill: st.OwnSkill}
		if ls.ModelKey == "" {
			ls.ModelKey = "executor"
		}
		if ls.ExecutorMode == "" {
			ls.ExecutorMode = l.ExecutorMode
		}
		out = append(out, ls)
	}
	return out
}

// Assign returns the assignment, rotate when none is recorded.
func (l Lab) Assign() string {
	if l.Assignment == "" {
		return AssignRotate
	}
	return l.Assignment
}

// validateStudents checks a lab's students and assignment.
func (c *Config) validateStudents(ck *checker, name string, l Lab) {
	k := func(field ...string) toml.Key { return key(append([]string{"labs", name}, field...)...) }
	if l.Assignment != "" {
		ck.oneOf(k("assignment"), l.Assignment, assignments)
	}
	if len(l.Students.ByID) == 0 {
		ck.atLeast(k("students"), int64(l.Students.Count), 1)
		return
	}
	for _, id := range sortedKeys(l.Students.ByID) {
		st := l.Students.ByID[id]
		if !labNameRE.MatchString(id) {
			ck.add(k("students", id), "has an invalid student id: use letters, digits, '-' and '_'")
		}
		if st.Model != "" {
			if _, ok := c.Models[roleKey(st.Model)]; !ok {
				ck.add(k("students", id, "model"), "names no model: %q is not a [models.<key>] table (known: %s); add [models.%s] or name one of those",
					st.Model, joinKeys(c.Models), st.Model)
			}
		}
		if st.ExecutorMode != "" {
			ck.oneOf(k("students", id, "executor_mode"), st.ExecutorMode, executorModes)
		}
	}
}

// studentModels lists the model keys any lab's student names.
func (c *Config) studentModels() []string {
	var out []string
	for _, l := range c.Labs {
		for _, st := range l.Students.ByID {
			if st.Model != "" && !slices.Contains(out, st.Model) {
				out = append(out, st.Model)
			}
		}
	}
	return out
}

func roleKey(k string) conditions.Role { return conditions.Role(k) }

func joinKeys[V any](m map[conditions.Role]V) string {
	return strings.Join(conditions.RoleNames(sortedKeys(m)), ", ")
}

// modelKeyOrder lists a layer's model keys, the roles first, so that a
// model only students name starts from the layer's own executor.
func modelKeyOrder[V any](m map[string]V) []string {
	keys := sortedKeys(m)
	slices.SortStableFunc(keys, func(a, b string) int {
		ra, rb := conditions.Role(a).IsModel(), conditions.Role(b).IsModel()
		switch {
		case ra == rb:
			return 0
		case ra:
			return -1
		}
		return 1
	})
	return keys
}

// studentModelsIn lists the models the students of a decoded file name.
func studentModelsIn(raw map[string]any) []string {
	var out []string
	labs, _ := raw["labs"].(map[string]any)
	for _, l := range labs {
		lab, _ := l.(map[string]any)
		students, _ := lab["students"].(map[string]any)
		for _, st := range students {
			tbl, _ := st.(map[string]any)
			if m, ok := tbl["model"].(string); ok && m != "" && !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}
