//go:build cuda

package cuda

import (
	"math"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// Kernel tests: each kernel against a Go reference, on every test device.
// Tolerances: bit-exact for gathers, dequantization, RoPE, bias and cache
// writes (the kernels round like the Go code); float64 references with a
// relative-norm bound elsewhere (stated per test).

func TestKernelDequant(t *testing.T) {
	types := kernelTypes
	forDevices(t, func(t *testing.T, dev device) {
		o := testOps(t, dev)
		r := newRand(t)
		const rows, cols = 6, 512
		for _, typ := range types {
			t.Run(typ.String(), func(t *testing.T) {
				tensor, err := model.NewTensor("w", typ, []int{cols, rows}, normals(r, rows*cols, 1))
				if err != nil {
					t.Fatal(err)
				}
				want, err := tensor.Float32s()
				if err != nil {
					t.Fatal(err)
				}
				src := toDev(t, dev, tensor.Data)
				rowBytes := int64(typ.RowBytes(cols))

				// All rows, f32 and bf16.
				f32 := devBuf(t, dev, rows*cols*4, nanF32)
				bf := devBuf(t, dev, rows*cols*2, nanBF16)
				if err := o.dequantRows(f32, false, src, typ, rowBytes, 0, rows, cols); err != nil {
					t.Fatal(err)
				}
				if err := o.dequantRows(bf, true, src, typ, rowBytes, 0, rows, cols); err != nil {
					t.Fatal(err)
				}
				if i, bad := firstDiff(bits(fromDev[float32](t, dev, f32, rows*cols)), bits(want)); bad {
					t.Errorf("f32 element %d: got %v, want %v", i, fromDev[float32](t, dev, f32, rows*cols)[i], want[i])
				}
				if i, bad := firstDiff(fromDev[uint16](t, dev, bf, rows*cols), bf16s(want)); bad {
					t.Errorf("bf16 element %d differs from F32ToBF16(%v)", i, want[i])
				}

				// Gather (the embedding): rows 3, 0, 3, 5 as f32.
				ids := []int32{3, 0, 3, 5}
				g := devBuf(t, dev, len(ids)*cols*4, nanF32)
				if err := o.dequantRows(g, false, src, typ, rowBytes, toDev(t, dev, ids), len(ids), cols); err != nil {
					t.Fatal(err)
				}
				got := bits(fromDev[float32](t, dev, g, len(ids)*cols))
				for i, id := range ids {
					if j, bad := firstDiff(got[i*cols:(i+1)*cols], bits(want[int(id)*cols:(int(id)+1)*cols])); bad {
						t.Errorf("gathered row %d (token %d) element %d differs", i, id, j)
					}
				}
			})
		}
	})
}

func bits(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = math.Float32bits(x)
	}
	return out
}

// rmsRef is the float64 reference: x·w / sqrt(mean(x²)+eps).
func rmsRef(x, w []float32, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	s := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v) * s * float64(w[i])
	}
	return out
}

