package beam

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrCandidates is wrapped by Search when the Expander returns the wrong
// number of candidate lists.
var ErrCandidates = errors.New("beam: expander returned the wrong number of candidate lists")

// Candidate is one possible next token.
type Candidate struct {
	Token   int32
	Logprob float64 // natural log
}

// Expander returns, for each sequence (prompt followed by generated
// tokens), the candidates for its next token; len(result) == len(seqs).
// The sequences belong to the caller only for the duration of the call.
type Expander func(ctx context.Context, seqs [][]int32) ([][]Candidate, error)

// Params configure a search.
type Params struct {
	Width         int     // beams kept per step and beams returned
	MaxTokens     int     // most generated tokens per beam
	LengthPenalty float64 // exponent of the length in the score; 1 = average logprob per token
	EOS           []int32 // tokens that finish a beam
	IgnoreEOS     bool    // treat EOS like any other token
}

// Beam is one finished beam.
type Beam struct {
	Tokens     []int32       // generated tokens, without the EOS that stopped it
	Logprobs   []float64     // [len(Tokens)] logprob of each generated token
	Steps      [][]Candidate // [len(Tokens)] the candidates each token was picked from
	CumLogprob float64       // sum of the logprobs, including the EOS's when Stopped
	Score      float64       // CumLogprob / length^LengthPenalty
	Stopped    bool          // ended by EOS (finish "stop"), else by MaxTokens ("length")
	StopToken  int32         // the EOS token, when Stopped
}

// live is a beam under construction.
type live struct {
	tokens   []int32
	logprobs []float64
	steps    [][]Candidate
	cum      float64
}

// Search runs beam search from prompt and returns at most p.Width beams,
// highest score first (ties keep the order they were found in).
func Search(ctx context.Context, prompt []int32, p Params, expand Expander) ([]Beam, error) {
	if p.Width < 1 || p.MaxTokens < 1 {
		return nil, fmt.Errorf("beam: width %d and max tokens %d must be at least 1", p.Width, p.MaxTokens)
	}
	score := func(numTokens int, cum float64) float64 {
		return cum / math.Pow(float64(len(prompt)+numTokens), p.LengthPenalty)
	}
	isEOS := func(t int32) bool { return !p.IgnoreEOS && slices.Contains(p.EOS, t) }
	beams := []live{{}}
	var done []Beam
	for range p.MaxTokens {
		if len(beams) == 0 {
			break
		}
		seqs := make([][]int32, len(beams))
		for i, b := range beams {
			seqs[i] = append(slices.Clip(prompt), b.tokens...)
		}
		cands, err := expand(ctx, seqs)
		if err != nil {
			return nil, err
		}
		if len(cands) != len(beams) {
			return nil, fmt.Errorf("%w: %d for %d beams", ErrCandidates, len(cands), len(beams))
		}
		var next []live
		for i, b := range beams {
			for _, c := range cands[i] {
				if isEOS(c.Token) {
					cum := b.cum + c.Logprob
					done = append(done, Beam{Tokens: b.tokens, Logprobs: b.logprobs, Steps: b.steps, CumLogprob: cum,
						Score: score(len(b.tokens), cum), Stopped: true, StopToken: c.Token})
					continue
				}
				next = append(next, live{
					tokens:   append(slices.Clip(b.tokens), c.Token),
					logprobs: append(slices.Clip(b.logprobs), c.Logprob),
					steps:    append(slices.Clip(b.steps), cands[i]),
					cum:      b.cum + c.Logprob,
				})
			}
		}
		// Live beams all have the same length: rank by cumulative logprob.
		slices.SortStableFunc(next, func(a, b live) int { return cmp.Compare(b.cum, a.cum) })
		beams = next[:min(len(next), p.Width)]
	}
	for _, b := range beams {
		done = append(done, Beam{Tokens: b.tokens, Logprobs: b.logprobs, Steps: b.steps, CumLogprob: b.cum, Score: score(len(b.tokens), b.cum)})
	}
	slices.SortStableFunc(done, func(a, b Beam) int { return cmp.Compare(b.Score, a.Score) })
	return done[:min(len(done), p.Width)], nil
}

// Top merges the sampled token and the top alternatives an engine reported
// for one position into at most k distinct candidates, most likely first.
// ids and logprobs are parallel.
func Top(ids []int32, logprobs []float64, k int) []Candidate {
	seen := make(map[int32]bool, len(ids))
	out := make([]Candidate, 0, len(ids))
	for i, id := range ids {
		if i >= len(logprobs) || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, Candidate{Token: id, Logprob: logprobs[i]})
	}
	slices.SortStableFunc(out, func(a, b Candidate) int { return cmp.Compare(b.Logprob, a.Logprob) })
	return out[:min(len(out), k)]
}
