package stats

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// BootstrapMacroCIOf is BootstrapMacroCI from per-task summaries: the same
// two-stage bootstrap (tasks with replacement, then each drawn task's
// rewards with replacement), drawn without visiting trials. Tasks with the
// same counts are interchangeable, so stage one only decides how many
// times each group of identical tasks is drawn (a multinomial draw over
// the groups), and stage two how many of the trials redrawn for a group
// take each value (a multinomial draw over its distinct values): with
// rewards in {0, 1} one binomial draw per group. A replicate costs a few
// draws per group whatever the numbers of tasks and trials, and its
// distribution is exactly that of the trial-by-trial draw.
func BootstrapMacroCIOf(tasks []Rewards, B int, level float64, seed uint64) (lo, hi float64) {
	groups := groupTasks(tasks)
	if len(groups) == 0 || !validBootstrap(B, level) {
		return math.NaN(), math.NaN()
	}
	T := 0
	for _, g := range groups {
		T += g.tasks
	}
	bs := newBinomialSampler(newRand(seed))
	reps := make([]float64, B)
	for b := range reps {
		left, weight := T, T
		var sum float64
		for i, g := range groups {
			m := left
			if i < len(groups)-1 {
				m = bs.draw(left, float64(g.tasks)/float64(weight))
			}
			left, weight = left-m, weight-g.tasks
			if m > 0 {
				sum += g.redraw(bs, m)
			}
		}
		reps[b] = sum / float64(T)
	}
	return percentiles(reps, level)
}

// taskGroup is a set of tasks with identical reward counts.
type taskGroup struct {
	tasks  int
	n      int
	values []float64
	counts []int
}

// groupTasks groups the tasks that have rewards by identical counts, in
// a fixed order (first appearance), so a seed always gives the same draws.
func groupTasks(tasks []Rewards) []taskGroup {
	var groups []taskGroup
	var reps []Rewards
	for _, r := range tasks {
		if r.N() == 0 {
			continue
		}
		if i := slices.IndexFunc(reps, r.sameCounts); i >= 0 {
			groups[i].tasks++
			continue
		}
		g := taskGroup{tasks: 1, n: r.N()}
		r.each(func(v float64, c int32) {
			g.values = append(g.values, v)
			g.counts = append(g.counts, int(c))
		})
		groups, reps = append(groups, g), append(reps, r)
	}
	return groups
}

// redraw is the sum of the means of m tasks of the group, each mean over
// n rewards drawn with replacement from the group's own: m·n draws from
// the group's values, split among them by a multinomial draw.
func (g taskGroup) redraw(bs *binomialSampler, m int) float64 {
	left, weight := m*g.n, g.n
	var sum float64
	for i, v := range g.values {
		k := left
		if i < len(g.values)-1 {
			k = bs.draw(left, float64(g.counts[i])/float64(weight))
		}
		left, weight = left-k, weight-g.counts[i]
		sum += v * float64(k)
	}
	return sum / float64(g.n)
}

// maxTableN is the largest n whose binomial distribution is kept as a
// table; maxTables caps how many are kept.
const (
	maxTableN = 4096
	maxTables = 4096
)

// binomialSampler draws from binomial distributions by inverting their
// cumulative distribution, a table per (n, p) kept for the bootstrap's
// duration: a bootstrap asks for the same few distributions thousands of
// times.
type binomialSampler struct {
	rng    *rand.Rand
	tables map[binomialKey][]float64
}

type binomialKey struct {
	n int
	p float64
}

func newBinomialSampler(rng *rand.Rand) *binomialSampler {
	return &binomialSampler{rng: rng, tables: map[binomialKey][]float64{}}
}

// draw returns a Binomial(n, p) variate.
func (s *binomialSampler) draw(n int, p float64) int {
	switch {
	case n <= 0 || p <= 0:
		return 0
	case p >= 1:
		return n
	}
	key := binomialKey{n, p}
	cdf, ok := s.tables[key]
	if !ok {
		if n > maxTableN || len(s.tables) >= maxTables {
			return int(distuv.Binomial{N: float64(n), P: p, Src: s.rng}.Rand())
		}
		cdf = binomialCDF(n, p)
		s.tables[key] = cdf
	}
	u := s.rng.Float64()
	k, _ := slices.BinarySearch(cdf, u)
	// u < cdf[n] = 1 always; min guards the last entry's rounding.
	return min(k, n)
}

// binomialCDF tabulates P(X <= k) for k = 0..n, built outward from the
// mode so that no term underflows before the ones that matter.
func binomialCDF(n int, p float64) []float64 {
	pmf := make([]float64, n+1)
	mode := int(math.Floor(float64(n+1) * p))
	mode = min(max(mode, 0), n)
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	pmf[mode] = math.Exp(lg(n) - lg(mode) - lg(n-mode) + float64(mode)*math.Log(p) + float64(n-mode)*math.Log1p(-p))
	odds := p / (1 - p)
	for k := mode; k < n; k++ {
		pmf[k+1] = pmf[k] * float64(n-k) / float64(k+1) * odds
	}
	for k := mode; k > 0; k-- {
		pmf[k-1] = pmf[k] * float64(k) / float64(n-k+1) / odds
	}
	var total float64
	for _, v := range pmf {
		total += v
	}
	var acc float64
	for k, v := range pmf {
		acc += v / total
		pmf[k] = acc
	}
	pmf[n] = 1
	return pmf
}