func TestKernelRMSNorm(t *testing.T) {
	tests := []struct {
		name  string
		rows  int   // rows of x
		dim   int   //
		delta bool  // fused residual add
		pick  []int // rows to normalize (nil: all)
	}{
		{"plain", 5, 576, false, nil},
		{"fused add", 5, 576, true, nil},
		{"odd width", 3, 100, true, nil},
		{"picked rows", 6, 256, true, []int{5, 2}},
		{"wide", 2, 4096, true, nil},
	}
	const eps = 1e-5
	forDevices(t, func(t *testing.T, dev device) {
		o := testOps(t, dev)
		r := newRand(t)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				x, d, w := normals(r, tt.rows*tt.dim, 1), normals(r, tt.rows*tt.dim, 0.5), normals(r, tt.dim, 1)
				xd, wd := toDev(t, dev, x), toDev(t, dev, w)
				var dd, rowsD uintptr
				if tt.delta {
					dd = toDev(t, dev, d)
				}
				pick := tt.pick
				if pick == nil {
					for i := range tt.rows {
						pick = append(pick, i)
					}
				} else {
					rows := make([]int32, len(pick))
					for i, p := range pick {
						rows[i] = int32(p)
					}
					rowsD = toDev(t, dev, rows)
				}
				out := devBuf(t, dev, len(pick)*tt.dim*2, nanBF16)
				if err := o.rmsNorm(out, xd, dd, wd, rowsD, len(pick), tt.dim, eps); err != nil {
					t.Fatal(err)
				}
				gotX := fromDev[float32](t, dev, xd, tt.rows*tt.dim)
				got := unbf16(fromDev[uint16](t, dev, out, len(pick)*tt.dim))
				for i, p := range pick {
					row := x[p*tt.dim : (p+1)*tt.dim]
					if tt.delta {
						sum := make([]float32, tt.dim)
						for j := range sum {
							sum[j] = row[j] + d[p*tt.dim+j]
						}
						if j, bad := firstDiff(bits(gotX[p*tt.dim:(p+1)*tt.dim]), bits(sum)); bad {
							t.Errorf("row %d: residual element %d: got %v, want %v", p, j, gotX[p*tt.dim+j], sum[j])
						}
						row = sum
					}
					// bf16 output: one rounding of 2^-9 relative, plus f32 sums.
					if e := relErr(got[i*tt.dim:(i+1)*tt.dim], rmsRef(row, w, eps)); e > 4e-3 {
						t.Errorf("row %d: relative error %.2g > 4e-3", p, e)
					}
				}
			})
		}
	})
}

func TestKernelHeadNorm(t *testing.T) {
	const numTok, numHeads, numKV, hd, eps = 3, 6, 2, 64, 1e-6
	forDevices(t, func(t *testing.T, dev device) {
		o := testOps(t, dev)
		r := newRand(t)
		stride := (numHeads + 2*numKV) * hd
		qkv, qw, kw := normals(r, numTok*stride, 2), normals(r, hd, 1), normals(r, hd, 1)
		d := toDev(t, dev, qkv)
		if err := o.headNorm(d, toDev(t, dev, qw), toDev(t, dev, kw), numTok, stride, numHeads, numKV, hd, eps); err != nil {
			t.Fatal(err)
		}
		got := f64s(fromDev[float32](t, dev, d, numTok*stride))
		for tok := range numTok {
			for h := range numHeads + 2*numKV {
				off := tok*stride + h*hd
				want := f64s(qkv[off : off+hd]) // V heads are untouched
				switch {
				case h < numHeads:
					want = rmsRef(qkv[off:off+hd], qw, eps)
				case h < numHeads+numKV:
					want = rmsRef(qkv[off:off+hd], kw, eps)
				}
				if e := relErr(got[off:off+hd], want); e > 1e-5 {
					t.Errorf("token %d head %d: relative error %.2g > 1e-5", tok, h, e)
				}
			}
		}
	})
}

