package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// TestLUTPacking: below the AVX-512 level the table types and Q3_K keep
// their 4-bit indices (famLUT), as small as their files give or take the
// scales (0.63 bytes a weight; MXFP4, E8M0 bytes as in its file, 0.53;
// Q3_K, with a float32 scale per 16, 0.75);
// the expansion the kernels read is the Go one's, byte for byte, at
// every level this machine has.
func TestLUTPacking(t *testing.T) {
	paths(t, func(t *testing.T) {
		for _, typ := range []model.DType{model.IQ4_NL, model.IQ4_XS, model.MXFP4, model.Q3_K} {
			const in, out = 512, 40
			m, err := Pack(randTensor(t, typ, out, in, 3))
			if err != nil {
				t.Fatal(err)
			}
			if !lutPacking() {
				if m.fam == famLUT {
					t.Errorf("%v: famLUT at level %v", typ, level)
				}
				continue
			}
			perWeight, most := float64(m.Bytes())/float64(m.NumGroups()*GroupRows*in), 0.63
			switch typ {
			case model.Q3_K:
				most = 0.75
			case model.MXFP4:
				most = float64(model.MXFP4.RowBytes(in)) / in
			}
			if m.fam != famLUT || perWeight > most {
				t.Errorf("%v: family %d, %.3f bytes a weight; want famLUT at most %.2f", typ, m.fam, perWeight, most)
			}
			var s lutScratch
			for g := range m.NumGroups() {
				qs, sc := m.expandGroup(g, &s)
				want := make([]byte, m.nb*byteBlockBytes)
				expandLUTGo(want, m.qs[g*m.nb*nibBlockBytes:(g+1)*m.nb*nibBlockBytes], lutTables[typ])
				if !slices.Equal(qs, want) {
					t.Fatalf("%v group %d: expanded quants differ from expandLUTGo's", typ, g)
				}
				if sc.f != nil && typ == model.Q3_K {
					if !slices.Equal(sc.f, m.sc.f[g*m.nb*2*GroupRows:(g+1)*m.nb*2*GroupRows]) {
						t.Fatalf("%v group %d: scales are not the group's own two per 32", typ, g)
					}
				} else if sc.f != nil {
					wantSc := make([]float32, m.nb*2*GroupRows)
					if typ == model.MXFP4 {
						expandScalesE8M0Go(wantSc, m.sc.e[g*m.nb*GroupRows:(g+1)*m.nb*GroupRows], m.nb)
					} else {
						expandScalesGo(wantSc, m.sc.f[g*m.nb*GroupRows:(g+1)*m.nb*GroupRows], m.nb)
					}
					if !slices.Equal(sc.f, wantSc) {
						t.Fatalf("%v group %d: expanded scales differ from expandScalesGo's", typ, g)
					}
				}
			}
		}
	})
}

// TestExpandLUTAnyBytes: every index byte expands as the Go loop does.
func TestExpandLUTAnyBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]byte, 3*nibBlockBytes)
	for i := range src {
		src[i] = byte(r.IntN(256))
	}
	for _, table := range []*[16]int8{&model.IQ4Values, &model.MXFP4Values, &q3KValues} {
		got, want := make([]byte, 3*byteBlockBytes), make([]byte, 3*byteBlockBytes)
		expandLUT(got, src, table)
		expandLUTGo(want, src, table)
		if !slices.Equal(got, want) {
			t.Errorf("expandLUT differs from expandLUTGo at level %v", level)
		}
	}
}

// TestExpandScalesE8M0AllBytes: every E8M0 byte, at every position of a
// block, expands to model.MXFP4Scale's float (subnormals, 1 and 2^127
// included), twice, at every level.
func TestExpandScalesE8M0AllBytes(t *testing.T) {
	paths(t, func(t *testing.T) {
		const nb = 32 // 512 bytes: every value twice, at other lanes
		src := make([]byte, nb*GroupRows)
		for i := range src {
			src[i] = byte(i*7 + i/256)
		}
		got := make([]float32, nb*2*GroupRows)
		expandScalesE8M0(got, src, nb)
		for j := range nb {
			for r := range GroupRows {
				want := model.MXFP4Scale(src[j*GroupRows+r])
				a, b := got[2*j*GroupRows+r], got[(2*j+1)*GroupRows+r]
				if math.Float32bits(a) != math.Float32bits(want) || math.Float32bits(b) != math.Float32bits(want) {
					t.Fatalf("byte %#x: %v and %v, want %v", src[j*GroupRows+r], a, b, want)
				}
			}
		}
	})
}
