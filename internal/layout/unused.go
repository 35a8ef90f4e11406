package layout

import (
	"fmt"
	"slices"
)

// Unused returns one line per pair that allowed permits but no package of
// pkgs imports, sorted. A permission nothing uses is a door left open: the
// next import through it would pass the check without anyone deciding it.
// Packages allowed everything ("*") have no pairs to use.
func Unused(pkgs []Package, allowed map[string][]string) []string {
	used := map[[2]string]bool{}
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			used[[2]string{p.Path, imp}] = true
		}
	}
	var out []string
	for from, tos := range allowed {
		for _, to := range tos {
			if to == "*" || used[[2]string{from, to}] {
				continue
			}
			out = append(out, fmt.Sprintf("Allowed() lets %s import %s, which it does not: remove the pair (add it back when an import needs it)", from, to))
		}
	}
	slices.Sort(out)
	return out
}