func TestKernelRoPE(t *testing.T) {
	const numHeads, numKV, hd = 4, 2, 64
	positions := []int32{0, 1, 17, 1000, 4095}
	for _, neox := range []bool{false, true} {
		name := map[bool]string{false: "normal", true: "neox"}[neox]
		t.Run(name, func(t *testing.T) {
			forDevices(t, func(t *testing.T, dev device) {
				o := testOps(t, dev)
				r := newRand(t)
				freq, err := ropeFreqs(model.Config{HeadDim: hd, RopeTheta: 10000,
					RopeScaling: model.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OrigContextLen: 1024}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				table := ropeTable(freq, 4096)
				stride := (numHeads + 2*numKV) * hd
				qkv := normals(r, len(positions)*stride, 1)
				d := toDev(t, dev, qkv)
				if err := o.rope(d, toDev(t, dev, positions), toDev(t, dev, table), len(positions), stride, numHeads, numKV, hd, neox); err != nil {
					t.Fatal(err)
				}
				// The CPU backend's rotation, in float32, product by product.
				want := append([]float32(nil), qkv...)
				half := hd / 2
				for i, p := range positions {
					cs, sn := table[int(p)*hd:int(p)*hd+half], table[int(p)*hd+half:int(p+1)*hd]
					for h := range numHeads + numKV {
						x := want[i*stride+h*hd : i*stride+(h+1)*hd]
						for j := range half {
							a, b := 2*j, 2*j+1
							if neox {
								a, b = j, j+half
							}
							x0, x1 := x[a], x[b]
							x[a] = x0*cs[j] - x1*sn[j]
							x[b] = x0*sn[j] + x1*cs[j]
						}
					}
				}
				if i, bad := firstDiff(bits(fromDev[float32](t, dev, d, len(qkv))), bits(want)); bad {
					t.Errorf("element %d (token %d) differs from the Go rotation", i, i/stride)
				}
			})
		})
	}
}

func TestKernelAddBias(t *testing.T) {
	forDevices(t, func(t *testing.T, dev device) {
		o := testOps(t, dev)
		r := newRand(t)
		const numTok, n = 3, 700
		x, bias := normals(r, numTok*n, 1), normals(r, n, 1)
		d := toDev(t, dev, x)
		if err := o.addBias(d, toDev(t, dev, bias), numTok, n); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, len(x))
		for i := range x {
			want[i] = x[i] + bias[i%n]
		}
		if i, bad := firstDiff(bits(fromDev[float32](t, dev, d, len(x))), bits(want)); bad {
			t.Errorf("element %d differs", i)
		}
	})
}

func TestKernelSiLUMul(t *testing.T) {
	forDevices(t, func(t *testing.T, dev device) {
		o := testOps(t, dev)
		r := newRand(t)
		const numTok, f = 3, 1000
		gu := normals(r, numTok*2*f, 3)
		out := devBuf(t, dev, numTok*f*2, nanBF16)
		if err := o.siluMul(out, toDev(t, dev, gu), numTok, f); err != nil {
			t.Fatal(err)
		}
		got := unbf16(fromDev[uint16](t, dev, out, numTok*f))
		for tok := range numTok {
			for i := range f {
				g, u := float64(gu[tok*2*f+i]), float64(gu[tok*2*f+f+i])
				want := g / (1 + math.Exp(-g)) * u
				// One bf16 rounding (2^-9) plus ex2.approx (2^-22), relative.
				if d := math.Abs(got[tok*f+i] - want); d > math.Abs(want)*0x1p-8+1e-30 {
					t.Fatalf("token %d element %d: got %v, want %v", tok, i, got[tok*f+i], want)
				}
			}
		}
	})
}

func TestKernelReshapeAndCache(t *testing.T) {
	const numHeads, numKV, hd, bs, numBlocks = 4, 2, 64, 16, 8
	kvDim, stride := numKV*hd, (numHeads+2*numKV)*hd
	// Shuffled blocks, a padding token (slot < 0), offsets across blocks.
	slots := []int32{5*bs + 3, 2*bs + 0, -1, 7*bs + 15, 0*bs + 9}
	forDevices(t, func(t *testing.T, dev device) {
		o := testOps(t, dev)
		r := newRand(t)
		qkv := normals(r, len(slots)*stride, 1)
		cacheBytes := numBlocks * bs * kvDim * 2
		kc, vc := devBuf(t, dev, cacheBytes, nanBF16), devBuf(t, dev, cacheBytes, nanBF16)
		if err := o.reshapeAndCache(kc, vc, toDev(t, dev, qkv), toDev(t, dev, slots), len(slots), stride, numHeads*hd, kvDim); err != nil {
			t.Fatal(err)
		}
		wantK, wantV := make([]uint16, cacheBytes/2), make([]uint16, cacheBytes/2)
		for i := range wantK {
			wantK[i], wantV[i] = 0x7fc1, 0x7fc1 // untouched
		}
		for tok, s := range slots {
			if s < 0 {
				continue
			}
			k := qkv[tok*stride+numHeads*hd:]
			for i := range kvDim {
				wantK[int(s)*kvDim+i] = model.F32ToBF16(k[i])
				wantV[int(s)*kvDim+i] = model.F32ToBF16(k[kvDim+i])
			}
		}
		if i, bad := firstDiff(fromDev[uint16](t, dev, kc, cacheBytes/2), wantK); bad {
			t.Errorf("K cache element %d (slot %d) differs", i, i/kvDim)
		}
		if i, bad := firstDiff(fromDev[uint16](t, dev, vc, cacheBytes/2), wantV); bad {
			t.Errorf("V cache element %d (slot %d) differs", i, i/kvDim)
		}
	})
}

