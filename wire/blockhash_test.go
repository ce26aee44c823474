package wire_test

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/wire"
)

// TestHashBlockTokens pins the byte layout: the expected values come from
// Python's hashlib over the same bytes.
func TestHashBlockTokens(t *testing.T) {
	h0, buf := wire.HashBlockTokens(nil, wire.BlockHash{}, []int32{1, 2, 3, -4}, []byte("salt"))
	h1, _ := wire.HashBlockTokens(buf, h0, []int32{5, 6, 7, 8}, nil)
	got := []string{hex.EncodeToString(h0[:]), hex.EncodeToString(h1[:]), fmt.Sprintf("%#x", h0.Uint64())}
	want := []string{"bcf2b0636cc1bd7265411fabf020f988", "72f34ccdca897cae9e28beb8b9b22a19", "0xbcf2b0636cc1bd72"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hashes mismatch (-want +got):\n%s", diff)
	}
}

// TestBlockHashesChain: BlockHashes is HashBlockTokens chained over the
// full blocks, the salt on block 0 only, partial blocks left out.
func TestBlockHashesChain(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		numTokens, blockSize int
		salt                 string
	}{
		{0, 16, ""}, {15, 16, ""}, {16, 16, ""}, {100, 16, ""}, {100, 16, "tenant-a"},
		{33, 1, ""}, {257, 32, "s"}, {64, 4, "ünïcode salt"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%d/%q", tt.numTokens, tt.blockSize, tt.salt), func(t *testing.T) {
			toks := make([]int32, tt.numTokens)
			for i := range toks {
				toks[i] = int32(rng.IntN(200000)) - 1000 // negative ids too: the layout is u32 bits
			}
			var want []uint64
			var parent wire.BlockHash
			for i := 0; (i+1)*tt.blockSize <= len(toks); i++ {
				var extra []byte
				if i == 0 {
					extra = []byte(tt.salt)
				}
				parent, _ = wire.HashBlockTokens(nil, parent, toks[i*tt.blockSize:(i+1)*tt.blockSize], extra)
				want = append(want, parent.Uint64())
			}
			if diff := cmp.Diff(want, wire.BlockHashes(nil, toks, tt.blockSize, tt.salt)); diff != "" {
				t.Errorf("BlockHashes (-chained +got):\n%s", diff)
			}
		})
	}
}

func TestLoRASalt(t *testing.T) {
	a := []wire.LoRARequest{{Name: "a", ID: 1, Path: "/a.gguf", Scale: 1}}
	tests := []struct {
		name  string
		x, y  string
		equal bool
	}{
		{"no adapters is the salt", wire.LoRASalt("s", nil), "s", true},
		{"a zero scale is no adapter", wire.LoRASalt("s", []wire.LoRARequest{{Path: "/a.gguf"}}), "s", true},
		{"an adapter changes the salt", wire.LoRASalt("s", a), "s", false},
		{"the scale counts", wire.LoRASalt("", a), wire.LoRASalt("", []wire.LoRARequest{{Path: "/a.gguf", Scale: 0.5}}), false},
		{"the name does not (the file does)", wire.LoRASalt("", a), wire.LoRASalt("", []wire.LoRARequest{{Name: "b", ID: 7, Path: "/a.gguf", Scale: 1}}), true},
		{"the cache salt still counts", wire.LoRASalt("x", a), wire.LoRASalt("y", a), false},
	}
	for _, tc := range tests {
		if got := tc.x == tc.y; got != tc.equal {
			t.Errorf("%s: %q vs %q: equal %v, want %v", tc.name, tc.x, tc.y, got, tc.equal)
		}
	}
}
