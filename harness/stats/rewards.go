package stats

import (
	"cmp"
	"math"
	"slices"
)

// Rewards counts one task's usable rewards by value. It is a sufficient
// statistic for everything computed here from a task's rewards (mean,
// variance, successes, the within-task bootstrap draw), and when rewards
// are 0 or 1, as most verifiers give, it takes 16 bytes however many
// trials ran. The zero value holds no rewards.
type Rewards struct {
	zeros, ones int32
	other       *[]valueCount // values other than 0 and 1, sorted by value
}

type valueCount struct {
	value float64
	count int32
}

// Add counts one reward.
func (r *Rewards) Add(v float64) { r.AddN(v, 1) }

// AddN counts n rewards of value v.
func (r *Rewards) AddN(v float64, n int32) {
	switch v {
	case 0:
		r.zeros += n
	case 1:
		r.ones += n
	default:
		if r.other == nil {
			r.other = &[]valueCount{}
		}
		o := *r.other
		i, found := slices.BinarySearchFunc(o, v, func(e valueCount, v float64) int { return cmp.Compare(e.value, v) })
		if found {
			o[i].count += n
		} else {
			o = slices.Insert(o, i, valueCount{v, n})
		}
		*r.other = o
	}
}

// Merge adds every reward of o.
func (r *Rewards) Merge(o Rewards) {
	r.zeros += o.zeros
	r.ones += o.ones
	if o.other != nil {
		for _, vc := range *o.other {
			r.AddN(vc.value, vc.count)
		}
	}
}

// each calls fn for every distinct value with its count, in value order.
func (r Rewards) each(fn func(v float64, n int32)) {
	var other []valueCount
	if r.other != nil {
		other = *r.other
	}
	i := 0
	for ; i < len(other) && other[i].value < 0; i++ {
		fn(other[i].value, other[i].count)
	}
	if r.zeros > 0 {
		fn(0, r.zeros)
	}
	for ; i < len(other) && other[i].value < 1; i++ {
		fn(other[i].value, other[i].count)
	}
	if r.ones > 0 {
		fn(1, r.ones)
	}
	for ; i < len(other); i++ {
		fn(other[i].value, other[i].count)
	}
}

// N is the number of rewards.
func (r Rewards) N() int {
	n := int(r.zeros) + int(r.ones)
	if r.other != nil {
		for _, vc := range *r.other {
			n += int(vc.count)
		}
	}
	return n
}

// Sum is the sum of the rewards.
func (r Rewards) Sum() float64 {
	s := float64(r.ones)
	if r.other != nil {
		for _, vc := range *r.other {
			s += vc.value * float64(vc.count)
		}
	}
	return s
}

// Mean is the mean reward; NaN with none.
func (r Rewards) Mean() float64 {
	n := r.N()
	if n == 0 {
		return math.NaN()
	}
	return r.Sum() / float64(n)
}

// AtLeast counts the rewards at or above v.
func (r Rewards) AtLeast(v float64) int {
	n := 0
	r.each(func(x float64, c int32) {
		if x >= v {
			n += int(c)
		}
	})
	return n
}

// AppendValues appends the rewards to dst in ascending order.
func (r Rewards) AppendValues(dst []float64) []float64 {
	r.each(func(v float64, c int32) {
		for range c {
			dst = append(dst, v)
		}
	})
	return dst
}

// binary reports whether every reward is 0 or 1.
func (r Rewards) binary() bool { return r.other == nil || len(*r.other) == 0 }

// sameCounts reports whether r and o hold the same rewards.
func (r Rewards) sameCounts(o Rewards) bool {
	if r.zeros != o.zeros || r.ones != o.ones || r.binary() != o.binary() {
		return false
	}
	return r.binary() || slices.Equal(*r.other, *o.other)
}

// MacroMeanOf is MacroMean over summaries: the mean over tasks with
// rewards of each task's mean. NaN when none has one.
func MacroMeanOf(tasks []Rewards) float64 {
	var sum float64
	n := 0
	for _, r := range tasks {
		if r.N() > 0 {
			sum += r.Mean()
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}
