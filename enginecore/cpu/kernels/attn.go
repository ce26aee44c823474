package kernels

import "math"

// Attention over one KV block of package cpu's paged cache: the scores
// of R query rows against the block's keys (K transposed, [D][B]) and the
// accumulation of their weighted values. Each (row, lane) is one chain of
// multiply-adds in a fixed order — a score sums the even and the odd d
// apart and then adds the two; a value accumulates position by position —
// whichever rows are computed together, so a row's result never depends
// on how many rows share the call.

// SoftmaxSlack is how far a score may exceed its row's softmax reference
// before BlockSoftmax rescales (weights ≤ e^6 ≈ 400; FlashAttention-4's
// lazy rescale): with recency-biased scores the max grows in most blocks,
// and the exact rescale cost about a third of a long prompt's prefill.
// Every value changes only rounding; the default model's greedy tests
// (conformance.TestDefaultModel against llama.cpp, TestDefaultModelAnswers)
// sit on near-ties that flip with it: 0 and 4 flip one, 8 the other;
// 2 and 6 pass both.
const SoftmaxSlack = 6

// BlockB is the block size (positions per KV block) of the fast paths;
// other sizes take the pure-Go loops.
const BlockB = 16

// BlockScores sets out[r·B+p] = s·(Σ_{d even} q[r·D+d]·k[d·B+p] +
// Σ_{d odd} q[r·D+d]·k[d·B+p]) for r < R and p < B = BlockB, with
// R = len(out)/B query rows of D = len(q)/R contiguous values and
// len(k) ≥ D·B (one block's keys, [D][B]).
func BlockScores(out, q, k []float32, s float32) {
	r := len(out) / BlockB
	if r == 0 {
		return
	}
	d := len(q) / r
	blockScores(out[:r*BlockB], q[:r*d], k[:d*BlockB], d, s)
}

func blockScoresGo(out, q, k []float32, d int, s float32) {
	for r := range len(out) / BlockB {
		qr := q[r*d : (r+1)*d]
		for p := range BlockB {
			var even, odd float32
			for i := 0; i < d; i += 2 {
				even += qr[i] * k[i*BlockB+p]
				if i+1 < d {
					odd += qr[i+1] * k[(i+1)*BlockB+p]
				}
			}
			out[r*BlockB+p] = (even + odd) * s
		}
	}
}

// BlockAccum does acc[r·D+i] += Σ_{p<n} w[r·B+p]·v[p·stride+i], position
// by position, for r < R = len(acc)/D and i < D: R rows' weights over the
// first n ≤ B = BlockB positions of a block (len(w) ≥ R·B) times the
// block's value rows, stride apart (len(v) ≥ (n−1)·stride + D).
func BlockAccum(acc []float32, d int, w []float32, n int, v []float32, stride int) {
	if n <= 0 || len(acc) == 0 {
		return
	}
	r := len(acc) / d
	blockAccum(acc[:r*d], d, w[:r*BlockB], n, v[:(n-1)*stride+d], stride)
	clearUpper()
}

func blockAccumGo(acc []float32, d int, w []float32, n int, v []float32, stride int) {
	for r := range len(acc) / d {
		ar := acc[r*d : (r+1)*d]
		for p := range n {
			wp, vp := w[r*BlockB+p], v[p*stride:p*stride+d]
			for i := range ar {
				ar[i] += wp * vp[i]
			}
		}
	}
}

// BlockSoftmax turns R rows of one block's scores s ([R][B], B = BlockB)
// into softmax weights e^(s−m[r]) against each row's reference m[r]
// (online softmax). Row r attends to the block's first cnt = rowN[r] − pos
// positions (none when ≤ 0, all when ≥ B); its other lanes get weight 0.
// When a lane beats m[r] by more than SoftmaxSlack, m[r] becomes the
// block's max and the row's output so far, acc[r·d:(r+1)·d], and its
// denominator, kept lane by lane in l[r·B:(r+1)·B] (its sum is the row's
// Σ weights), are multiplied by e^(old−new) first; otherwise weights may
// reach e^SoftmaxSlack and the rescale is skipped. m starts at −Inf, l
// and acc at 0.
func BlockSoftmax(s []float32, rowN []int32, pos int, m, l, acc []float32, d int) {
	rows := len(m)
	blockSoftmax(s[:rows*BlockB], rowN[:rows], pos, m, l[:rows*BlockB], acc[:rows*d], d)
}

func blockSoftmaxGo(s []float32, rowN []int32, pos int, m, l, acc []float32, d int) {
	for r := range m {
		softmaxRow(s[r*BlockB:(r+1)*BlockB], int(rowN[r])-pos, &m[r], l[r*BlockB:(r+1)*BlockB], acc[r*d:(r+1)*d])
	}
}

// softmaxRow is BlockSoftmax of one row with cnt attended lanes.
func softmaxRow(s []float32, cnt int, m *float32, l, acc []float32) {
	cnt = min(cnt, len(s))
	if cnt <= 0 {
		clear(s)
		return
	}
	bm := s[0]
	for _, v := range s[1:cnt] {
		if v > bm { // not max: scores are never NaN, and max's NaN and ±0 rules cost
			bm = v
		}
	}
	if bm > *m+SoftmaxSlack {
		f := float32(math.Exp(float64(*m - bm)))
		Scale(acc, f)
		Scale(l, f)
		*m = bm
	}
	expBlock(s, *m) // lanes past cnt hold other positions' (or stale) scores
	clear(s[cnt:])
	for i, v := range s {
		l[i] += v
	}
}
