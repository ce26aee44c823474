package kernels

// Attention over a float16 KV block read in place: BlockScores and
// BlockAccum with the keys or values as float16 bits, widened as they
// are loaded. Widening is exact and each lane keeps the float32 kernel's
// chain, so the results have the bits the float32 kernels give on the
// block converted by HalfToFloat — the float16 cache only halves the
// bytes attention reads.

// HalfDirect reports whether BlockScoresHalf and BlockAccumHalf read
// float16 blocks of head dimension d directly (AVX2 with F16C, d a
// multiple of 32). Elsewhere they convert the block first, allocating:
// callers that run often convert into their own scratch with
// HalfToFloat and use the float32 kernels instead.
func HalfDirect(d int) bool { return halfDirect(d) }

// BlockScoresHalf is BlockScores with the block's keys as float16 bits
// (k [D][B], len(k) ≥ D·B).
func BlockScoresHalf(out, q []float32, k []uint16, s float32) {
	r := len(out) / BlockB
	if r == 0 {
		return
	}
	d := len(q) / r
	if !halfDirect(d) {
		kf := make([]float32, d*BlockB)
		HalfToFloat(kf, k)
		blockScores(out[:r*BlockB], q[:r*d], kf, d, s)
		return
	}
	blockScoresHalf(out[:r*BlockB], q[:r*d], k[:d*BlockB], d, s)
}

// BlockAccumHalf is BlockAccum with the block's value rows as float16
// bits, stride halves apart (len(v) ≥ (n−1)·stride + D).
func BlockAccumHalf(acc []float32, d int, w []float32, n int, v []uint16, stride int) {
	if n <= 0 || len(acc) == 0 {
		return
	}
	r := len(acc) / d
	if !halfDirect(d) {
		vf := make([]float32, n*d)
		for p := range n {
			HalfToFloat(vf[p*d:(p+1)*d], v[p*stride:])
		}
		blockAccum(acc[:r*d], d, w[:r*BlockB], n, vf, d)
		return
	}
	blockAccumHalf(acc[:r*d], d, w[:r*BlockB], n, v[:(n-1)*stride+d], stride)
}
