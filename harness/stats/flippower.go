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

// flipSim holds the standard normal draws every power figure of one
// design reuses (common random numbers), so power rises smoothly with the
// effect and a bisection on it settles.
type flipSim struct {
	tasks    int
	taskSD   float64 // sd of one task's observed difference around the run's mean
	seedSD   float64 // sd of the run's shift, shared by its tasks
	z        [][]float64
	u        []float64
	scratchA []float64
	scratchB []float64
}

func newFlipSim(d Design, v Variance) *flipSim {
	K := float64(d.Trials)
	s := &flipSim{
		tasks:  d.Tasks,
		taskSD: math.Sqrt(v.Task + v.Interaction + v.Trial/K),
		seedSD: math.Sqrt(v.Seed),
		z:      make([][]float64, flipPowerReps),
		u:      make([]float64, flipPowerReps),
	}
	rng := rand.New(rand.NewPCG(flipPowerSeed, uint64(d.Tasks)))
	for i := range s.z {
		s.u[i] = rng.NormFloat64()
		s.z[i] = make([]float64, d.Tasks)
		for t := range s.z[i] {
			s.z[i][t] = rng.NormFloat64()
		}
	}
	return s
}

// power is the share of simulated comparisons at a true difference effect
// in which the sign-flip p-value is at most PowerAlpha.
func (s *flipSim) power(effect float64) float64 {
	d := make([]float64, s.tasks)
	hits := 0
	for i, z := range s.z {
		shift := effect + s.seedSD*s.u[i]
		for t := range d {
			d[t] = shift + s.taskSD*z[t]
		}
		if s.pValue(d) <= PowerAlpha {
			hits++
		}
	}
	return float64(hits) / float64(len(s.z))
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
