package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/mediated-coevo/harness/conditions"
)

// The TOML decoder matches keys case-insensitively and reports nothing for a
// key it could not place only when the spelling differs in case. So every key
// of a file is checked here against the exact names of the schema, which is
// derived from the toml tags of the types, before anything is decoded.

// schemaNode is one level of the accepted key tree.
type schemaNode struct {
	leaf   reflect.Type           // non-nil for a value
	fields map[string]*schemaNode // struct tables, by exact tag
	names  []string               // field tags in declaration order
	elem   *schemaNode            // map tables: the shape of every entry
	items  *schemaNode            // arrays of tables: the shape of every table
	keys   []string               // allowed map keys; nil means any
	// orLeaf, on a map table, is the type of the plain value that may
	// stand in its place (a lab's students: a count, or the tables).
	orLeaf reflect.Type
}

var studentsType = reflect.TypeFor[Students]()

var durationType = reflect.TypeFor[Duration]()

// fileSchema is the shape of a configuration file: Config plus the [run]
// table a resolved file carries.
func fileSchema() *schemaNode {
	root := buildSchema(reflect.TypeFor[Config]())
	root.fields["run"] = buildSchema(reflect.TypeFor[RunMeta]())
	root.fields["launcher"] = buildSchema(reflect.TypeFor[Launcher]())
	root.names = append(root.names, "run", "launcher")
	root.fields["models"].keys = conditions.RoleNames(conditions.ModelRoles())
	return root
}

func buildSchema(t reflect.Type) *schemaNode {
	switch {
	case t == durationType:
		return &schemaNode{leaf: t}
	case t == studentsType:
		return &schemaNode{elem: buildSchema(reflect.TypeFor[Student]()), orLeaf: reflect.TypeFor[int]()}
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
		return buildSchema(t.Elem()) // an optional table ([network])
	case t.Kind() == reflect.Struct:
		n := &schemaNode{fields: map[string]*schemaNode{}}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			n.fields[name] = buildSchema(f.Type)
			n.names = append(n.names, name)
		}
		return n
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		return &schemaNode{elem: buildSchema(t.Elem())}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		return &schemaNode{items: buildSchema(t.Elem())}
	default:
		return &schemaNode{leaf: t}
	}
}

// child returns the node for key part p, if the schema has one.
func (n *schemaNode) child(p string) (*schemaNode, bool) {
	switch {
	case n.fields != nil:
		c, ok := n.fields[p]
		return c, ok
	case n.elem != nil:
		if n.keys != nil && !slices.Contains(n.keys, p) {
			return nil, false
		}
		return n.elem, true
	case n.items != nil:
		// Keys inside an array of tables name no index: the key of every
		// table is checked against the tables' shape.
		return n.items.child(p)
	}
	return nil, false
}

// checkKeys reports the first problem, in file order, among the keys of a
// decoded file: an unknown key or a value of the wrong type.
func checkKeys(md toml.MetaData, raw map[string]any, file string, lines map[string]int) *Error {
	root := fileSchema()
	// Besides the roles, [models.<key>] takes the models this file's
	// students name.
	models := root.fields["models"]
	models.keys = append(models.keys, studentModelsIn(raw)...)
	for _, k := range md.Keys() {
		node := root
		for i, p := range k {
			if node.leaf != nil {
				// A table or dotted key below a plain value.
				return typeError(file, lines, k[:i], node.leaf, map[string]any{})
			}
			c, ok := node.child(p)
			if !ok {
				return unknownKey(file, lines, k[:i+1], node)
			}
			node = c
		}
		v, ok := lookup(raw, k)
		if !ok {
			continue // below an array of tables; its parent was reported
		}
		if node.items != nil {
			if !tableArray(v) {
				return &Error{File: file, Line: lineOf(lines, k), Key: k.String(),
					Msg: fmt.Sprintf("%s must be an array of tables ([[%s]] with its keys below), not %s", k.String(), k.String(), describeValue(v))}
			}
			continue
		}
		if node.leaf == nil {
			if _, ok := v.(map[string]any); ok {
				continue
			}
			if node.orLeaf == nil {
				return typeError(file, lines, k, nil, v)
			}
			if msg := checkValue(node.orLeaf, v); msg != "" {
				return &Error{File: file, Line: lineOf(lines, k), Key: k.String(),
					Msg: k.String() + " must be a number of students or [" + k.String() + ".<id>] tables, not " + describeValue(v)}
			}
			continue
		}
		if msg := checkValue(node.leaf, v); msg != "" {
			return &Error{File: file, Line: lineOf(lines, k), Key: k.String(), Msg: k.String() + " " + msg}
		}
	}
	return nil
}

