package cli

import (
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// statusSep separates the parts of the live status line.
const statusSep = " | "

// dropOrder lists the status line's parts (by position in progress.status:
// rows, trials, statuses, active iterations, spend, time) in the order they
// give way when the line is too wide: what a glance needs most stays.
var dropOrder = []int{3, 2, 0, 4}

// terminalWidth is the width in columns of the terminal w writes to: its
// size when it is one, else $COLUMNS, else 0 (unknown: no limit).
func terminalWidth(w io.Writer, getenv func(string) string) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	if getenv != nil {
		if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// abbreviations shorten the status line's longest words when it does not fit.
var abbreviations = strings.NewReplacer("held-out evaluation ", "eval ", "validation ", "valid ")

// fitStatus shortens a status line to fewer than width columns, so a
// terminal never wraps it (a wrapped line cannot be redrawn in place and
// scrolls): long words are abbreviated, whole parts dropped in dropOrder,
// then the longest part left is cut with an ellipsis, so the time left
// stays in view. width 0 leaves the line as it is.
func fitStatus(s string, width int) string {
	if width <= 0 {
		return s
	}
	limit := width - 1 // the last column would make some terminals wrap
	if columns(s) <= limit {
		return s
	}
	parts := strings.Split(abbreviations.Replace(s), statusSep)
	if len(parts) == 6 {
		keep := make([]bool, len(parts))
		for i := range keep {
			keep[i] = true
		}
		for _, drop := range append([]int{-1}, dropOrder...) {
			if drop >= 0 {
				keep[drop] = false
			}
			var kept []string
			for j, p := range parts {
				if keep[j] {
					kept = append(kept, p)
				}
			}
			if s = strings.Join(kept, statusSep); columns(s) <= limit {
				return s
			}
		}
		parts = strings.Split(s, statusSep)
	}
	longest := 0
	for i, p := range parts {
		if columns(p) > columns(parts[longest]) {
			longest = i
		}
	}
	if excess := columns(s) - limit; columns(parts[longest]) > excess+1 {
		parts[longest] = cut(parts[longest], columns(parts[longest])-excess)
		return strings.Join(parts, statusSep)
	}
	return cut(s, limit)
}

// dropEmptyParts removes the empty parts of a status line, so none shows
// as "|  |".
func dropEmptyParts(s string) string {
	parts := strings.Split(s, statusSep)
	kept := parts[:0]
	for _, p := range parts {
		if strings.TrimSpace(p) != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, statusSep)
}

// cut shortens s to n columns, its last an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	switch {
	case len(r) <= n:
		return s
	case n < 1:
		return ""
	}
	return string(r[:n-1]) + "…"
}

func columns(s string) int { return utf8.RuneCountInString(s) }
