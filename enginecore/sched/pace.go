package sched

import (
	"math"
	"time"
)

// Pace sizes each step's token budget so that a step takes about Target:
// a step's time is modelled as a + c·tokens (a: the weights' pass and the
// step's overhead, c: the cost of one more token), fitted by least squares
// over the recent steps, each older step weighing paceDecay times less.
// On a GPU c is tiny and the budget stays at max_num_batched_tokens; on a
// CPU, where 2,048 prompt tokens take seconds, the budget shrinks so that
// one client's long prefill or a flood of sequences cannot hold every other
// stream's next token for longer than about Target.
//
// The zero Pace (Target 0) is off: Budget returns the maximum. Pace is pure:
// the engine's shell measures the steps and calls Observe.
type Pace struct {
	Target time.Duration // wanted step time; 0 = off
	Min    int           // smallest budget, tokens (a step always makes progress)

	// Decayed sums over steps of w, x, y, x², x·y with x = tokens and
	// y = seconds.
	sw, sx, sy, sxx, sxy float64
}

// paceDecay is how much one step's weight fades per newer step: the fit
// reflects about the last 1/(1−paceDecay) = 20 steps.
const paceDecay = 0.95

// Observe records one executed step of tokens tokens that took d.
func (p *Pace) Observe(tokens int, d time.Duration) {
	if tokens <= 0 || d <= 0 {
		return
	}
	x, y := float64(tokens), d.Seconds()
	p.sw = p.sw*paceDecay + 1
	p.sx = p.sx*paceDecay + x
	p.sy = p.sy*paceDecay + y
	p.sxx = p.sxx*paceDecay + x*x
	p.sxy = p.sxy*paceDecay + x*y
}

// Budget is the number of tokens a step may compute, at most limit.
func (p *Pace) Budget(limit int) int {
	if p.Target <= 0 || p.sw == 0 {
		return limit
	}
	fixed, perToken := p.fit()
	n := limit
	if perToken > 0 {
		n = int(math.Min(float64(limit), math.Floor((p.Target.Seconds()-fixed)/perToken)))
	}
	return min(limit, max(n, p.Min, 1))
}

// fit returns the model's a (seconds per step) and c (seconds per token).
// With steps of too few distinct sizes to separate them, a is 0 and c the
// mean seconds per token, which overstates c and so errs on the short side.
func (p *Pace) fit() (fixed, perToken float64) {
	den := p.sw*p.sxx - p.sx*p.sx
	if den > 1e-9*p.sw*p.sxx {
		c := (p.sw*p.sxy - p.sx*p.sy) / den
		a := (p.sy - c*p.sx) / p.sw
		if c > 0 && a >= 0 {
			return a, c
		}
	}
	return 0, p.sy / p.sx
}