func unknownKey(file string, lines map[string]int, k toml.Key, parent *schemaNode) *Error {
	bad := k[len(k)-1]
	if parent.items != nil {
		parent = parent.items
	}
	known := parent.names
	if parent.keys != nil {
		known = parent.keys
	}
	msg := fmt.Sprintf("unknown key %q", k.String())
	switch s := suggest(bad, known); {
	case s != "" && strings.EqualFold(s, bad):
		msg += fmt.Sprintf(" (keys are lower case: did you mean %q?)", s)
	case s != "":
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	case parent.keys != nil:
		msg += fmt.Sprintf(" (model roles are %s; a model of another name must be named by a student of the same file: [labs.<name>.students.<id>] model)", strings.Join(known, ", "))
	case len(known) > 0:
		msg += fmt.Sprintf(" (known keys here: %s)", strings.Join(known, ", "))
	}
	return &Error{File: file, Line: lineOf(lines, k), Key: k.String(), Msg: msg}
}

func typeError(file string, lines map[string]int, k toml.Key, want reflect.Type, got any) *Error {
	w := "a table"
	if want != nil {
		w = describeType(want)
	}
	return &Error{File: file, Line: lineOf(lines, k), Key: k.String(),
		Msg: fmt.Sprintf("%s must be %s, not %s", k.String(), w, describeValue(got))}
}

// tableArray reports whether v is an array whose every item is a table:
// [[name]] sections or an inline array of inline tables.
func tableArray(v any) bool {
	switch v := v.(type) {
	case []map[string]any:
		return true
	case []any:
		for _, it := range v {
			if _, ok := it.(map[string]any); !ok {
				return false
			}
		}
		return true
	}
	return false
}

// checkValue returns what is wrong with v as a value of type t, or "".
func checkValue(t reflect.Type, v any) string {
	bad := func() string {
		return fmt.Sprintf("must be %s, not %s", describeType(t), describeValue(v))
	}
	if t == durationType {
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		if _, err := time.ParseDuration(s); err != nil {
			return fmt.Sprintf("is not a duration: %q (write it like \"90s\", \"10m\" or \"1h30m\")", s)
		}
		return ""
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkValue(t.Elem(), v)
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return bad()
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			return bad()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(int64)
		if !ok {
			return bad()
		}
		if reflect.New(t).Elem().OverflowInt(n) {
			return fmt.Sprintf("is out of range: %d", n)
		}
	case reflect.Float32, reflect.Float64:
		switch v.(type) {
		case float64, int64:
		default:
			return bad()
		}
	case reflect.Slice:
		items, ok := v.([]any)
		if !ok {
			return bad()
		}
		for i, it := range items {
			if msg := checkValue(t.Elem(), it); msg != "" {
				return fmt.Sprintf("item %d %s", i+1, msg)
			}
		}
	}
	return ""
}

func describeType(t reflect.Type) string {
	if t == durationType {
		return `a duration string such as "90s"`
	}
	switch t.Kind() {
	case reflect.Pointer:
		return describeType(t.Elem())
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		return "an array"
	}
	return t.String()
}

func describeValue(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("a string (%q)", v)
	case int64:
		return fmt.Sprintf("an integer (%d)", v)
	case float64:
		return fmt.Sprintf("a float (%v)", v)
	case bool:
		return fmt.Sprintf("a boolean (%v)", v)
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	case time.Time:
		return "a date/time"
	}
	return fmt.Sprintf("%T", v)
}

