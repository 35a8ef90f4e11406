package stats

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// The sign-flip test has no power formula: its p-value is a count over
// sign patterns, so power is found by simulating the per-task differences
// the design would observe and counting how often the test rejects.

// flipPowerReps is how many simulated comparisons a power figure of the
// sign-flip test rests on: a standard error of about 1.3 points at 80%.
const flipPowerReps = 1000

// flipPowerSeed fixes the simulation, so a design and its variance always
// get the same statement.
const flipPowerSeed = 20261128

// SignFlipMinP is the smallest p-value the sign-flip test can give over n
// tasks: 2/2^n, when every difference has the same sign and none is 0
// (the observed pattern and its mirror image). With 5 tasks it is 0.0625,
// so five tasks can never show a difference at 5%.
func SignFlipMinP(n int) float64 {
	if n < 1 {
		return 1
	}
	return math.Min(1, 2/math.Pow(2, float64(n)))
}

// flipSim simulates the per-task differences a design observes, with the
// same random numbers for every effect it is asked about (common random
// numbers), so power rises smoothly with the effect and a bisection on it
// settles. Rewards of 0 or 1 (a trial variance of at most 0.5, two arms)
// are drawn as such: each task's true difference spreads around the
// effect, both arms' rates sit either side of the rate whose Bernoulli
// variance gives the trial variance, and every trial is a coin flip. The
// ties and zero differences this brings cost the sign-flip test power a
// normal model would not show (an 80% claim fell to 68% at 10 x 3).
// Larger trial variances (graded rewards) are drawn as normal.
type flipSim struct {
	tasks, trials int
	spread        float64 // sd of a task's true difference around the run's
	seedSD        float64 // sd of the run's shift, shared by its tasks
	trialSD       float64 // sd of one task's trial noise, normal model
	trialVar      float64 // both arms' Bernoulli variance, Bernoulli model; 0: normal
	rate          float64 // mean rate of the two arms at the effect asked about
	scratchA      []float64
	scratchB      []float64
}

func newFlipSim(d Design, v Variance) *flipSim {
	s := &flipSim{tasks: d.Tasks, trials: d.Trials, spread: math.Sqrt(v.Task + v.Interaction), seedSD: math.Sqrt(v.Seed)}
	if v.Trial > 0 && v.Trial <= 0.5 {
		s.trialVar = v.Trial
	} else {
		s.trialSD = math.Sqrt(v.Trial / float64(d.Trials))
	}
	return s
}

// power is the share of flipPowerReps simulated comparisons at a true
// difference effect in which the sign-flip p-value is at most PowerAlpha.
func (s *flipSim) power(effect float64) float64 {
	if s.trialVar > 0 {
		// Arms at r -/+ effect/2 have Bernoulli variances adding up to
		// 2r(1-r) - effect²/2: r is the mean rate that gives the trial
		// variance at this effect (one half when no rate can).
		pq := min(0.25, (s.trialVar+effect*effect/2)/2)
		s.rate = (1 - math.Sqrt(1-4*pq)) / 2
	}
	rng := rand.New(rand.NewPCG(flipPowerSeed, uint64(s.tasks)<<8|uint64(s.trials)))
	d := make([]float64, s.tasks)
	hits := 0
	for range flipPowerReps {
		shift := effect + s.seedSD*rng.NormFloat64()
		for t := range d {
			d[t] = s.observe(rng, shift+s.spread*rng.NormFloat64())
		}
		if s.pValue(d) <= PowerAlpha {
			hits++
		}
	}
	return float64(hits) / flipPowerReps
}

// observe is one task's observed difference of mean rewards when its true
// difference is delta; it always makes the same number of draws, so every
// effect sees the same random numbers.
func (s *flipSim) observe(rng *rand.Rand, delta float64) float64 {
	if s.trialVar == 0 {
		return delta + s.trialSD*rng.NormFloat64()
	}
	q := min(1, max(0, s.rate+delta/2))
	p := min(1, max(0, s.rate-delta/2))
	var sum float64
	for range s.trials {
		if rng.Float64() < q {
			sum++
		}
		if rng.Float64() < p {
			sum--
		}
	}
	return sum / float64(s.trials)
}

// pValue is the sign-flip p-value of d: exact up to ExactFlipsMax tasks,
// as SignFlipP, but by meeting in the middle (the sums of each half's
// sign patterns, sorted, then counted against each other) instead of
// walking all 2^n patterns. Beyond, the randomization distribution of
// the sum, mean 0 and variance the sum of squares, is near normal, and
// the normal tail stands in for SignFlipP's random patterns.
func (s *flipSim) pValue(d []float64) float64 {
	var obs, scale, sq float64
	for _, v := range d {
		obs += v
		scale += math.Abs(v)
		sq += v * v
	}
	obs = math.Abs(obs)
	if len(d) > ExactFlipsMax {
		if sq == 0 {
			return 1
		}
		return 2 * distuv.UnitNormal.Survival(obs/math.Sqrt(sq))
	}
	cut := obs - 1e-9*max(scale, 1)
	if cut <= 0 {
		return 1 // every pattern reaches a sum of 0
	}
	h := len(d) / 2
	s.scratchA = halfSums(s.scratchA[:0], d[:h])
	s.scratchB = halfSums(s.scratchB[:0], d[h:])
	b := s.scratchB
	slices.Sort(b)
	hits := 0
	for _, a := range s.scratchA {
		// b >= cut - a
		hits += len(b) - lowerBound(b, cut-a)
		// b <= -cut - a
		hits += upperBound(b, -cut-a)
	}
	return float64(hits) / float64(len(s.scratchA)*len(b))
}

// halfSums appends the sums of all 2^len(x) sign patterns of x.
func halfSums(out, x []float64) []float64 {
	out = append(out, 0)
	for _, v := range x {
		n := len(out)
		for i := range n {
			out = append(out, out[i]-v)
			out[i] += v
		}
	}
	return out
}

// lowerBound is the first index of sorted b with b[i] >= x.
func lowerBound(b []float64, x float64) int {
	i, _ := slices.BinarySearch(b, x)
	return i
}

// upperBound is the count of sorted b with b[i] <= x.
func upperBound(b []float64, x float64) int {
	i, found := slices.BinarySearch(b, x)
	for found && i < len(b) && b[i] == x {
		i++
	}
	return i
}
