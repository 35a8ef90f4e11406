package config

import (
	"reflect"
	"testing"
)

func TestRedactReachesEveryString(t *testing.T) {
	const key = "sk-test-0123456789"
	type record struct {
		Text   string
		List   []string
		Nested map[string]any
		Ptr    *string
	}
	text := "Bearer " + key
	tests := []struct {
		name string
		in   record
		want record
	}{
		{"plain field", record{Text: "key " + key}, record{Text: "key " + Redacted}},
		{"slice", record{List: []string{key, "ok"}}, record{List: []string{Redacted, "ok"}}},
		{"decoded JSON in interfaces, keys too", record{Nested: map[string]any{
			key: "v", "a": []any{"x " + key, map[string]any{"b": key}}, "n": 3.0}},
			record{Nested: map[string]any{Redacted: "v", "a": []any{"x " + Redacted, map[string]any{"b": Redacted}}, "n": 3.0}}},
		{"pointer", record{Ptr: &text}, record{Ptr: ptr("Bearer " + Redacted)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in
			Redact(&got, []string{key})
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Redact = %#v, want %#v", got, tt.want)
			}
		})
	}
}
