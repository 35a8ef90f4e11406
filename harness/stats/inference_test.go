package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func tq(df, p float64) float64 { return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p) }

func within(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestMeanCI(t *testing.T) {
	// 1, 2, 3, 4: mean 2.5, sd √(5/3), se √(5/3)/2, 3 degrees of freedom.
	iv, err := MeanCI([]float64{1, 2, 3, 4}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	se := math.Sqrt(5.0/3) / 2
	half := tq(3, 0.975) * se
	if !within(iv.Mean, 2.5, 1e-12) || !within(iv.Low, 2.5-half, 1e-12) || !within(iv.High, 2.5+half, 1e-12) || iv.DF != 3 {
		t.Errorf("MeanCI = %+v, want 2.5 ± %v with df 3", iv, half)
	}
	// The interval inverts the t test: p at the interval's own edge is 1 - level.
	if p := (Interval{Mean: half, SE: se, DF: 3}).P(); !within(p, 0.05, 1e-9) {
		t.Errorf("P at the edge = %v, want 0.05", p)
	}
	errs := []struct {
		name  string
		x     []float64
		level float64
		want  string
	}{
		{"one value", []float64{1}, 0.95, "need at least 2"},
		{"nan", []float64{1, math.NaN()}, 0.95, "NaN"},
		{"level", []float64{1, 2}, 1, "not in (0, 1)"},
	}
	for _, tc := range errs {
		if _, err := MeanCI(tc.x, tc.level); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := MeanCI([]float64{1}, 0.95); !errors.Is(err, ErrTooFew) {
		t.Errorf("one value: err = %v, want ErrTooFew", err)
	}
}

func TestTwoWayCI(t *testing.T) {
	// Seeds x tasks [[1 2 3] [2 3 7]]: grand 3, MSs 6, MSt 6.5, MSe 1.5,
	// variance (6 + 6.5 - 1.5)/6; the seed component is in it, so the
	// seeds' S-1 = 1 degree of freedom.
	iv, err := TwoWayCI([][]float64{{1, 2, 3}, {2, 3, 7}}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	se, df := math.Sqrt(11.0/6), 1.0
	if !within(iv.Mean, 3, 1e-12) || !within(iv.SE, se, 1e-12) || !within(iv.DF, df, 1e-9) ||
		!within(iv.High-iv.Mean, tq(df, 0.975)*se, 1e-9) {
		t.Errorf("TwoWayCI = %+v, want mean 3, se %v, df %v", iv, se, df)
	}
	// Seeds below the residual ([[1 3 6] [3 3 4]]: MSs 0, MSt 14/3, MSe
	// 2): the residual stands in for the seeds at their 1 degree of
	// freedom, and the task component raises it by Satterthwaite's rule,
	// MSt²/(MSe²/1 + MSt²/2 + MSe²/2).
	low, _ := TwoWayCI([][]float64{{1, 3, 6}, {3, 3, 4}}, 0.95)
	mst := 14.0 / 3
	if wantDF := mst * mst / (4 + mst*mst/2 + 2); !within(low.DF, wantDF, 1e-9) || !within(low.SE, math.Sqrt(mst/6), 1e-12) {
		t.Errorf("seed component dropped: %+v, want df %v, se %v", low, wantDF, math.Sqrt(mst/6))
	}
	// One seed is MeanCI over tasks.
	one, _ := TwoWayCI([][]float64{{1, 2, 3, 4}}, 0.95)
	want, _ := MeanCI([]float64{1, 2, 3, 4}, 0.95)
	if one != want {
		t.Errorf("one seed: %+v, want MeanCI's %+v", one, want)
	}
	// A seed effect alone (no task or residual spread beyond it) still
	// widens the interval: pooling the seeds would not.
	shifted, _ := TwoWayCI([][]float64{{0, 0.1, 0.2}, {0.3, 0.4, 0.5}}, 0.95)
	pooled, _ := MeanCI([]float64{0.15, 0.25, 0.35}, 0.95)
	if shifted.High-shifted.Low <= pooled.High-pooled.Low {
		t.Errorf("seed shift: width %v not above the task-only %v", shifted.High-shifted.Low, pooled.High-pooled.Low)
	}
	if _, err := TwoWayCI([][]float64{{1, 2}, {1}}, 0.95); err == nil || !strings.Contains(err.Error(), "seed 1 has 1 tasks") {
		t.Errorf("ragged table: err = %v", err)
	}
	if _, err := TwoWayCI(nil, 0.95); !errors.Is(err, ErrTooFew) {
		t.Errorf("empty table: err = %v, want ErrTooFew", err)
	}
}

func TestHierarchicalBootstrapCI(t *testing.T) {
	cells := [][]float64{{0, 1, 1}, {1, 1, 0}, {0, 0, 1}}
	lo, hi, err := HierarchicalBootstrapCI(cells, 2000, 0.95, 5)
	if err != nil {
		t.Fatal(err)
	}
	lo2, hi2, _ := HierarchicalBootstrapCI(cells, 2000, 0.95, 5)
	if lo != lo2 || hi != hi2 || !(lo < 5.0/9 && 5.0/9 < hi) || lo < 0 || hi > 1 {
		t.Errorf("interval [%v, %v] (again [%v, %v]), want a reproducible one holding 5/9 within [0, 1]", lo, hi, lo2, hi2)
	}
	if _, _, err := HierarchicalBootstrapCI(cells, 0, 0.95, 5); err == nil {
		t.Error("B = 0 accepted")
	}
	if _, _, err := HierarchicalBootstrapCI([][]float64{{1}}, 10, 0.95, 5); !errors.Is(err, ErrTooFew) {
		t.Errorf("one cell: err = %v, want ErrTooFew", err)
	}
}

func TestSignFlipP(t *testing.T) {
	tests := []struct {
		name string
		d    []float64
		want float64
	}{
		// Sums ±1±2±3: 6, 4, 2, 0, 0, -2, -4, -6; |sum| >= 6 in 2 of 8.
		{"three", []float64{1, 2, 3}, 0.25},
		{"cancelling", []float64{1, -1}, 1},
		// Five tasks all better: the smallest p five tasks allow, 2/32.
		{"five all better", []float64{0.3, 0.1, 0.2, 0.5, 0.4}, 2.0 / 32},
		{"zeros", []float64{0, 0, 0}, 1},
	}
	for _, tc := range tests {
		got, err := SignFlipP(tc.d, 0, 1)
		if err != nil || !within(got, tc.want, 1e-12) {
			t.Errorf("%s: SignFlipP = %v, %v, want %v", tc.name, got, err, tc.want)
		}
	}
	// Beyond the exact limit: random flips, reproducible, near the
	// normal approximation for 40 differences of +1 and -1 summing to 12.
	d := make([]float64, 40)
	for i := range d {
		d[i] = 1
		if i%40 < 14 {
			d[i] = -1
		}
	}
	p1, err := SignFlipP(d, 20000, 3)
	p2, _ := SignFlipP(d, 20000, 3)
	// Sum 12 over 40 signs: P(|Bin(40,1/2) - 20| >= 6) = 0.0807.
	if err != nil || p1 != p2 || !within(p1, 0.0807, 0.01) {
		t.Errorf("Monte Carlo p = %v then %v (%v), want about 0.081", p1, p2, err)
	}
	if _, err := SignFlipP(d, 0, 3); err == nil {
		t.Error("no draws accepted beyond the exact limit")
	}
	if _, err := SignFlipP(nil, 10, 3); !errors.Is(err, ErrTooFew) {
		t.Errorf("no values: err = %v", err)
	}
}

func TestHolm(t *testing.T) {
	// Sorted 0.01, 0.03, 0.04 times 3, 2, 1: 0.03, 0.06, 0.04 -> running max 0.06.
	adj, rej, err := Holm([]float64{0.01, 0.04, 0.03, math.NaN()}, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.03, 0.06, 0.06}
	for i, w := range want {
		if !within(adj[i], w, 1e-12) {
			t.Errorf("adjusted[%d] = %v, want %v", i, adj[i], w)
		}
	}
	if !math.IsNaN(adj[3]) || rej[3] || !rej[0] || rej[1] || rej[2] {
		t.Errorf("adjusted %v reject %v, want NaN kept and only the first rejected", adj, rej)
	}
	// Capped at 1.
	if adj, _, _ := Holm([]float64{0.6, 0.7}, 0.05); adj[0] != 1 || adj[1] != 1 {
		t.Errorf("adjusted %v, want capped at 1", adj)
	}
	for _, bad := range []struct {
		p     []float64
		alpha float64
	}{{[]float64{1.2}, 0.05}, {[]float64{0.1}, 0}} {
		if _, _, err := Holm(bad.p, bad.alpha); err == nil {
			t.Errorf("Holm(%v, %v) accepted", bad.p, bad.alpha)
		}
	}
}

func TestIQM(t *testing.T) {
	tests := []struct {
		x    []float64
		want float64
	}{
		{[]float64{1, 2, 3, 4, 100}, 3},
		{[]float64{1, 2, 3}, 2},
		{[]float64{4, 1, 3, 2, 8, 7, 6, 5}, 4.5},
	}
	for _, tc := range tests {
		if got, err := IQM(tc.x); err != nil || got != tc.want {
			t.Errorf("IQM(%v) = %v, %v, want %v", tc.x, got, err, tc.want)
		}
	}
	if _, err := IQM(nil); !errors.Is(err, ErrTooFew) {
		t.Errorf("IQM(nil): err = %v", err)
	}
}

func TestProbabilityOfImprovement(t *testing.T) {
	// x: pairs (1,0) twice win, (0,0) twice tie -> 3/4; y: (1,1) tie -> 1/2;
	// z is in one row only.
	a := map[string][]float64{"x": {1, 0}, "y": {1}, "z": {1}}
	b := map[string][]float64{"x": {0, 0}, "y": {1}}
	poi, n, err := ProbabilityOfImprovement(a, b)
	if err != nil || n != 2 || !within(poi, 0.625, 1e-12) {
		t.Errorf("PoI = %v over %d (%v), want 0.625 over 2", poi, n, err)
	}
	// Against brute force on partial credit.
	x, y := []float64{0.2, 0.5, 0.5, 1}, []float64{0.5, 0.1, 0.9}
	var want float64
	for _, u := range x {
		for _, v := range y {
			switch {
			case u > v:
				want++
			case u == v:
				want += 0.5
			}
		}
	}
	want /= 12
	if got, _ := pairWinShare(x, y); !within(got, want, 1e-12) {
		t.Errorf("pairWinShare = %v, want %v", got, want)
	}
	if _, _, err := ProbabilityOfImprovement(a, map[string][]float64{"w": {1}}); !errors.Is(err, ErrTooFew) {
		t.Errorf("no shared task: err = %v", err)
	}
}

func TestTPowerAgainstSimulation(t *testing.T) {
	d, v := Design{Tasks: 10, Trials: 3, Seeds: 1}, Variance{Trial: 0.5}
	const effect = 0.25
	want, err := TPower(d, v, effect)
	if err != nil {
		t.Fatal(err)
	}
	// A direct simulation of the t statistic at ten tasks.
	rng := rand.New(rand.NewPCG(9, 9))
	delta, hits := effect/math.Sqrt(0.5/30), 0
	for range 100000 {
		var chi float64
		for range 9 {
			z := rng.NormFloat64()
			chi += z * z
		}
		if math.Abs(rng.NormFloat64()+delta)/math.Sqrt(chi/9) > tq(9, 0.975) {
			hits++
		}
	}
	if got := float64(hits) / 100000; !within(got, want, 0.005) {
		t.Errorf("simulated t power at %v = %v, TPower says %v", effect, got, want)
	}
}

func TestMinDetectableDiffOfTheTTest(t *testing.T) {
	// Several seeds: significance is the t test of the two-way interval.
	d, v := Design{Tasks: 10, Trials: 3, Seeds: 3}, Variance{Trial: 0.5, Seed: 0.001}
	mdd, err := MinDetectableDiff(d, v)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := Power(d, v, mdd); !within(p, PowerTarget, 1e-6) {
		t.Errorf("power at the MDD %v = %v, want %v", mdd, p, PowerTarget)
	}
	if m, _ := MinDetectableDiff(Design{20, 3, 3}, v); m >= mdd {
		t.Errorf("20 tasks: MDD %v not below %v", m, mdd)
	}
}

func TestMinDetectableDiffOfTheSignFlipTest(t *testing.T) {
	d, v := Design{Tasks: 10, Trials: 3, Seeds: 1}, Variance{Trial: 0.5, Task: 0.01}
	mdd, err := MinDetectableDiff(d, v)
	if err != nil {
		t.Fatal(err)
	}
	// At the MDD the real test (SignFlipP, not the simulation's own
	// p-value) rejects about 80% of comparisons drawn apart from the
	// simulation: rates 0.5 -/+ half the task's difference, three coin
	// flips per arm (Trial 0.5 is two arms at one half).
	rng := rand.New(rand.NewPCG(3, 4))
	const reps = 3000
	hits := 0
	x := make([]float64, d.Tasks)
	for range reps {
		for i := range x {
			delta := mdd + math.Sqrt(v.Task)*rng.NormFloat64()
			var sum float64
			for range 3 {
				if rng.Float64() < 0.5+delta/2 {
					sum++
				}
				if rng.Float64() < 0.5-delta/2 {
					sum--
				}
			}
			x[i] = sum / 3
		}
		if p, _ := SignFlipP(x, 0, 0); p <= PowerAlpha {
			hits++
		}
	}
	if got := float64(hits) / reps; !within(got, PowerTarget, 0.03) {
		t.Errorf("SignFlipP rejects %v of %d comparisons at the MDD %v, want about %v", got, reps, mdd, PowerTarget)
	}
	// The sign-flip test is discrete, so it needs more than the t test.
	if tp, _ := TPower(d, v, mdd); tp < PowerTarget {
		t.Errorf("t power %v at the sign-flip MDD %v: the t test should see at least as much", tp, mdd)
	}
	// With many tasks the sign-flip test is the z test: (1.96 + 0.8416) · SE
	// (graded rewards: the normal model).
	big := Design{Tasks: 1000, Trials: 3, Seeds: 1}
	z := (1.959964 + 0.841621) * math.Sqrt(0.6/3000)
	if m, _ := MinDetectableDiff(big, Variance{Trial: 0.6}); !within(m, z, 0.05*z) {
		t.Errorf("MDD at 2000 tasks = %v, want about the normal one %v", m, z)
	}
	for _, bigger := range []Design{{20, 3, 1}, {10, 10, 1}} {
		if m, _ := MinDetectableDiff(bigger, v); m >= mdd {
			t.Errorf("%+v: MDD %v not below %v", bigger, m, mdd)
		}
	}
}

func TestPowerStatementsStayMeaningful(t *testing.T) {
	// Five tasks and one seed: the sign-flip test can never reject.
	_, err := MinDetectableDiff(Design{5, 3, 1}, AssumedVariance)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "5 tasks: the sign-flip test cannot reach p < 0.05") {
		t.Errorf("5 tasks: err = %v, want ErrUnreachable naming the design", err)
	}
	if p, err := Power(Design{5, 3, 1}, AssumedVariance, 0.9); err != nil || p != 0 {
		t.Errorf("power of an unreachable design = %v, %v; want 0", p, err)
	}
	if ok, _ := (Design{6, 1, 1}).Reachable(); !ok {
		t.Error("6 tasks: 2/64 < 0.05 is reachable")
	}
	if ok, _ := (Design{5, 3, 3}).Reachable(); !ok {
		t.Error("several seeds use the t test, which any design can reach")
	}
	// No statement is ever above 1: a design too noisy says so instead.
	if _, err := MinDetectableDiff(Design{6, 1, 1}, Variance{Task: 1, Trial: 0.5}); !errors.Is(err, ErrUndetectable) {
		t.Errorf("a design that cannot see a difference of 1: err = %v, want ErrUndetectable", err)
	}
	for tasks := 2; tasks <= 12; tasks += 2 {
		for _, seeds := range []int{1, 2, 3} {
			d := Design{tasks, 2, seeds}
			m, err := MinDetectableDiff(d, AssumedVariance)
			if err == nil && !(m > 0 && m <= 1) {
				t.Errorf("%+v: MDD %v outside (0, 1]", d, m)
			}
			if err != nil && !errors.Is(err, ErrUnreachable) && !errors.Is(err, ErrUndetectable) {
				t.Errorf("%+v: unexpected error %v", d, err)
			}
		}
	}
	for _, bad := range []struct {
		d Design
		v Variance
	}{{Design{1, 3, 1}, AssumedVariance}, {Design{10, 3, 1}, Variance{}}, {Design{10, 3, 1}, Variance{Task: -1, Trial: 1}}, {Design{10, 3, 1}, Variance{Trial: math.NaN()}}} {
		if _, err := MinDetectableDiff(bad.d, bad.v); err == nil {
			t.Errorf("MinDetectableDiff(%+v, %+v) accepted", bad.d, bad.v)
		}
	}
}

func TestSimulatedFlipPMatchesSignFlipP(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := &flipSim{}
	for n := 1; n <= ExactFlipsMax; n++ {
		for range 20 {
			d := make([]float64, n)
			for i := range d {
				// Rounded values make ties and zeros, as rewards do.
				d[i] = math.Round(rng.NormFloat64()*3) / 3
			}
			want, _ := SignFlipP(d, 0, 0)
			if got := s.pValue(d); !within(got, want, 1e-12) {
				t.Fatalf("%v: meet-in-the-middle p %v, SignFlipP %v", d, got, want)
			}
		}
	}
	if got := SignFlipMinP(5); got != 0.0625 {
		t.Errorf("SignFlipMinP(5) = %v, want 0.0625", got)
	}
}

func TestEstimateVariance(t *testing.T) {
	// One seed: differences 0.5 and 0.5, no spread; trial variance 0.5 on
	// each task (one arm split 1/0), noise 0.25 per task -> Task 0.
	row := []map[string][]float64{{"a": {1, 0}, "b": {1, 1}}}
	base := []map[string][]float64{{"a": {0, 0}, "b": {1, 0}}}
	v, d, err := EstimateVariance(row, base)
	if err != nil || v != (Variance{Trial: 0.5}) || d != (Design{2, 2, 1}) {
		t.Errorf("one seed: %+v %+v %v", v, d, err)
	}
	// Two seeds, one trial, pooled baseline: cells [[1 0 0] [1 1 0]],
	// MSs 1/6, MSt 1/2, MSe 1/6 -> Seed 0, Task 1/6, Interaction 1/6.
	row = []map[string][]float64{{"a": {1}, "b": {0}, "c": {1}}, {"a": {1}, "b": {1}, "c": {1}}}
	base = []map[string][]float64{{"a": {0}, "b": {0}, "c": {1}}}
	v, d, err = EstimateVariance(row, base)
	if err != nil || !within(v.Seed, 0, 1e-12) || !within(v.Task, 1.0/6, 1e-12) || !within(v.Interaction, 1.0/6, 1e-12) ||
		v.Trial != 0 || d != (Design{3, 1, 2}) {
		t.Errorf("two seeds: %+v %+v %v", v, d, err)
	}
	if _, _, err := EstimateVariance(row, []map[string][]float64{{"a": {1}}}); !errors.Is(err, ErrTooFew) {
		t.Errorf("one shared task: err = %v", err)
	}
}

// With many tasks the estimate recovers known components: row rates 0.5 +
// a_t with a_t uniform on [-0.2, 0.2] (variance 0.04/3), baseline 0.5, four
// trials: Task 0.04/3 and Trial E[p(1-p)] + 1/4 = 0.5 - 0.04/3.
func TestEstimateVarianceRecoversComponents(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	row, base := map[string][]float64{}, map[string][]float64{}
	bern := func(p float64) float64 {
		if rng.Float64() < p {
			return 1
		}
		return 0
	}
	for i := range 5000 {
		id := string(rune('A'+i%26)) + string(rune('0'+i/26%10)) + string(rune('a'+i/260))
		p := 0.5 + (rng.Float64()*0.4 - 0.2)
		for range 4 {
			row[id] = append(row[id], bern(p))
			base[id] = append(base[id], bern(0.5))
		}
	}
	v, _, err := EstimateVariance([]map[string][]float64{row}, []map[string][]float64{base})
	if err != nil {
		t.Fatal(err)
	}
	if !within(v.Task, 0.04/3, 0.008) || !within(v.Trial, 0.5-0.04/3, 0.01) {
		t.Errorf("estimate %+v, want Task %.4f and Trial %.4f", v, 0.04/3, 0.5-0.04/3)
	}
}
