package config

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"strings"
)

// Redactor is the one redaction step for everything the harness writes to
// disk or prints: it replaces every secret by Redacted, raw and in the
// encodings in which a secret travels in text — base64 (standard and URL
// alphabets, padded or not), URL-encoded (query and path), and JSON-escaped
// (once and twice, as inside an encoded JSON string). Secrets shorter than
// eight characters are replaced only where they stand alone (see Redact):
// inside other text they cannot be told from it. A nil Redactor changes
// nothing.
type Redactor struct {
	// forms are the long secrets and their encodings, longest first, so
	// that a longer form is replaced before a shorter one inside it.
	forms []string
	short []string
}

// NewRedactor returns the Redactor of secrets (empty ones are ignored).
func NewRedactor(secrets []string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		switch {
		case s == "":
		case len(s) < minEmbeddedSecret:
			r.short = append(r.short, s)
		default:
			r.forms = append(r.forms, encodings(s)...)
		}
	}
	slices.SortFunc(r.forms, func(a, b string) int { return len(b) - len(a) })
	r.forms = slices.Compact(r.forms)
	return r
}

// Redactor is the redaction step for c's secrets (see Secrets).
func (c *Config) Redactor() *Redactor { return NewRedactor(c.Secrets()) }

// encodings lists s and the forms it takes inside encoded text.
func encodings(s string) []string {
	b := []byte(s)
	out := []string{s,
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
		url.QueryEscape(s), url.PathEscape(s)}
	once := jsonEscape(s)
	out = append(out, once, jsonEscape(once))
	return out
}

// jsonEscape is s as it appears inside a JSON string.
func jsonEscape(s string) string {
	q, err := json.Marshal(s)
	if err != nil {
		return s
	}
	return string(q[1 : len(q)-1])
}

// Error returns err with every secret taken out of its message. The
// result still unwraps to err, so errors.Is and errors.As (exit codes,
// causes) work as before; an err whose message holds no secret is
// returned as it is.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := r.String(msg); clean != msg {
		return &redactedError{msg: clean, err: err}
	}
	return err
}

// redactedError is an error whose message had a secret taken out.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// String returns s with every secret replaced.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	for _, f := range r.forms {
		if strings.Contains(s, f) {
			s = strings.ReplaceAll(s, f, Redacted)
		}
	}
	for _, sec := range r.short {
		switch {
		case s == sec:
			s = Redacted
		case strings.HasSuffix(s, "="+sec):
			s = strings.TrimSuffix(s, sec) + Redacted
		}
	}
	return s
}

// Bytes returns b with every long secret replaced, in any of its forms.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	for _, f := range r.forms {
		if bytes.Contains(b, []byte(f)) {
			b = bytes.ReplaceAll(b, []byte(f), []byte(Redacted))
		}
	}
	return b
}

// Leaks reports whether b still holds a long secret in any of its forms.
func (r *Redactor) Leaks(b []byte) bool {
	if r == nil {
		return false
	}
	for _, f := range r.forms {
		if bytes.Contains(b, []byte(f)) {
			return true
		}
	}
	return false
}

// Writer returns a writer that redacts what each Write carries before
// passing it to w (a secret split across two writes is not caught: the
// harness writes each message in one call).
func (r *Redactor) Writer(w io.Writer) io.Writer {
	if r == nil || (len(r.forms) == 0 && len(r.short) == 0) {
		return w
	}
	return redactingWriter{r: r, w: w}
}

type redactingWriter struct {
	r *Redactor
	w io.Writer
}

func (rw redactingWriter) Write(p []byte) (int, error) {
	if _, err := rw.w.Write(rw.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
