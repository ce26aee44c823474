package model

import (
	"encoding/binary"
	"math"
)

// Reference K-quant quantizers: ports of ggml's quantize_row_q{4,5,6}_K_ref
// (no importance matrix), with make_qkx2_quants and make_qx_quants.

const groupMaxEps = 1e-15

// makeQKX2 fits x ≈ scale·L - min with L in [0, nmax] minimising the
// weighted squared error; it returns scale and min (≥ 0). Port of ggml's
// make_qkx2_quants with use_mad = false.
func makeQKX2(nmax int, x, weights []float32, L, laux []uint8, rmin, rdelta float32, nstep int) (scale, theMin float32) {
	n := len(x)
	lo, hi := x[0], x[0]
	sumW := weights[0]
	sumX := sumW * x[0]
	for i := 1; i < n; i++ {
		lo, hi = min(lo, x[i]), max(hi, x[i])
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	lo = min(lo, 0)
	if hi == lo {
		clear(L[:n])
		return 0, -lo
	}
	iscale := float32(nmax) / (hi - lo)
	scale = 1 / iscale
	var bestErr float32
	for i := range n {
		l := max(0, min(nmax, nearestInt(float32(iscale*(x[i]-lo)))))
		L[i] = uint8(l)
		diff := float32(scale*float32(l)) + lo - x[i]
		bestErr += float32(weights[i] * float32(diff*diff))
	}
	for is := 0; is <= nstep; is++ {
		iscale = (rmin + float32(rdelta*float32(is)) + float32(nmax)) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i := range n {
			l := max(0, min(nmax, nearestInt(float32(iscale*(x[i]-lo)))))
			laux[i] = uint8(l)
			w := weights[i]
			fl := float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D <= 0 {
			continue
		}
		thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
		thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
		if thisMin > 0 {
			thisMin = 0
			thisScale = sumXL / sumL2
		}
		var curErr float32
		for i := range n {
			diff := float32(thisScale*float32(laux[i])) + thisMin - x[i]
			curErr += float32(weights[i] * float32(diff*diff))
		}
		if curErr < bestErr {
			copy(L[:n], laux[:n])
			bestErr, scale, lo = curErr, thisScale, thisMin
		}
	}
	return scale, -lo
}

// makeQX fits x ≈ scale·(L-nmax) with L-nmax in [-nmax, nmax-1], weights
// x² (ggml's make_qx_quants with rmse_type 1 and no quant weights).
func makeQX(nmax int, x []float32, L []int8) float32 {
	var amax, maxv float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, maxv = a, v
		}
	}
	if amax < groupMaxEps {
		clear(L[:len(x)])
		return 0
	}
	iscale := -float32(nmax) / maxv
	var sumLX, sumL2 float32
	for i, v := range x {
		l := max(-nmax, min(nmax-1, nearestInt(float32(iscale*v))))
		L[i] = int8(l + nmax)
		w := float32(v * v)
		sumLX += float32(float32(w*v) * float32(l))
		sumL2 += float32(float32(w*float32(l)) * float32(l))
	}
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := scale * sumLX
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(float32(nmax) + float32(0.1*float32(is))) / maxv
		sumLX, sumL2 = 0, 0
		for _, v := range x {
			l := max(-nmax, min(nmax-1, nearestInt(float32(iscale*v))))
			w := float32(v * v)
			sumLX += float32(float32(w*v) * float32(l))
			sumL2 += float32(float32(w*float32(l)) * float32(l))
		}
		if sumL2 > 0 && float32(sumLX*sumLX) > float32(best*sumL2) {
			for i, v := range x {
				l := max(-nmax, min(nmax-1, nearestInt(float32(iscale*v))))
				L[i] = int8(l + nmax)
			}
			scale = sumLX / sumL2
			best = scale * sumLX
		}
	}
	return scale
}

// packScalesK4 stores 8 six-bit scales and mins in the 12-byte K4 packing
// (inverse of ScaleMinK4).
func packScalesK4(ls, lm *[8]uint8, out []byte) {
	clear(out[:12])
	for j := range 8 {
		if j < 4 {
			out[j] = ls[j]
			out[j+4] = lm[j]
		} else {
			out[j+4] = ls[j]&0xf | (lm[j]&0xf)<<4
			out[j-4] |= (ls[j] >> 4) << 6
			out[j] |= (lm[j] >> 4) << 6
		}
	}
}

