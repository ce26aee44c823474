package kernels

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// TestLUTPacking: below the AVX-512 level the table types and Q3_K keep
// their 4-bit indices (famLUT), as small as their files give or take the
// scales (0.63 bytes a weight; Q3_K, with a float32 scale per 16, 0.75);
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
			if typ == model.Q3_K {
				most = 0.75
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
					expandScalesGo(wantSc, m.sc.f[g*m.nb*GroupRows:(g+1)*m.nb*GroupRows], m.nb)
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
