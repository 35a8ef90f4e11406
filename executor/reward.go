package executor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Reward modes: how a trial's reward is derived from what the verifier wrote.
const (
	// RewardModeVerifier uses the verifier's reward as written.
	RewardModeVerifier = "verifier"
	// RewardModeBinary scores 1 when the verifier's reward is (within
	// rounding) 1, else 0.
	RewardModeBinary = "binary"
	// RewardModeFraction scores passed/total from the CTRF report when it
	// lists at least one test, else the verifier's reward.
	RewardModeFraction = "fraction"
)

// MainRewardKey is the entry of reward.json that holds the main reward.
const MainRewardKey = "reward"

// binaryTolerance absorbs rounding in verifiers that compute 1 as a sum of
// fractions.
const binaryTolerance = 1e-9

// decimalNumber is the only syntax a reward may have. strconv.ParseFloat alone
// would also take hex floats, underscores, "inf" and "nan"; none of them is
// something a verifier means to write.
var decimalNumber = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// ParseReward reads the verifier's reward files. reward.json wins when it is
// present (haveJSON), even if it is invalid: a verifier that wrote it meant
// it, and falling back to reward.txt would hide the mistake. reward.json must
// be a flat object of finite numbers whose main entry is "reward" (or its
// only entry); reward.txt must hold exactly one decimal number. The main
// reward must lie in [0, 1]. Any other content, or no file at all, is an
// error: a missing reward is never a zero.
//
// all holds every entry (for reward.txt, just "reward").
func ParseReward(txt, jsonData []byte, haveTxt, haveJSON bool) (reward float64, all map[string]float64, err error) {
	switch {
	case haveJSON:
		all, err = parseRewardJSON(jsonData)
		if err != nil {
			return 0, nil, fmt.Errorf("reward.json: %w", err)
		}
		key, err := mainRewardKey(all)
		if err != nil {
			return 0, nil, fmt.Errorf("reward.json: %w", err)
		}
		reward = all[key]
		if err := checkUnitRange(reward); err != nil {
			return 0, nil, fmt.Errorf("reward.json: %q: %w", key, err)
		}
		return normalizeZero(reward), all, nil
	case haveTxt:
		reward, err = parseRewardText(txt)
		if err != nil {
			return 0, nil, fmt.Errorf("reward.txt: %w", err)
		}
		return reward, map[string]float64{MainRewardKey: reward}, nil
	default:
		return 0, nil, errors.New("the verifier wrote neither /logs/verifier/reward.txt nor /logs/verifier/reward.json")
	}
}

func parseRewardText(data []byte) (float64, error) {
	s := strings.TrimSpace(string(data))
	if s == "" {
		return 0, errors.New("file is empty; it must hold one number in [0, 1]")
	}
	if fields := strings.Fields(s); len(fields) > 1 {
		return 0, fmt.Errorf("file holds %d values; it must hold exactly one number in [0, 1]", len(fields))
	}
	v, err := parseDecimal(s)
	if err != nil {
		return 0, err
	}
	if err := checkUnitRange(v); err != nil {
		return 0, err
	}
	return normalizeZero(v), nil
}

func parseDecimal(s string) (float64, error) {
	if !decimalNumber.MatchString(s) {
		return 0, fmt.Errorf("%q is not a decimal number", Clip(s, 40))
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a finite number", Clip(s, 40))
	}
	return v, nil
}

// parseRewardJSON decodes a flat object of finite numbers, rejecting
// anything after it.
func parseRewardJSON(data []byte) (map[string]float64, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("file is empty; it must hold a JSON object such as {\"reward\": 1}")
		}
		return nil, fmt.Errorf("not a JSON object of numbers: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON object")
	}
	if raw == nil {
		return nil, errors.New("null is not a JSON object of numbers")
	}
	if len(raw) == 0 {
		return nil, errors.New("the object is empty; it needs at least a \"reward\" entry")
	}
	out := make(map[string]float64, len(raw))
	for k, v := range raw {
		n, ok := v.(json.Number)
		if !ok {
			return nil, fmt.Errorf("entry %q is %s, not a number", Clip(k, 40), jsonKind(v))
		}
		f, err := n.Float64()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("entry %q: %s is not a finite number", Clip(k, 40), Clip(n.String(), 40))
		}
		out[k] = f
	}
	return out, nil
}

func mainRewardKey(all map[string]float64) (string, error) {
	if _, ok := all[MainRewardKey]; ok {
		return MainRewardKey, nil
	}
	if len(all) == 1 {
		for k := range all {
			return k, nil
		}
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return "", fmt.Errorf("no %q entry among %d entries (%s); name the main one %q",
		MainRewardKey, len(keys), Clip(strings.Join(keys, ", "), 80), MainRewardKey)
}

func checkUnitRange(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1 {
		return fmt.Errorf("%v is outside [0, 1]", v)
	}
	return nil
}

// normalizeZero turns -0 into 0 so traces never print "-0".
func normalizeZero(v float64) float64 {
	if v == 0 {
		return 0
	}
	return v
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// ValidRewardMode reports whether mode is one ApplyRewardMode knows; the empty
// string means RewardModeVerifier.
func ValidRewardMode(mode string) bool {
	switch mode {
	case "", RewardModeVerifier, RewardModeBinary, RewardModeFraction:
		return true
	}
	return false
}

// ApplyRewardMode turns the verifier's reward (already validated to be in
// [0, 1]) into the trial's reward under mode. tests and haveTests are the
// CTRF results, used by RewardModeFraction.
func ApplyRewardMode(mode string, verifierReward float64, tests Tests, haveTests bool) (float64, error) {
	switch mode {
	case "", RewardModeVerifier:
		return verifierReward, nil
	case RewardModeBinary:
		if verifierReward >= 1-binaryTolerance {
			return 1, nil
		}
		return 0, nil
	case RewardModeFraction:
		if haveTests && tests.Total > 0 {
			f := float64(tests.Passed) / float64(tests.Total)
			return math.Min(1, math.Max(0, f)), nil
		}
		return verifierReward, nil
	default:
		return 0, fmt.Errorf("unknown reward mode %q: use %q, %q or %q", mode,
			RewardModeVerifier, RewardModeBinary, RewardModeFraction)
	}
}

// Clip shortens s to at most n bytes for an error message, keeping it valid UTF-8.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
