//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"testing"
)

// attnSeq is one sequence of an attention test: contextLen positions in
// the cache, of which the last numQuery are queries in this step (1: a
// decode token; more: a prefill chunk).
type attnSeq struct{ contextLen, numQuery int }

func TestKernelAttention(t *testing.T) {
	tests := []struct {
		name                         string
		numHeads, numKVHeads, hd, bs int
		seqs                         []attnSeq
		numParts                     int
	}{
		{"decode MHA", 4, 4, 64, 16, []attnSeq{{1, 1}, {37, 1}, {16, 1}}, 1},
		{"decode GQA 3 (SmolLM2)", 9, 3, 64, 16, []attnSeq{{100, 1}, {5, 1}}, 1},
		{"decode GQA 4, D 128", 8, 2, 128, 16, []attnSeq{{70, 1}}, 1},
		{"decode GQA 8, B 32", 16, 2, 64, 32, []attnSeq{{65, 1}, {33, 1}}, 1},
		{"prefill chunk", 8, 2, 64, 16, []attnSeq{{45, 45}}, 1},
		{"chunk after cached prefix", 9, 3, 64, 16, []attnSeq{{90, 20}, {7, 1}}, 1},
		{"split-K, 3 partitions", 8, 2, 128, 16, []attnSeq{{300, 1}, {20, 1}}, 3},
		{"split-K, 5 partitions, GQA 16", 16, 1, 64, 16, []attnSeq{{170, 1}}, 5},
	}
	forDevices(t, func(t *testing.T, dev device) {
		o := testOps(t, dev)
		r := newRand(t)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				G, D, bs := tt.numHeads/tt.numKVHeads, tt.hd, tt.bs
				kvDim, stride := tt.numKVHeads*D, (tt.numHeads+2*tt.numKVHeads)*D
				// Shuffled blocks for every sequence.
				numBlocks, maxBlocks, maxCtx := 0, 0, 0
				for _, s := range tt.seqs {
					numBlocks += ceilDiv(s.contextLen, bs)
					maxBlocks = max(maxBlocks, ceilDiv(s.contextLen, bs))
					maxCtx = max(maxCtx, s.contextLen)
				}
				perm := r.Perm(numBlocks)
				tables := make([]int32, len(tt.seqs)*maxBlocks)
				var positions, tokSeq []int32
				next := 0
				for si, s := range tt.seqs {
					for i := range ceilDiv(s.contextLen, bs) {
						tables[si*maxBlocks+i] = int32(perm[next])
						next++
					}
					for p := s.contextLen - s.numQuery; p < s.contextLen; p++ {
						positions = append(positions, int32(p))
						tokSeq = append(tokSeq, int32(si))
					}
				}
				numTok := len(positions)
				kc, vc := bf16s(normals(r, numBlocks*bs*kvDim, 1)), bf16s(normals(r, numBlocks*bs*kvDim, 1))
				qkv := normals(r, numTok*stride, 1)
				scale := float32(1 / math.Sqrt(float64(D)))

				numParts, partLen := 1, ceilDiv(maxCtx, attnTile)*attnTile
				if tt.numParts > 1 {
					partLen = ceilDiv(ceilDiv(maxCtx, attnTile), tt.numParts) * attnTile
					numParts = ceilDiv(maxCtx, partLen)
				}
				out := devBuf(t, dev, numTok*tt.numHeads*D*2, nanBF16)
				a := &attnArgs{
					out:         out,
					partAcc:     devBuf(t, dev, numTok*tt.numHeads*numParts*D*4, nanF32),
					partML:      devBuf(t, dev, numTok*tt.numHeads*numParts*2*4, nanF32),
					qkv:         toDev(t, dev, qkv),
					kc:          toDev(t, dev, kc),
					vc:          toDev(t, dev, vc),
					tokSeq:      toDev(t, dev, tokSeq),
					positions:   toDev(t, dev, positions),
					blockTables: toDev(t, dev, tables),
					maxBlocks:   maxBlocks, numTok: numTok, rowStride: stride, numHeads: tt.numHeads,
					numKVHeads: tt.numKVHeads, headDim: D, blockSize: bs, numParts: numParts, partLen: partLen,
					scale: scale,
				}
				if err := o.attention(a); err != nil {
					t.Fatal(err)
				}
				got := unbf16(fromDev[uint16](t, dev, out, numTok*tt.numHeads*D))
				kf, vf := unbf16(kc), unbf16(vc)
				for tok := range numTok {
					table := tables[int(tokSeq[tok])*maxBlocks:]
					n := int(positions[tok]) + 1
					for h := range tt.numHeads {
						kvh := h / G
						q := qkv[tok*stride+h*D : tok*stride+(h+1)*D]
						scores := make([]float64, n)
						maxS := math.Inf(-1)
						for p := range n {
							slot := int(table[p/bs])*bs + p%bs
							var s float64
							for d := range D {
								s += float64(q[d]) * kf[slot*kvDim+kvh*D+d]
							}
							scores[p] = s * float64(scale)
							maxS = max(maxS, scores[p])
						}
						want := make([]float64, D)
						var sum float64
						for p := range n {
							w := math.Exp(scores[p] - maxS)
							sum += w
							slot := int(table[p/bs])*bs + p%bs
							for d := range D {
								want[d] += w * vf[slot*kvDim+kvh*D+d]
							}
						}
						for d := range want {
							want[d] /= sum
						}
						off := (tok*tt.numHeads + h) * D
						if e := relErr(got[off:off+D], want); e > 1e-2 {
							t.Errorf("token %d (position %d) head %d: relative error %.2g > 1e-2", tok, n-1, h, e)
						}
					}
				}
			})
		}
	})
}

func TestPlanAttention(t *testing.T) {
	b := &Backend{dev: fakeSMs(132), cfg: modelCfg(32, 8), capParts: 4 * 132 * 4}
	tests := []struct {
		numTok, maxCtx int
		wantParts      int
	}{
		{1, 1, 1},       // one tile: nothing to split
		{1, 8192, 32},   // 8 blocks: split to about 2 per SM (33 wanted, 8 tiles each)
		{32, 4096, 2},   // 256 blocks: just under 2·132
		{64, 4096, 1},   // 512 blocks: enough already
		{2048, 2048, 1}, // prefill
		{1, 100, 4},     // capped by the number of tiles
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("T=%d ctx=%d", tt.numTok, tt.maxCtx), func(t *testing.T) {
			p, partLen := b.planAttention(tt.numTok, tt.maxCtx)
			if p != tt.wantParts {
				t.Errorf("partitions = %d, want %d", p, tt.wantParts)
			}
			if partLen%attnTile != 0 || p*partLen < tt.maxCtx || (p-1)*partLen >= tt.maxCtx {
				t.Errorf("%d partitions of %d positions do not tile %d positions", p, partLen, tt.maxCtx)
			}
			if tt.numTok*32*p > b.capParts && p > 1 {
				t.Errorf("T·H·P = %d exceeds the workspace of %d", tt.numTok*32*p, b.capParts)
			}
		})
	}
}