// lookup finds the raw value of key k, if every level above it is a table.
func lookup(raw map[string]any, k toml.Key) (any, bool) {
	var cur any = raw
	for _, p := range k {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// suggest returns the known name closest to bad, or "" when none is close.
func suggest(bad string, known []string) string {
	best, bestDist := "", -1
	for _, k := range known {
		if strings.EqualFold(k, bad) {
			return k
		}
		d := editDistance(strings.ToLower(bad), k)
		if d <= max(2, len(k)/3) && (bestDist < 0 || d < bestDist) {
			best, bestDist = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// lineOf returns the line that defines k, or the closest enclosing key that
// has one (an inline table, a table header), or 0.
func lineOf(lines map[string]int, k toml.Key) int {
	for n := len(k); n > 0; n-- {
		if l, ok := lines[k[:n].String()]; ok {
			return l
		}
	}
	return 0
}

// keyLines maps each key a TOML document defines (table headers and
// key/value lines, by toml.Key.String()) to the first line defining it. The
// decoder keeps positions private, so this is a small scanner of its own: it
// follows table headers and skips over the insides of strings and multi-line
// arrays. It is only used to point at a line; the decoder stays the judge of
// what the file means.
func keyLines(data []byte) map[string]int {
	lines := map[string]int{}
	// Every prefix too: an unknown key may be the table itself
	// ([Models.Planner] is reported as "Models").
	record := func(k toml.Key, n int) {
		for i := 1; i <= len(k); i++ {
			if _, ok := lines[k[:i].String()]; !ok {
				lines[k[:i].String()] = n
			}
		}
	}
	var table []string
	var st valueScanner
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		if st.open() {
			st.scan(line)
			continue
		}
		s := strings.TrimLeft(line, " \t\ufeff")
		switch {
		case s == "" || s[0] == '#':
			continue
		case strings.HasPrefix(s, "[["):
			if k, _, ok := scanKey(s[2:]); ok {
				table = k
				record(k, n)
			}
			continue
		case s[0] == '[':
			if k, _, ok := scanKey(s[1:]); ok {
				table = k
				record(k, n)
			}
			continue
		}
		k, rest, ok := scanKey(s)
		rest = strings.TrimLeft(rest, " \t")
		if !ok || !strings.HasPrefix(rest, "=") {
			continue
		}
		record(append(slices.Clone(table), k...), n)
		st.scan(rest[1:])
	}
	return lines
}

// scanKey reads a dotted key (bare, "basic" or 'literal' parts) from the
// start of s and returns it with the rest of s.
func scanKey(s string) (toml.Key, string, bool) {
	var k toml.Key
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return nil, s, false
		}
		switch s[0] {
		case '"':
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return nil, s, false
			}
			part, err := strconv.Unquote(s[:end+1])
			if err != nil {
				part = s[1:end]
			}
			k = append(k, part)
			s = s[end+1:]
		case '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, s, false
			}
			k = append(k, s[1:end+1])
			s = s[end+2:]
		default:
			end := 0
			for end < len(s) && isBareKeyChar(s[end]) {
				end++
			}
			if end == 0 {
				return nil, s, false
			}
			k = append(k, s[:end])
			s = s[end:]
		}
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ".") {
			return k, s, true
		}
		s = s[1:]
	}
}

func isBareKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// valueScanner follows a value across lines: open brackets and multi-line
// strings, so that their insides are not mistaken for keys.
type valueScanner struct {
	depth int
	multi string // `"""` or `'''` while inside a multi-line string
}

func (v *valueScanner) open() bool { return v.depth > 0 || v.multi != "" }

func (v *valueScanner) scan(s string) {
	for i := 0; i < len(s); {
		if v.multi != "" {
			end := strings.Index(s[i:], v.multi)
			if end < 0 {
				return
			}
			i += end + 3
			v.multi = ""
			continue
		}
		switch c := s[i]; c {
		case '#':
			return
		case '"', '\'':
			if strings.HasPrefix(s[i:], strings.Repeat(string(c), 3)) {
				v.multi = strings.Repeat(string(c), 3)
				i += 3
				continue
			}
			i++
			for i < len(s) && s[i] != c {
				if c == '"' && s[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case '[', '{':
			v.depth++
			i++
		case ']', '}':
			if v.depth > 0 {
				v.depth--
			}
			i++
		default:
			i++
		}
	}
}