func TestMatmulBT(t *testing.T) {
	tests := []struct {
		name          string
		rows, in, out int
		yF32          bool
	}{
		{"decode f32", 1, 576, 192, true},
		{"batch f32", 7, 256, 1536, true},
		{"batch bf16", 5, 320, 64, false},
	}
	forDevices(t, func(t *testing.T, dev device) {
		r := newRand(t)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				x, w := bf16s(normals(r, tt.rows*tt.in, 1)), bf16s(normals(r, tt.out*tt.in, 1))
				size := 2
				if tt.yF32 {
					size = 4
				}
				y := devBuf(t, dev, tt.rows*tt.out*size, nanF32)
				if err := dev.MatmulBT(y, tt.yF32, toDev(t, dev, x), toDev(t, dev, w), tt.rows, tt.in, tt.out); err != nil {
					t.Fatal(err)
				}
				xf, wf := unbf16(x), unbf16(w)
				want := make([]float64, tt.rows*tt.out)
				for i := range tt.rows {
					for o := range tt.out {
						for k := range tt.in {
							want[i*tt.out+o] += xf[i*tt.in+k] * wf[o*tt.in+k]
						}
					}
				}
				var got []float64
				bound := 1e-5 // f32 sums of exact bf16 products
				if tt.yF32 {
					got = f64s(fromDev[float32](t, dev, y, len(want)))
				} else {
					got, bound = unbf16(fromDev[uint16](t, dev, y, len(want))), 4e-3
				}
				if e := relErr(got, want); e > bound {
					t.Errorf("relative error %.2g > %g", e, bound)
				}
			})
		}
	})
}

func TestKernelImages(t *testing.T) {
	tests := []struct {
		env          string
		major, minor int
		want         []string // name prefixes, in order
	}{
		{"", 9, 0, []string{"embedded sm_90 cubin", "embedded PTX"}},
		{"", 8, 0, []string{"embedded PTX"}},
		{"ptx", 9, 0, []string{"embedded PTX"}},
		{"cubin", 8, 9, []string{"embedded sm_90 cubin"}},
		{"/tmp/k.fatbin", 9, 0, []string{"$TANDEM_CUDA_KERNELS (/tmp/k.fatbin)"}},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv(EnvKernels, tt.env)
			ims := kernelImages(tt.major, tt.minor)
			if len(ims) != len(tt.want) {
				t.Fatalf("%d images, want %v", len(ims), tt.want)
			}
			for i, im := range ims {
				if !strings.HasPrefix(im.name, tt.want[i]) {
					t.Errorf("image %d is %q, want %q…", i, im.name, tt.want[i])
				}
			}
			if tt.env == "" || tt.env == "ptx" || tt.env == "cubin" {
				for _, im := range ims {
					if b, err := im.load(); err != nil || len(b) < 1000 {
						t.Errorf("%s: %d bytes, %v", im.name, len(b), err)
					}
				}
			}
		})
	}
}
