package sample

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// greedyBelow is the temperature under which Sample takes the argmax.
const greedyBelow = 1e-5

// pcgStream is the second PCG word of every Sampler's generator, so a
// request's seed alone fixes its draws.
const pcgStream = 0x5eed_7a6e

// Params are one request's sampling parameters (OpenAI / vLLM meaning).
// The zero value is greedy decoding with every filter and penalty off.
type Params struct {
	Temperature       float64           // < 1e-5 means greedy
	TopP              float64           // nucleus mass in (0, 1); ≤ 0 or ≥ 1 is off
	MinP              float64           // keep tokens with p ≥ MinP·max p; ≤ 0 is off
	TopK              int               // keep the TopK most likely tokens; ≤ 0 or ≥ V is off
	PresencePenalty   float64           // subtracted once from each token already in the output
	FrequencyPenalty  float64           // subtracted per occurrence in the output
	RepetitionPenalty float64           // > 1 discourages prompt and output tokens; 1 (or ≤ 0) is off
	LogitBias         map[int32]float64 // token id → added to its logit; ids outside V are ignored
}

// Sampler holds one request's RNG and scratch buffers. It is used by one
// goroutine at a time; keep it for the request's life so the draws of a
// seeded request are reproducible.
type Sampler struct {
	rng   *rand.Rand
	probs []float64 // [V] unnormalized probabilities after temperature
	idx   []int32   // [≤V] candidate token ids
	mark  []uint32  // [V] mark[id] == gen: id seen in the current pass
	gen   uint32
}

// NewSampler returns a Sampler seeded from *seed, or from a random seed
// when seed is nil.
func NewSampler(seed *int64) *Sampler {
	s1 := rand.Uint64()
	if seed != nil {
		s1 = uint64(*seed)
	}
	return &Sampler{rng: rand.New(rand.NewPCG(s1, pcgStream))}
}

