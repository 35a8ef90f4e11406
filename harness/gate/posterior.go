package gate

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/stat/distuv"
)

// Monte Carlo precision of P(better). The estimate starts with mcStart draws
// and doubles them until it sits more than mcZ standard errors away from every
// probability the caller compares it with (the threshold, the edges of the
// extension band), or mcMax draws are spent. Far from a cut a few hundred
// draws settle the answer; close to one the estimate sharpens to a standard
// error of about 0.009 at mcMax, well inside what separates a good edit from
// a bad one, at a cost the simulation can afford.
const (
	mcStart = 256
	mcMax   = 1 << 11
	mcZ     = 3.0
)

// quadNodes is the Gauss-Legendre order of the exact one-task integral. The
// integrand is a polynomial of low degree for whole-number rewards (exact
// here) and smooth enough otherwise.
const quadNodes = 64

// posterior returns the Beta posterior of an arm's success rate: a Beta(1, 1)
// prior updated with each usable reward r as r successes and 1-r failures.
func posterior(a ArmSummary, src rand.Source) distuv.Beta {
	return distuv.Beta{Alpha: 1 + a.Sum, Beta: 1 + float64(a.Usable) - a.Sum, Src: src}
}

// pBetter is the posterior probability that the candidate's success rate,
// averaged over the usable tasks, exceeds the current skill's, with the tasks
// independent. One task is integrated exactly; several are sampled. draws is
// 0 for the exact case.
//
// Every task and arm samples from its own stream, seeded by the seed and the
// task's position, so that two calls that differ only in one task's evidence
// share the draws of all the others (common random numbers): the estimates
// the session compares move with the evidence, not with sampling noise.
func pBetter(tasks []TaskSummary, usable []int, seed uint64, cuts []float64) (p float64, draws int) {
	if len(usable) == 1 {
		t := tasks[usable[0]]
		cand, cur := posterior(t.Candidate, nil), posterior(t.Current, nil)
		// P(cand > cur) = integral over x of density_cand(x) * CDF_cur(x).
		p = quad.Fixed(func(x float64) float64 { return cand.Prob(x) * cur.CDF(x) }, 0, 1, quadNodes, quad.Legendre{}, 0)
		return math.Min(1, math.Max(0, p)), 0
	}
	cand := make([]betaSampler, len(usable))
	cur := make([]betaSampler, len(usable))
	for j, i := range usable {
		cand[j] = newBetaSampler(posterior(tasks[i].Candidate, stream(seed, i, Candidate)))
		cur[j] = newBetaSampler(posterior(tasks[i].Current, stream(seed, i, Current)))
	}
	wins := 0
	for target := mcStart; ; target *= 2 {
		for ; draws < target; draws++ {
			// Comparing sums is comparing means: the task count cancels.
			var diff float64
			for j := range cand {
				diff += cand[j].Rand() - cur[j].Rand()
			}
			if diff > 0 {
				wins++
			}
		}
		p = float64(wins) / float64(draws)
		if draws >= mcMax || settled(wins, draws, cuts) {
			return p, draws
		}
	}
}

// betaSampler draws what distuv.Beta.Rand draws, draw for draw from the same
// source, without its per-draw cost: gonum wraps the source in a new
// rand.Rand and recomputes the shapes' constants for each of the two gamma
// draws of every sample, and the gate's simulations take millions of
// samples. The posteriors' shapes are at least 1 (a Beta(1, 1) prior), where
// gonum draws Gamma(1) as an exponential and larger shapes with Marsaglia and
// Tsang's method; anything else is left to gonum.
type betaSampler struct {
	dist  distuv.Beta
	rnd   *rand.Rand
	alpha gammaShape
	beta  gammaShape
	own   bool // the shapes are ones this sampler draws itself
}

// gammaShape holds Marsaglia and Tsang's constants for Gamma(shape, 1).
type gammaShape struct {
	shape, d, c float64
}

func newBetaSampler(b distuv.Beta) betaSampler {
	s := betaSampler{dist: b, own: b.Src != nil && b.Alpha >= 1 && b.Beta >= 1}
	if s.own {
		s.rnd = rand.New(b.Src)
		s.alpha, s.beta = newGammaShape(b.Alpha), newGammaShape(b.Beta)
	}
	return s
}

func newGammaShape(shape float64) gammaShape {
	d := shape - 1.0/3
	return gammaShape{shape: shape, d: d, c: 1 / (3 * math.Sqrt(d))}
}

// Rand returns the next sample: gonum's ga / (ga + gb), the alpha draw first.
func (s *betaSampler) Rand() float64 {
	if !s.own {
		return s.dist.Rand()
	}
	ga := s.alpha.draw(s.rnd)
	gb := s.beta.draw(s.rnd)
	return ga / (ga + gb)
}

// draw is distuv.Gamma{Alpha: g.shape, Beta: 1}.Rand for a shape of at least
// 1, with the same arithmetic, so the same bits.
func (g gammaShape) draw(rnd *rand.Rand) float64 {
	if g.shape == 1 {
		return rnd.ExpFloat64()
	}
	for {
		x := rnd.NormFloat64()
		v := 1 + x*g.c
		if v <= 0.0 {
			continue
		}
		v = v * v * v
		u := rnd.Float64()
		if u < 1.0-0.0331*(x*x)*(x*x) {
			return g.d * v
		}
		if math.Log(u) < 0.5*x*x+g.d*(1-v+math.Log(v)) {
			return g.d * v
		}
	}
}

// approxPBetter is the normal approximation of P(better) from the exact
// means and variances of the posteriors; ok is false when fewer than two
// tasks are usable (one task is integrated exactly anyway).
func approxPBetter(tasks []TaskSummary) (p float64, ok bool) {
	var mean, variance float64
	n := 0
	for _, t := range tasks {
		if !t.Usable {
			continue
		}
		cand, cur := posterior(t.Candidate, nil), posterior(t.Current, nil)
		mean += cand.Mean() - cur.Mean()
		variance += cand.Variance() + cur.Variance()
		n++
	}
	if n < 2 {
		return 0, false
	}
	return distuv.UnitNormal.CDF(mean / math.Sqrt(variance)), true
}

// settled reports whether the estimate wins/draws lies clearly on one side of
// every cut.
func settled(wins, draws int, cuts []float64) bool {
	p := float64(wins) / float64(draws)
	// The half-added estimate keeps the standard error above zero at 0 and 1.
	q := (float64(wins) + 0.5) / (float64(draws) + 1)
	se := math.Sqrt(q * (1 - q) / float64(draws))
	for _, c := range cuts {
		if math.Abs(p-c) < mcZ*se {
			return false
		}
	}
	return true
}

// stream returns the random source of one task's arm: a PCG whose state is
// the seed and the (task, arm) key, each spread over 64 bits by a
// multiplication with a large odd constant, so nearby keys start far apart.
func stream(seed uint64, task int, arm Arm) rand.Source {
	key := uint64(2*task + 1)
	if arm == Candidate {
		key++
	}
	return rand.NewPCG(seed^0x9e3779b97f4a7c15, key*0xbf58476d1ce4e5b9)
}
