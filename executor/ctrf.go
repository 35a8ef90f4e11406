package executor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Limits on what a CTRF report may put into a trace; the counts always cover
// every test.
const (
	maxCTRFResults    = 500
	maxCTRFMessage    = 500
	maxCTRFName       = 300
	maxCTRFCount      = 1 << 30
	secondsEpochLimit = 1e11 // summary.start below this is in seconds, not milliseconds
)

// ParseCTRF reads a CTRF test report leniently, as real reports deviate from
// the schema: reportFormat and specVersion may be missing, numbers may be
// floats (pytest-json-ctrf writes seconds), statuses may be unknown ("other"),
// and unknown keys are ignored. Counts come from the tests array when it has
// entries, else from the summary. Only a document that is not JSON or has no
// results object is an error.
//
// Durations are reported in milliseconds: when summary.start looks like
// seconds since the epoch, test durations are taken to be seconds as well.
func ParseCTRF(data []byte) (Tests, error) {
	var doc struct {
		Results *struct {
			Summary map[string]json.RawMessage `json:"summary"`
			Tests   []json.RawMessage          `json:"tests"`
		} `json:"results"`
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return Tests{}, errors.New("ctrf.json is empty")
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return Tests{}, fmt.Errorf("ctrf.json is not a CTRF report: %w", err)
	}
	if doc.Results == nil {
		return Tests{}, errors.New("ctrf.json has no \"results\" object")
	}
	summary := doc.Results.Summary
	scale := 1.0
	if start, ok := flexNumber(summary["start"]); ok && start > 0 && start < secondsEpochLimit {
		scale = 1000
	}

	var t Tests
	for _, raw := range doc.Results.Tests {
		var entry map[string]json.RawMessage
		if json.Unmarshal(raw, &entry) != nil || entry == nil {
			continue // not an object: nothing to count
		}
		r := TestResult{
			Name:    Clip(flexString(entry["name"]), maxCTRFName),
			Status:  normalizeTestStatus(flexString(entry["status"])),
			Message: Clip(flexString(entry["message"]), maxCTRFMessage),
		}
		if d, ok := flexNumber(entry["duration"]); ok && d >= 0 && !math.IsInf(d*scale, 0) {
			r.Duration = d * scale
		}
		t.Total++
		switch r.Status {
		case "passed":
			t.Passed++
		case "failed":
			t.Failed++
		case "skipped":
			t.Skipped++
		}
		if len(t.Results) < maxCTRFResults {
			t.Results = append(t.Results, r)
		}
	}
	if t.Total > 0 {
		return t, nil
	}

	t.Passed = summaryCount(summary, "passed")
	t.Failed = summaryCount(summary, "failed")
	t.Skipped = summaryCount(summary, "skipped")
	t.Total = summaryCount(summary, "tests")
	// An inconsistent summary must never yield passed > total.
	t.Total = max(t.Total, t.Passed+t.Failed+t.Skipped)
	return t, nil
}

func normalizeTestStatus(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "passed", "failed", "skipped", "pending", "other":
		return s
	}
	return "other"
}

// summaryCount reads a non-negative count, tolerating floats and numeric strings.
func summaryCount(summary map[string]json.RawMessage, key string) int {
	v, ok := flexNumber(summary[key])
	if !ok || v <= 0 {
		return 0
	}
	return int(math.Min(math.Floor(v), maxCTRFCount))
}

// flexNumber reads a JSON number or a string holding one.
func flexNumber(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return f, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, true
		}
	}
	return 0, false
}

// flexString reads a JSON string, or the text of any other scalar.
func flexString(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == '{' || raw[0] == '[' || string(raw) == "null" {
		return ""
	}
	return string(raw)
}
