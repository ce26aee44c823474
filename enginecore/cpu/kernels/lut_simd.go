//go:build goexperiment.simd && amd64

package kernels

// expandLUT is expandLUTGo in AVX2 (lut_amd64.s) above the Go level: the
// same bytes.
func expandLUT(dst, src []byte, table *[16]int8) {
	nb := len(src) / nibBlockBytes
	if level == levelGo || nb == 0 {
		expandLUTGo(dst, src, table)
		return
	}
	_ = dst[nb*byteBlockBytes-1]
	expandLUTAVX2(&dst[0], &src[0], table, nb)
}

// expandScales writes each of nb blocks' 16 scales (src [nb][16])
// twice into dst [nb][2][16].
func expandScales(dst, src []float32, nb int) {
	if level == levelGo || nb == 0 {
		expandScalesGo(dst, src, nb)
		return
	}
	_, _ = dst[nb*2*GroupRows-1], src[nb*GroupRows-1]
	expandScalesAVX2(&dst[0], &src[0], nb)
}

// expandScalesE8M0 is expandScalesE8M0Go in AVX2 above the Go level:
// the same floats.
func expandScalesE8M0(dst []float32, src []byte, nb int) {
	if level == levelGo || nb == 0 {
		expandScalesE8M0Go(dst, src, nb)
		return
	}
	_, _ = dst[nb*2*GroupRows-1], src[nb*GroupRows-1]
	expandScalesE8M0AVX2(&dst[0], &src[0], nb)
}

//go:noescape
func expandScalesE8M0AVX2(dst *float32, src *byte, nb int)

//go:noescape
func expandLUTAVX2(dst, src *byte, table *[16]int8, nb int)

//go:noescape
func expandScalesAVX2(dst, src *float32, nb int)