// Sample picks the next token from logits [V], which it modifies in place
// (bias, penalties), given the request's prompt and output tokens so far.
// Greedy ties go to the lowest id. Order: logit_bias, repetition,
// frequency and presence penalties, temperature, top-k, top-p, min-p, draw.
func (s *Sampler) Sample(logits []float32, p *Params, promptIDs, outputIDs []int32) int32 {
	numVocab := len(logits)
	for id, bias := range p.LogitBias {
		if id >= 0 && int(id) < numVocab {
			logits[id] += float32(bias)
		}
	}
	s.penalize(logits, p, promptIDs, outputIDs)
	if p.Temperature < greedyBelow {
		return argmax(logits)
	}

	// Softmax numerators at temperature T; the best token gets exactly 1.
	best := argmax(logits)
	maxLogit := float64(logits[best])
	if math.IsInf(maxLogit, -1) || math.IsNaN(maxLogit) {
		return best
	}
	if cap(s.probs) < numVocab {
		s.probs = make([]float64, numVocab)
		s.idx = make([]int32, 0, numVocab)
	}
	probs := s.probs[:numVocab]
	invT := 1 / p.Temperature
	var total float64
	for i, l := range logits {
		probs[i] = math.Exp((float64(l) - maxLogit) * invT)
		total += probs[i]
	}

	topK := p.TopK > 0 && p.TopK < numVocab
	topP := p.TopP > 0 && p.TopP < 1
	minP := min(max(p.MinP, 0), 1) // × max p, which is 1; the best token always survives
	if !topK && !topP {
		return s.draw(probs, minP)
	}

	// Sort only the tokens that can survive top-k / top-p (see candidates).
	idx := s.candidates(probs, total, p.TopK, topK, p.TopP)
	slices.SortFunc(idx, func(a, b int32) int {
		if c := cmp.Compare(probs[b], probs[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	if topK {
		idx = idx[:min(p.TopK, len(idx))]
		total = 0
		for _, id := range idx {
			total += probs[id]
		}
	}
	if topP {
		cum, want := 0.0, p.TopP*total
		for i, id := range idx {
			cum += probs[id]
			if cum >= want {
				idx = idx[:i+1]
				break
			}
		}
	}
	n := 0
	for _, id := range idx {
		if probs[id] >= minP {
			n++ // sorted: the survivors are a prefix
		}
	}
	idx = idx[:max(n, 1)]
	total = 0
	for _, id := range idx {
		total += probs[id]
	}
	r := s.rng.Float64() * total
	for _, id := range idx {
		r -= probs[id]
		if r < 0 {
			return id
		}
	}
	return idx[len(idx)-1] // rounding: r ≈ total
}

// draw samples from probs without sorting, skipping tokens under minP.
func (s *Sampler) draw(probs []float64, minP float64) int32 {
	var total float64
	for _, q := range probs {
		if q >= minP {
			total += q
		}
	}
	r := s.rng.Float64() * total
	last := int32(0)
	for i, q := range probs {
		if q >= minP && q > 0 {
			last = int32(i)
			if r -= q; r < 0 {
				return last
			}
		}
	}
	return last // rounding: r ≈ total
}

// candidates returns the ids of a superset of the tokens that top-k (when
// useK) or top-p (otherwise) can keep, in id order: every token whose
// probability lies in the highest power-of-two buckets that together hold
// at least k tokens (or mass topP·total). Any token outside those buckets
// has at least k tokens (mass topP·total) strictly above it, so it would be
// cut anyway; sorting only the candidates keeps large vocabularies cheap.
func (s *Sampler) candidates(probs []float64, total float64, k int, useK bool, topP float64) []int32 {
	const numBuckets = 64
	var count [numBuckets]int
	var mass [numBuckets]float64
	bucket := func(q float64) int {
		_, e := math.Frexp(q) // q in [2^(e-1), 2^e), e ≤ 1 since q ≤ 1
		return min(1-e, numBuckets-1)
	}
	for _, q := range probs {
		if q > 0 {
			b := bucket(q)
			count[b]++
			mass[b] += q
		}
	}
	last, n, m := numBuckets-1, 0, 0.0
	for b := range numBuckets {
		n, m = n+count[b], m+mass[b]
		if (useK && n >= k) || (!useK && m >= topP*total) {
			last = b
			break
		}
	}
	idx := s.idx[:0]
	for i, q := range probs {
		if q > 0 && bucket(q) <= last {
			idx = append(idx, int32(i))
		}
	}
	return idx
}

// penalize applies the repetition penalty (HF / vLLM: a seen token's
// logit is divided by r when positive, multiplied by r otherwise, once per
// distinct token of prompt+output), then frequency and presence penalties
// (OpenAI: logit -= frequency·count + presence·[count > 0], output only).
func (s *Sampler) penalize(logits []float32, p *Params, promptIDs, outputIDs []int32) {
	rep := p.RepetitionPenalty > 0 && p.RepetitionPenalty != 1
	if !rep && p.FrequencyPenalty == 0 && p.PresencePenalty == 0 {
		return
	}
	if len(s.mark) < len(logits) {
		s.mark = make([]uint32, len(logits))
		s.gen = 0
	}
	if rep {
		r := float32(p.RepetitionPenalty)
		gen := s.nextGen()
		for _, ids := range [2][]int32{promptIDs, outputIDs} {
			for _, id := range ids {
				if id < 0 || int(id) >= len(logits) || s.mark[id] == gen {
					continue
				}
				s.mark[id] = gen
				if logits[id] > 0 {
					logits[id] /= r
				} else {
					logits[id] *= r
				}
			}
		}
	}
	freq, pres := float32(p.FrequencyPenalty), float32(p.PresencePenalty)
	gen := s.nextGen()
	for _, id := range outputIDs {
		if id < 0 || int(id) >= len(logits) {
			continue
		}
		logits[id] -= freq
		if s.mark[id] != gen {
			s.mark[id] = gen
			logits[id] -= pres
		}
	}
}

// nextGen starts a new marking pass over mark.
func (s *Sampler) nextGen() uint32 {
	s.gen++
	if s.gen == 0 { // wrapped: old marks could collide
		clear(s.mark)
		s.gen = 1
	}
	return s.gen
}

// argmax returns the index of the largest logit, the lowest on ties.
func argmax(logits []float32) int32 {
	best := 0
	for i, l := range logits {
		if l > logits[best] {
			best = i
		}
	}
	return int32(best)
}

// TopLogprobs returns, for raw model logits [V], the log-softmax of token
// tok followed by the k most likely tokens (ties: lower id first) — ids and
// lps have k+1 entries, ids[0] == tok, as in wire.Logprobs and vLLM — and
// tok's rank (1 + the number of tokens with a strictly larger logit).
// Compute it from the logits before Sample modifies them.
func TopLogprobs(logits []float32, tok int32, k int) (ids []int32, lps []float64, rank int32) {
	k = max(0, min(k, len(logits)))
	lse := logSumExp(logits)

	ids = make([]int32, 1, k+1)
	ids[0] = tok
	if k > sortAbove {
		ids, rank = topBySort(logits, tok, k, ids)
	} else {
		ids, rank = topByInsertion(logits, tok, k, ids)
	}
	lps = make([]float64, len(ids))
	for i, id := range ids {
		lps[i] = float64(logits[id]) - lse
	}
	return ids, lps, rank
}

// sortAbove is the k above which TopLogprobs sorts the whole vocabulary
// (O(V log V)) instead of inserting into the top k (O(V·k)).
const sortAbove = 64

// topBySort appends the k most likely tokens to ids by sorting them all.
func topBySort(logits []float32, tok int32, k int, ids []int32) ([]int32, int32) {
	order := make([]int32, len(logits))
	rank := int32(1)
	for i, l := range logits {
		order[i] = int32(i)
		if l > logits[tok] {
			rank++
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp.Compare(logits[b], logits[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return append(ids, order[:k]...), rank
}

// topByInsertion appends the k most likely tokens to ids, keeping them
// sorted as it scans.
func topByInsertion(logits []float32, tok int32, k int, ids []int32) ([]int32, int32) {
	rank := int32(1)
	for i, l := range logits {
		if l > logits[tok] {
			rank++
		}
		// Insert i into ids[1:], kept sorted by logit descending.
		n := len(ids) - 1
		if n == k && (k == 0 || l <= logits[ids[k]]) {
			continue
		}
		if n < k {
			ids = append(ids, 0)
		}
		j := len(ids) - 1
		for j > 1 && logits[ids[j-1]] < l {
			ids[j] = ids[j-1]
			j--
		}
		ids[j] = int32(i)
	}
	return ids, rank
}

// TokenLogprobs is TopLogprobs for the given tokens instead of the top k
// (logprob_token_ids): ids is tok followed by want, in want's order.
func TokenLogprobs(logits []float32, tok int32, want []int32) (ids []int32, lps []float64, rank int32) {
	lse := logSumExp(logits)
	ids = append(append(make([]int32, 0, len(want)+1), tok), want...)
	lps = make([]float64, len(ids))
	for i, id := range ids {
		lps[i] = float64(logits[id]) - lse
	}
	rank = 1
	for _, l := range logits {
		if l > logits[tok] {
			rank++
		}
	}
	return ids, lps, rank
}

// logSumExp is log Σ exp(logits), computed stably.
func logSumExp(logits []float32) float64 {
	maxLogit := float64(logits[argmax(logits)])
	var sum float64
	for _, l := range logits {
		sum += math.Exp(float64(l) - maxLogit)
	}
	return maxLogit + math.Log(sum)
}
