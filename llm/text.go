package llm

import (
	"hash/fnv"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Truncate cuts s to at most n bytes without splitting a UTF-8 character,
// marking the cut with "...".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 3 {
		return s[:runeStart(s, n)]
	}
	return s[:runeStart(s, n-3)] + "..."
}

// runeStart moves i back to the start of the character it falls in.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// oneLine collapses all whitespace runs to single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// estimateTokens is the rough token count of a message: a quarter of its
// characters, which is close enough to plan compaction.
func estimateTokens(m Message) int {
	n := len(m.Content) + len(m.Role) + len(m.ToolCallID) + len(m.Name)
	for _, tc := range m.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
	}
	return n/4 + 1
}

// EstimateTokens is the rough token count of a transcript (characters / 4).
func EstimateTokens(msgs []Message) int {
	total := 0
	for _, m := range msgs {
		total += estimateTokens(m)
	}
	return total
}

// OfflineHash is a deterministic 64-bit hash of a seed and strings, for
// players that vary their answers by seed and input. Each part is
// length-prefixed so ("ab","c") and ("a","bc") differ.
func OfflineHash(seed int64, parts ...string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(strconv.FormatInt(seed, 10)))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	// A final mix spreads FNV's weak low bits, which modulo decisions use.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
