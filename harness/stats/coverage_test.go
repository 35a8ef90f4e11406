package stats_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mediated-coevo/harness/harness/stats"
)

// The simulator below generates rows from a known truth and knows nothing
// of how the intervals are computed: it draws tasks, seeds and Bernoulli
// trials on the logit scale and hands the rewards over as a caller would.
// The true difference is the population mean over tasks and seeds, found
// by its own Monte Carlo integral, never from a sample the interval sees.

// world is the truth a replicate is drawn from.
type world struct {
	tasks, trials, seeds int
	// taskSD spreads task difficulty (logit of the baseline's rate).
	taskSD float64
	// shift is the row's effect on the logit scale and shiftSD how much it
	// differs by task; seedSD is each run's own luck, shared by its tasks.
	shift, shiftSD, seedSD float64
}

func logistic(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// truth is E[logistic(mu+shift+tau+u) - logistic(mu+u')] over the
// population, from n draws of a generator that no replicate uses.
func (w world) truth() float64 {
	if w.shift == 0 && w.shiftSD == 0 {
		return 0 // the two rows are drawn alike
	}
	rng := rand.New(rand.NewPCG(987654321, 1))
	const n = 2_000_000
	var sum float64
	for range n {
		mu := rng.NormFloat64() * w.taskSD
		tau := rng.NormFloat64() * w.shiftSD
		u, v := rng.NormFloat64()*w.seedSD, rng.NormFloat64()*w.seedSD
		sum += logistic(mu+w.shift+tau+u) - logistic(mu+v)
	}
	return sum / n
}

// rowTruth is E[logistic(mu+shift+tau+u)]: the shifted row's own mean
// reward over the population, by the same kind of integral.
func (w world) rowTruth() float64 {
	rng := rand.New(rand.NewPCG(123456789, 1))
	const n = 2_000_000
	var sum float64
	for range n {
		mu := rng.NormFloat64() * w.taskSD
		sum += logistic(mu + w.shift + rng.NormFloat64()*w.shiftSD + rng.NormFloat64()*w.seedSD)
	}
	return sum / n
}

// draw gives one replicate: the baseline and len(shifts) rows, each as one
// map per seed. Rows share the tasks (their difficulty) with the baseline;
// every row gets its own seeds' luck and its own trials.
func (w world) draw(rng *rand.Rand, rows int) (base []map[string][]float64, others [][]map[string][]float64) {
	mu := make([]float64, w.tasks)
	for t := range mu {
		mu[t] = rng.NormFloat64() * w.taskSD
	}
	run := func(shift, shiftSD float64) []map[string][]float64 {
		tau := make([]float64, w.tasks)
		for t := range tau {
			tau[t] = shift + rng.NormFloat64()*shiftSD
		}
		out := make([]map[string][]float64, w.seeds)
		for s := range out {
			u := rng.NormFloat64() * w.seedSD
			out[s] = map[string][]float64{}
			for t := range w.tasks {
				p := logistic(mu[t] + tau[t] + u)
				r := make([]float64, w.trials)
				for k := range r {
					if rng.Float64() < p {
						r[k] = 1
					}
				}
				out[s][fmt.Sprintf("t%02d", t)] = r
			}
		}
		return out
	}
	base = run(0, 0)
	for range rows {
		others = append(others, run(w.shift, w.shiftSD))
	}
	return base, others
}

// coverage is the share of reps replicates whose interval for the row's
// difference to the baseline holds the truth.
func coverage(t testing.TB, w world, reps int, seed uint64) float64 {
	truth := w.truth()
	rng := rand.New(rand.NewPCG(seed, 2))
	hit := 0
	for range reps {
		base, rows := w.draw(rng, 1)
		res, err := stats.ComparePaired(rows[0], base, 0.95, 2000, 1)
		if err != nil {
			t.Fatal(err)
		}
		if res.Low <= truth && truth <= res.High {
			hit++
		}
	}
	return float64(hit) / float64(reps)
}

// familywise is the share of replicates in which Holm's correction at 5%
// declares any of rows null rows different from the baseline.
func familywise(t testing.TB, w world, rows, reps int, seed uint64) float64 {
	rng := rand.New(rand.NewPCG(seed, 3))
	any := 0
	for range reps {
		base, others := w.draw(rng, rows)
		p := make([]float64, rows)
		for i, r := range others {
			res, err := stats.ComparePaired(r, base, 0.95, 2000, 1)
			if err != nil {
				t.Fatal(err)
			}
			p[i] = res.P
		}
		_, reject, err := stats.Holm(p, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reject {
			if r {
				any++
				break
			}
		}
	}
	return float64(any) / float64(reps)
}

// bootstrapCoverage is coverage for HierarchicalBootstrapCI, reported to
// show why the comparison does not use it with few seeds.
func bootstrapCoverage(t testing.TB, w world, reps int, seed uint64) float64 {
	truth := w.truth()
	rng := rand.New(rand.NewPCG(seed, 4))
	hit := 0
	for i := range reps {
		base, rows := w.draw(rng, 1)
		cells, _ := stats.PairedCells(rows[0], base)
		lo, hi, err := stats.HierarchicalBootstrapCI(cells, 1000, 0.95, uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		if lo <= truth && truth <= hi {
			hit++
		}
	}
	return float64(hit) / float64(reps)
}

// Scenarios: tasks differ in difficulty (sd 1 on the logit scale, rates
// mostly between 0.15 and 0.85); a shifted row gains 0.8 on the logit scale
// (about +0.15 in mean reward) with an effect that differs by task (sd 0.5).
var (
	null    = world{tasks: 10, trials: 3, seeds: 1, taskSD: 1}
	shifted = world{tasks: 10, trials: 3, seeds: 1, taskSD: 1, shift: 0.8, shiftSD: 0.5}
)

func with(w world, tasks, trials, seeds int, seedSD float64) world {
	w.tasks, w.trials, w.seeds, w.seedSD = tasks, trials, seeds, seedSD
	return w
}

// coverageCases are the claims docs/statistics.md reports, with the bound
// each must meet.
var coverageCases = []struct {
	name  string
	w     world
	bound float64
}{
	{"paired/null/5x3", with(null, 5, 3, 1, 0), 0.94},
	{"paired/shifted/5x3", with(shifted, 5, 3, 1, 0), 0.94},
	{"paired/null/10x3", null, 0.94},
	{"paired/shifted/10x3", shifted, 0.94},
	{"paired/shifted/30x3", with(shifted, 30, 3, 1, 0), 0.94},
	{"paired/null/30x3", with(null, 30, 3, 1, 0), 0.94},
	{"paired/null/30x10", with(null, 30, 10, 1, 0), 0.94},
	{"paired/shifted/30x10", with(shifted, 30, 10, 1, 0), 0.94},
	{"seeds/null/10x3x3-sd0.5", with(null, 10, 3, 3, 0.5), 0.935},
	{"seeds/shifted/10x3x3-sd0.5", with(shifted, 10, 3, 3, 0.5), 0.935},
	{"seeds/shifted/5x3x3-sd0.5", with(shifted, 5, 3, 3, 0.5), 0.935},
	{"seeds/shifted/10x10x3-sd0.5", with(shifted, 10, 10, 3, 0.5), 0.935},
	{"seeds/shifted/10x10x3-sd1", with(shifted, 10, 10, 3, 1), 0.935},
	{"seeds/null/30x3x3-sd0.5", with(null, 30, 3, 3, 0.5), 0.935},
	{"seeds/shifted/30x3x3-sd0.5", with(shifted, 30, 3, 3, 0.5), 0.935},
	{"seeds/null/30x10x3-sd0.5", with(null, 30, 10, 3, 0.5), 0.935},
	{"seeds/shifted/30x10x3-sd0.5", with(shifted, 30, 10, 3, 0.5), 0.935},
	{"seeds/task-heavy/30x10x3-sd0.1", world{tasks: 30, trials: 10, seeds: 3, taskSD: 1, shift: 0.8, shiftSD: 1.5, seedSD: 0.1}, 0.935},
}

// valueCoverage is the share of replicates whose interval for the row's
// own mean reward (t over task means, or two-way over seeds x tasks) holds
// its truth.
func valueCoverage(t testing.TB, w world, reps int, seed uint64) float64 {
	truth := w.rowTruth()
	rng := rand.New(rand.NewPCG(seed, 9))
	hit := 0
	for range reps {
		_, rows := w.draw(rng, 1)
		cells, _ := stats.SeedCells(rows[0])
		iv, err := stats.TwoWayCI(cells, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if iv.Low <= truth && truth <= iv.High {
			hit++
		}
	}
	return float64(hit) / float64(reps)
}

// BenchmarkCoverageOfValue measures the interval of a row's own mean.
func BenchmarkCoverageOfValue(b *testing.B) {
	for _, c := range valueCases {
		b.Run(c.name, func(b *testing.B) {
			var sum float64
			n := 0
			for b.Loop() {
				sum += valueCoverage(b, c.w, 2000, uint64(700+n))
				n++
			}
			b.ReportMetric(sum/float64(n), "coverage")
		})
	}
}

var valueCases = []struct {
	name string
	w    world
}{
	{"shifted/5x3", with(shifted, 5, 3, 1, 0)},
	{"shifted/10x3", shifted},
	{"shifted/10x3x3-sd0.5", with(shifted, 10, 3, 3, 0.5)},
	{"shifted/10x10x3-sd0.5", with(shifted, 10, 10, 3, 0.5)},
}

// referenceCoverage measures the methods the comparison no longer uses, so
// docs/statistics.md can say what they delivered in the same worlds:
// "percentile" is a percentile bootstrap over the per-task differences,
// "pooled" the t interval over per-task differences with the seeds' trials
// pooled as if they were one run.
func referenceCoverage(t testing.TB, w world, method string, reps int, seed uint64) float64 {
	truth := w.truth()
	rng := rand.New(rand.NewPCG(seed, 7))
	hit := 0
	for range reps {
		base, rows := w.draw(rng, 1)
		var lo, hi float64
		switch method {
		case "percentile":
			cells, _ := stats.PairedCells(rows[0], base)
			lo, hi = percentileBootstrap(cells[0], 1000, rng)
		case "pooled":
			res, err := stats.ComparePaired([]map[string][]float64{pool(rows[0])}, []map[string][]float64{pool(base)}, 0.95, 2000, 1)
			if err != nil {
				t.Fatal(err)
			}
			lo, hi = res.Low, res.High
		}
		if lo <= truth && truth <= hi {
			hit++
		}
	}
	return float64(hit) / float64(reps)
}

func pool(seeds []map[string][]float64) map[string][]float64 {
	out := map[string][]float64{}
	for _, m := range seeds {
		for id, r := range m {
			out[id] = append(out[id], r...)
		}
	}
	return out
}

// percentileBootstrap is the 95% percentile interval of the mean of d
// over B resamples of d.
func percentileBootstrap(d []float64, B int, rng *rand.Rand) (lo, hi float64) {
	reps := make([]float64, B)
	for b := range reps {
		var sum float64
		for range d {
			sum += d[rng.IntN(len(d))]
		}
		reps[b] = sum / float64(len(d))
	}
	slices.Sort(reps)
	return reps[int(0.025*float64(B))], reps[int(0.975*float64(B))-1]
}

// uncorrected is familywise without Holm: any row with p < 0.05.
func uncorrected(t testing.TB, w world, rows, reps int, seed uint64) float64 {
	rng := rand.New(rand.NewPCG(seed, 8))
	any := 0
	for range reps {
		base, others := w.draw(rng, rows)
		for _, r := range others {
			res, err := stats.ComparePaired(r, base, 0.95, 2000, 1)
			if err != nil {
				t.Fatal(err)
			}
			if res.P < 0.05 {
				any++
				break
			}
		}
	}
	return float64(any) / float64(reps)
}

// BenchmarkCoverageReference measures the replaced methods (see
// referenceCoverage) and the family-wise rate without Holm's correction.
func BenchmarkCoverageReference(b *testing.B) {
	const reps = 2000
	cases := []struct {
		name, method string
		w            world
	}{
		{"percentile/shifted/5x3", "percentile", with(shifted, 5, 3, 1, 0)},
		{"percentile/shifted/10x3", "percentile", shifted},
		{"pooled-seeds/shifted/10x3x3-sd0.5", "pooled", with(shifted, 10, 3, 3, 0.5)},
		{"pooled-seeds/shifted/10x10x3-sd0.5", "pooled", with(shifted, 10, 10, 3, 0.5)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var sum float64
			n := 0
			for b.Loop() {
				sum += referenceCoverage(b, c.w, c.method, reps, uint64(500+n))
				n++
			}
			b.ReportMetric(sum/float64(n), "coverage")
		})
	}
	b.Run("uncorrected/familywise/5-null-rows/10x3", func(b *testing.B) {
		var sum float64
		n := 0
		for b.Loop() {
			sum += uncorrected(b, null, 5, reps, uint64(600+n))
			n++
		}
		b.ReportMetric(sum/float64(n), "false-positive-rate")
	})
}

// bootstrapCases measure HierarchicalBootstrapCI where seeds matter.
var bootstrapCases = []struct {
	name string
	w    world
}{
	{"shifted/10x3x3-sd0.5", with(shifted, 10, 3, 3, 0.5)},
	{"shifted/5x3x3-sd0.5", with(shifted, 5, 3, 3, 0.5)},
	{"shifted/10x10x3-sd0.5", with(shifted, 10, 10, 3, 0.5)},
	{"shifted/10x10x3-sd1", with(shifted, 10, 10, 3, 1)},
}

// BenchmarkCoverage measures, over -benchtime's iterations of 2000
// replicates each, the coverage of the paired-difference interval, the
// family-wise false-positive rate of Holm over 5 null rows and the
// coverage of the hierarchical bootstrap. Run:
//
//	go test -bench Coverage -run '^$' -benchtime 1x ./harness/stats/
func BenchmarkCoverage(b *testing.B) {
	const reps = 2000
	for _, c := range coverageCases {
		b.Run(c.name, func(b *testing.B) {
			var sum float64
			n := 0
			for b.Loop() {
				sum += coverage(b, c.w, reps, uint64(100+n))
				n++
			}
			b.ReportMetric(sum/float64(n), "coverage")
		})
	}
	b.Run("holm/familywise/5-null-rows/10x3", func(b *testing.B) {
		var sum float64
		n := 0
		for b.Loop() {
			sum += familywise(b, null, 5, reps, uint64(200+n))
			n++
		}
		b.ReportMetric(sum/float64(n), "false-positive-rate")
	})
	for _, c := range bootstrapCases {
		b.Run("hierarchical-bootstrap/"+c.name, func(b *testing.B) {
			var sum float64
			n := 0
			for b.Loop() {
				sum += bootstrapCoverage(b, c.w, reps, uint64(300+n))
				n++
			}
			b.ReportMetric(sum/float64(n), "coverage")
		})
	}
}

// powerWorld checks the power statement on the probability scale, where
// its variance components are known: base rates uniform on [0.2, 0.5], the
// row's rate that plus the effect plus a task-specific part uniform on
// [-0.1, 0.1] (variance 0.01/3), one seed. Rates stay inside [0, 1] for
// effects up to 0.4 without clipping, which would shrink the true effect.
type powerWorld struct{ tasks, trials int }

// components are the true Variance of powerWorld at effect: Task is the
// task-specific part's variance, Trial the two arms' mean Bernoulli
// variance, by the simulator's own integral.
func (w powerWorld) components(effect float64) stats.Variance {
	rng := rand.New(rand.NewPCG(55, 5))
	const n = 1_000_000
	var trial float64
	for range n {
		p := 0.2 + 0.3*rng.Float64()
		q := p + effect + 0.2*rng.Float64() - 0.1
		trial += p*(1-p) + q*(1-q)
	}
	return stats.Variance{Task: 0.01 / 3, Trial: trial / n}
}

// detectRate is the share of reps replicates at the true effect in which
// the interval excludes 0 (t) and the sign-flip p is below 5%.
func (w powerWorld) detectRate(t testing.TB, effect float64, reps int, seed uint64) (tRate, flipRate float64) {
	rng := rand.New(rand.NewPCG(seed, 6))
	var tHits, fHits int
	for range reps {
		row, base := map[string][]float64{}, map[string][]float64{}
		for i := range w.tasks {
			id := fmt.Sprintf("t%02d", i)
			p := 0.2 + 0.3*rng.Float64()
			q := p + effect + 0.2*rng.Float64() - 0.1
			if q < 0 || q > 1 {
				t.Fatalf("rate %v outside [0, 1] at effect %v: the world cannot hold this effect", q, effect)
			}
			for range w.trials {
				row[id] = append(row[id], bern(rng, q))
				base[id] = append(base[id], bern(rng, p))
			}
		}
		res, err := stats.ComparePaired([]map[string][]float64{row}, []map[string][]float64{base}, 0.95, 2000, 1)
		if err != nil {
			t.Fatal(err)
		}
		if res.Low > 0 || res.High < 0 {
			tHits++
		}
		if res.P < 0.05 {
			fHits++
		}
	}
	return float64(tHits) / float64(reps), float64(fHits) / float64(reps)
}

func bern(rng *rand.Rand, p float64) float64 {
	if rng.Float64() < p {
		return 1
	}
	return 0
}

// BenchmarkPowerAtMDD simulates at the minimum detectable difference the
// power statement gives and reports how often the difference is detected:
// about 0.80 when the statement is right.
func BenchmarkPowerAtMDD(b *testing.B) {
	for _, w := range []powerWorld{{20, 3}, {30, 3}, {10, 10}} {
		b.Run(fmt.Sprintf("%dx%d", w.tasks, w.trials), func(b *testing.B) {
			// The components depend a little on the effect (through the
			// Bernoulli variance): two rounds settle it.
			mdd := 0.2
			for range 2 {
				var err error
				if mdd, err = stats.MinDetectableDiff(stats.Design{Tasks: w.tasks, Trials: w.trials, Seeds: 1}, w.components(mdd)); err != nil {
					b.Fatal(err)
				}
			}
			var tr, fr float64
			n := 0
			for b.Loop() {
				a, c := w.detectRate(b, mdd, 2000, uint64(400+n))
				tr, fr = tr+a, fr+c
				n++
			}
			b.ReportMetric(mdd, "mdd")
			b.ReportMetric(tr/float64(n), "power-t")
			b.ReportMetric(fr/float64(n), "power-signflip")
		})
	}
}

// TestCoverageBand is the fast guard: a few hundred replicates per claim,
// checked against a loose band, so a broken interval (a percentile
// bootstrap over five tasks covers about 87%) fails CI. The benchmark
// above measures the numbers the docs quote.
func TestCoverageBand(t *testing.T) {
	const reps = 300
	for _, c := range coverageCases {
		t.Run(c.name, func(t *testing.T) {
			// 300 replicates: a standard error of about 1.3 points at 95%.
			// Several seeds with few trials are conservative by design
			// (the seeds' degrees of freedom): only the lower bound holds.
			upper := 0.995
			if c.w.seeds > 1 {
				upper = 1
			}
			if got := coverage(t, c.w, reps, 7); got < c.bound-0.04 || got > upper {
				t.Errorf("coverage %.3f over %d replicates, want within [%.2f, %.3f]", got, reps, c.bound-0.04, upper)
			}
		})
	}
	for _, c := range valueCases {
		t.Run("value/"+c.name, func(t *testing.T) {
			if got := valueCoverage(t, c.w, reps, 9); got < 0.90 || got > 0.995 {
				t.Errorf("coverage %.3f over %d replicates, want within [0.90, 0.995]", got, reps)
			}
		})
	}
	t.Run("holm/familywise", func(t *testing.T) {
		if got := familywise(t, null, 5, reps, 8); got > 0.08 {
			t.Errorf("family-wise false positives %.3f over %d replicates, want <= 0.08", got, reps)
		}
	})
}

// bandCases are the points of a reward curve: one iteration of one seed,
// a trial or a few per task.
var bandCases = []struct {
	name         string
	tasks, trial int
}{
	{"100-tasks-x-1", 100, 1},
	{"20-tasks-x-1", 20, 1},
	{"10-tasks-x-3", 10, 3},
	{"5-tasks-x-1", 5, 1},
}

// BenchmarkCoverageOfBand measures the coverage of the reward plot's band
// (BootstrapMacroCIOf, 1000 resamples, 95%) for the row's own mean reward
// over the population of tasks, task rates drawn as in the shifted world
// with one seed. Run:
//
//	go test -bench CoverageOfBand -run '^$' -benchtime 1x ./harness/stats/
func BenchmarkCoverageOfBand(b *testing.B) {
	w := world{taskSD: 1, shift: 0.4, shiftSD: 0.3}
	truth := w.rowTruth()
	const reps = 2000
	for _, c := range bandCases {
		b.Run(c.name, func(b *testing.B) {
			var sum float64
			n := 0
			for b.Loop() {
				rng := rand.New(rand.NewPCG(uint64(400+n), 9))
				hits := 0
				for i := range reps {
					tasks := make([]stats.Rewards, c.tasks)
					for t := range tasks {
						p := logistic(rng.NormFloat64()*w.taskSD + w.shift + rng.NormFloat64()*w.shiftSD)
						for range c.trial {
							tasks[t].Add(bernoulli(rng, p))
						}
					}
					lo, hi := stats.BootstrapMacroCIOf(tasks, 1000, 0.95, uint64(i))
					if lo <= truth && truth <= hi {
						hits++
					}
				}
				sum += float64(hits) / reps
				n++
			}
			b.ReportMetric(sum/float64(n), "coverage")
		})
	}
}

func bernoulli(rng *rand.Rand, p float64) float64 {
	if rng.Float64() < p {
		return 1
	}
	return 0
}