// quantKAffine is the shared part of the Q4_K and Q5_K quantizers: per
// 32-element sub-block scale and min, then 6-bit super-block quantization of
// both. It fills the 4-byte d/dmin header, the 12 scale bytes and L
// (values in [0, nmax]).
func quantKAffine(x []float32, nmax int, rmin, rdelta float32, nstep int, blk []byte, L *[qkK]uint8) {
	var scales, mins [8]float32
	var weights [32]float32
	var laux [32]uint8
	var maxScale, maxMin float32
	for j := range 8 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := float32(math.Sqrt(float64(sumX2 / 32)))
		for l, v := range xs {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2(nmax, xs, weights[:], L[32*j:32*j+32], laux[:], rmin, rdelta, nstep)
		maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	var ls, lm [8]uint8
	for j := range 8 {
		ls[j] = uint8(min(63, nearestInt(float32(invScale*scales[j]))))
		lm[j] = uint8(min(63, nearestInt(float32(invMin*mins[j]))))
	}
	packScalesK4(&ls, &lm, blk[4:16])
	binary.LittleEndian.PutUint16(blk, F32ToF16(maxScale/63))
	binary.LittleEndian.PutUint16(blk[2:], F32ToF16(maxMin/63))
	d, dmin := F16ToF32(binary.LittleEndian.Uint16(blk)), F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
	for j := range 8 {
		sc, m := ScaleMinK4(j, blk[4:16])
		dd := d * float32(sc)
		if dd == 0 {
			continue
		}
		dm := dmin * float32(m)
		for i := range 32 {
			L[32*j+i] = uint8(max(0, min(nmax, nearestInt((x[32*j+i]+dm)/dd))))
		}
	}
}

func quantQ4K(x []float32, blk []byte) {
	var L [qkK]uint8
	quantKAffine(x, 15, -1, 0.1, 20, blk, &L)
	qs := blk[16:144]
	for k := range 4 {
		for l := range 32 {
			qs[32*k+l] = L[64*k+l] | L[64*k+32+l]<<4
		}
	}
}

func quantQ5K(x []float32, blk []byte) {
	var L [qkK]uint8
	quantKAffine(x, 31, -0.5, 0.1, 15, blk, &L)
	qh, qs := blk[16:48], blk[48:176]
	clear(qh)
	for k := range 4 {
		for l := range 32 {
			l1, l2 := L[64*k+l], L[64*k+32+l]
			if l1 > 15 {
				l1 -= 16
				qh[l] |= 1 << (2 * k)
			}
			if l2 > 15 {
				l2 -= 16
				qh[l] |= 2 << (2 * k)
			}
			qs[32*k+l] = l1 | l2<<4
		}
	}
}

func quantQ6K(x []float32, blk []byte) {
	var L [qkK]int8
	var scales [16]float32
	var maxScale, maxAbs float32
	for ib := range 16 {
		s := makeQX(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
		scales[ib] = s
		if a := abs32(s); a > maxAbs {
			maxAbs, maxScale = a, s
		}
	}
	clear(blk[:210])
	if maxAbs < groupMaxEps {
		return
	}
	iscale := -128 / maxScale
	binary.LittleEndian.PutUint16(blk[208:], F32ToF16(1/iscale))
	sc := blk[192:208]
	for ib := range 16 {
		sc[ib] = byte(int8(min(127, nearestInt(float32(iscale*scales[ib])))))
	}
	d0 := F16ToF32(binary.LittleEndian.Uint16(blk[208:]))
	for j := range 16 {
		d := d0 * float32(int8(sc[j]))
		if d == 0 {
			continue
		}
		for i := range 16 {
			L[16*j+i] = int8(max(-32, min(31, nearestInt(x[16*j+i]/d))) + 32)
		}
	}
	for n := range 2 {
		ql, qh := blk[64*n:64*n+64], blk[128+32*n:128+32*n+32]
		Ln := L[128*n : 128*n+128]
		for l := range 32 {
			q1, q2, q3, q4 := uint8(Ln[l]), uint8(Ln[l+32]), uint8(Ln[l+64]), uint8(Ln[l+96])
			ql[l] = q1&0xf | (q3&0xf)<<4
			ql[l+32] = q2&0xf | (q4&0xf)<<4
			qh[l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
		}
	}
}
