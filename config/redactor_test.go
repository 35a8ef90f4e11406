package config

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestRedactorReplacesEveryEncoding(t *testing.T) {
	const key = "sk-live/abc+def=\"quoted\"&more"
	jsonOnce, _ := json.Marshal(key)
	jsonTwice, _ := json.Marshal(string(jsonOnce))
	r := NewRedactor([]string{key, "short"})
	tests := []struct{ name, in string }{
		{"raw", "Incorrect API key provided: " + key + "."},
		{"base64", "auth " + base64.StdEncoding.EncodeToString([]byte(key))},
		{"base64 raw url", "auth " + base64.RawURLEncoding.EncodeToString([]byte(key))},
		{"query escaped", "https://x/?key=" + url.QueryEscape(key)},
		{"path escaped", "https://x/" + url.PathEscape(key) + "/v1"},
		{"json escaped", `{"error":` + string(jsonOnce) + `}`},
		{"json escaped twice", `{"body":` + string(jsonTwice) + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.String(tt.in)
			if !strings.Contains(got, Redacted) || r.Leaks([]byte(got)) {
				t.Errorf("String(%q) = %q", tt.in, got)
			}
			if b := r.Bytes([]byte(tt.in)); string(b) != got {
				t.Errorf("Bytes = %q, String = %q", b, got)
			}
			if !r.Leaks([]byte(tt.in)) {
				t.Errorf("Leaks(%q) = false", tt.in)
			}
		})
	}
	// A short secret only where it stands alone.
	if got := r.String("a shortcut"); got != "a shortcut" {
		t.Errorf("short secret replaced inside text: %q", got)
	}
	if got := r.String("--key=short"); got != "--key="+Redacted {
		t.Errorf("short secret after '=': %q", got)
	}
}

func TestRedactingWriter(t *testing.T) {
	const key = "sk-writer-0123456789"
	var buf bytes.Buffer
	w := NewRedactor([]string{key}).Writer(&buf)
	n, err := w.Write([]byte("error: HTTP 401: bad key " + key + "\n"))
	if err != nil || n != len("error: HTTP 401: bad key "+key+"\n") {
		t.Fatalf("Write = %d, %v; want the input's length", n, err)
	}
	if got := buf.String(); got != "error: HTTP 401: bad key "+Redacted+"\n" {
		t.Errorf("wrote %q", got)
	}
	var nilR *Redactor
	if got := nilR.String(key); got != key {
		t.Errorf("a nil Redactor changed %q", got)
	}
}

// Error takes a secret out of an error's message and keeps the error
// reachable, so exit codes and causes found with errors.Is still hold.
func TestRedactorError(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	cause := errors.New("endpoint refused")
	r := NewRedactor([]string{key})
	tests := []struct {
		name     string
		r        *Redactor
		err      error
		wantMsg  string
		wantSame bool
	}{
		{"nil error", r, nil, "", true},
		{"no secret in it", r, fmt.Errorf("call: %w", cause), "call: endpoint refused", true},
		{"secret in it", r, fmt.Errorf("call with %s: %w", key, cause), "call with " + Redacted + ": endpoint refused", false},
		{"nil redactor", nil, fmt.Errorf("call with %s: %w", key, cause), "call with " + key + ": endpoint refused", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.r.Error(tt.err)
			if tt.err == nil {
				if got != nil {
					t.Fatalf("Error(nil) = %v", got)
				}
				return
			}
			if got.Error() != tt.wantMsg {
				t.Errorf("message %q, want %q", got.Error(), tt.wantMsg)
			}
			if (got == tt.err) != tt.wantSame {
				t.Errorf("returned the same error: %v, want %v", got == tt.err, tt.wantSame)
			}
			if !errors.Is(got, cause) {
				t.Errorf("the cause is no longer reachable from %v", got)
			}
		})
	}
}
