package cpu

import (
	"fmt"
	"strings"
)

// KVDtype is the element type of the KV cache (--kv-cache-dtype).
// float32 (the default; "auto") keeps K and V exactly as computed;
// float16 halves the cache's memory and the bytes attention reads per
// token — llama.cpp's default — at about 3 decimal digits per element:
// logits move by ~1e-3 of their RMS. Attention converts a tile's K/V
// block to float32 once (F16C) and runs the float32 kernels on it.
type KVDtype int

const (
	KVFloat32 KVDtype = iota
	KVFloat16
)

// KVDtypes lists the names ParseKVDtype accepts for each KVDtype, the
// first one canonical; "auto" is float32.
var KVDtypes = [][]string{{"float32", "auto", "fp32"}, {"float16", "fp16", "half"}}

func (d KVDtype) String() string {
	if d < 0 || int(d) >= len(KVDtypes) {
		return fmt.Sprintf("KVDtype(%d)", int(d))
	}
	return KVDtypes[d][0]
}

// ParseKVDtype parses a --kv-cache-dtype value.
func ParseKVDtype(s string) (KVDtype, error) {
	for i, names := range KVDtypes {
		for _, n := range names {
			if s == n {
				return KVDtype(i), nil
			}
		}
	}
	return 0, fmt.Errorf("cpu: unknown KV cache dtype %q (want auto, float32 or float16)", s)
}

// Set parses s into d, so that a KVDtype is a flag.Value.
func (d *KVDtype) Set(s string) error {
	v, err := ParseKVDtype(strings.ToLower(s))
	if err == nil {
		*d = v
	}
	return err
}

// bytes is the size of one cache element.
func (d KVDtype) bytes() int {
	if d == KVFloat16 {
		return 2
	}
	return 4
}

// SetKVDtype picks the KV cache's element type; it takes effect at the
// next AllocateKV (which drops the cache's contents).
func (b *Backend) SetKVDtype(d KVDtype) { b.kvDtype = d }
