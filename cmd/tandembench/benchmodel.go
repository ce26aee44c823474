package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// benchShape is a model shape of the scale phase's random-weight GGUFs.
type benchShape struct {
	name string
	spec testmodel.Spec // no types, no quantizer
}

// benchShapes are the shapes --scale-models and --model bench:SHAPE-QUANT
// name: Llama 3.2 1B's and 3B's widths with a 32k vocabulary and an
// untied output (as issue 16 sets them), a tiny one for --quick, and a
// mixture of experts of Qwen3-30B-A3B's widths (2048 wide, 32 heads of
// 128, 4 KV heads, experts 768 wide, 8 per token) at 16 layers of 32
// experts instead of 48 of 128: 2.9B parameters, 0.8B active; and
// gpt-oss-20b's widths (2880 wide, 64 heads of 64, 8 KV heads, experts
// 2880 wide, 4 per token, every other layer over 128 positions, YaRN ×32
// over 4096) at 8 layers of 16 experts instead of 24 of 32: 3.4B
// parameters, 1.0B active.
var benchShapes = map[string]benchShape{
	"1b":   {"1b", testmodel.Spec{Arch: "llama", VocabSize: 32000, Dim: 2048, NumLayers: 16, NumHeads: 32, NumKVHeads: 8, FFNDim: 8192, ContextLen: 16384, RopeTheta: 500000, Seed: 1}},
	"3b":   {"3b", testmodel.Spec{Arch: "llama", VocabSize: 32000, Dim: 3072, NumLayers: 28, NumHeads: 24, NumKVHeads: 8, FFNDim: 8192, ContextLen: 16384, RopeTheta: 500000, Seed: 1}},
	"tiny": {"tiny", testmodel.Spec{Arch: "llama", VocabSize: 512, Dim: 256, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 512, ContextLen: 4096, Seed: 1}},
	"moe": {"moe", testmodel.Spec{Arch: "qwen3moe", VocabSize: 32000, Dim: 2048, NumLayers: 16, NumHeads: 32, NumKVHeads: 4, HeadDim: 128,
		FFNDim: 6144, Experts: 32, ExpertsUsed: 8, ExpertFFNDim: 768, ContextLen: 16384, Seed: 1}},
	"gptoss": {"gptoss", testmodel.Spec{Arch: "gpt-oss", VocabSize: 32000, Dim: 2880, NumLayers: 8, NumHeads: 64, NumKVHeads: 8, HeadDim: 64,
		FFNDim: 2880, Experts: 16, ExpertsUsed: 4, ExpertFFNDim: 2880, SlidingWindow: 128, ContextLen: 16384, RopeTheta: 150000,
		Yarn: testmodel.Yarn{Factor: 32, OrigContextLen: 4096}, Seed: 1}},
}

// benchQuants are the quantization mixes --scale-models names, each as
// llama-quantize would make it from a float model.
var benchQuants = map[string]func(layers int) (base model.DType, types map[string]model.DType){
	// Q4_0: every matrix Q4_0 but the output, Q6_K.
	"q4_0": func(int) (model.DType, map[string]model.DType) {
		return model.Q4_0, map[string]model.DType{"output.weight": model.Q6_K}
	},
	// Q8_0: every matrix Q8_0.
	"q8_0": func(int) (model.DType, map[string]model.DType) { return model.Q8_0, nil },
	// Q4_K_M: Q4_K, the output Q6_K, and attn_v and ffn_down (a mixture's
	// ffn_down_exps) Q6_K in the layers llama.cpp's use_more_bits picks
	// (the first and last eighth, and every third between).
	"q4_k_m": func(layers int) (model.DType, map[string]model.DType) {
		types := map[string]model.DType{"output.weight": model.Q6_K}
		for i := range layers {
			if i < layers/8 || i >= 7*layers/8 || (i-layers/8)%3 == 2 {
				types[fmt.Sprintf("blk.%d.attn_v.weight", i)] = model.Q6_K
				types[fmt.Sprintf("blk.%d.ffn_down.weight", i)] = model.Q6_K
				types[fmt.Sprintf("blk.%d.ffn_down_exps.weight", i)] = model.Q6_K
			}
		}
		return model.Q4_K, types
	},
	// MXFP4 as ggml-org's gpt-oss GGUFs are: the experts MXFP4, the
	// other matrices here Q8_0.
	"mxfp4": func(layers int) (model.DType, map[string]model.DType) {
		return model.Q8_0, map[string]model.DType{
			"ffn_gate_exps.weight": model.MXFP4, "ffn_up_exps.weight": model.MXFP4, "ffn_down_exps.weight": model.MXFP4}
	},
	// Q3_K_M: Q3_K, the output Q6_K, attn_output Q4_K, attn_v Q5_K in
	// the first two layers and Q4_K after, ffn_down Q5_K in the first
	// sixteenth and Q4_K after (llama-quant.cpp, dense models).
	"q3_k_m": func(layers int) (model.DType, map[string]model.DType) {
		types := map[string]model.DType{"output.weight": model.Q6_K}
		for i := range layers {
			v, down := model.Q4_K, model.Q4_K
			if i < 2 {
				v = model.Q5_K
			}
			if i < layers/16 {
				down = model.Q5_K
			}
			types[fmt.Sprintf("blk.%d.attn_output.weight", i)] = model.Q4_K
			types[fmt.Sprintf("blk.%d.attn_v.weight", i)] = v
			types[fmt.Sprintf("blk.%d.ffn_down.weight", i)] = down
			types[fmt.Sprintf("blk.%d.ffn_down_exps.weight", i)] = down
		}
		return model.Q3_K, types
	},
	// IQ4_XS without an importance matrix: IQ4_XS, the output Q6_K,
	// attn_v Q5_K (llama.cpp's choice where 4 or more heads share a KV
	// head, as in the 1b and moe shapes), ffn_down Q5_K
	// in the first eighth of the layers.
	"iq4_xs": func(layers int) (model.DType, map[string]model.DType) {
		types := map[string]model.DType{"output.weight": model.Q6_K}
		for i := range layers {
			types[fmt.Sprintf("blk.%d.attn_v.weight", i)] = model.Q5_K
			if i < layers/8 {
				types[fmt.Sprintf("blk.%d.ffn_down.weight", i)] = model.Q5_K
				types[fmt.Sprintf("blk.%d.ffn_down_exps.weight", i)] = model.Q5_K
			}
		}
		return model.IQ4_XS, types
	},
}

// benchModelVersion changes the cache key when the generator changes.
const benchModelVersion = "1"

// benchModel is one generated GGUF of the scale phase.
type benchModel struct {
	Name  string `json:"name"` // SHAPE-QUANT, e.g. 1b-q4_k_m
	Path  string `json:"path"`
	Bytes int64  `json:"file_bytes"`
	// Generated is how long writing it took; 0 when it came from the cache.
	GeneratedSeconds float64 `json:"generated_s,omitempty"`
}

// parseBenchModels parses "1b:q4_0,q4_k_m 3b:q4_k_m" into SHAPE-QUANT names.
func parseBenchModels(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Fields(s) {
		shape, quants, ok := strings.Cut(f, ":")
		if _, known := benchShapes[shape]; !ok || !known {
			return nil, fmt.Errorf("%q: want SHAPE:QUANT[,QUANT…] with SHAPE one of %s", f, keys(benchShapes))
		}
		for q := range strings.SplitSeq(quants, ",") {
			if _, known := benchQuants[q]; !known {
				return nil, fmt.Errorf("%q: quantization %q, want one of %s", f, q, keys(benchQuants))
			}
			out = append(out, shape+"-"+q)
		}
	}
	return out, nil
}

func keys[V any](m map[string]V) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// benchSpec is the testmodel spec of name (SHAPE-QUANT).
func benchSpec(name string) (testmodel.Spec, error) {
	shape, quant, _ := strings.Cut(name, "-")
	sh, ok := benchShapes[shape]
	mix, ok2 := benchQuants[quant]
	if !ok || !ok2 {
		return testmodel.Spec{}, fmt.Errorf("bench model %q: unknown shape or quantization", name)
	}
	s := sh.spec
	s.MatrixType, s.Types = mix(s.NumLayers)
	s.Quantize = quantizeParallel
	return s, nil
}

// ensureBenchModel returns the GGUF of name under dir, writing it first
// unless a file of the same content key is there (SHAPE-QUANT-KEY.gguf,
// the key a hash of the spec and benchModelVersion).
func ensureBenchModel(dir, name string, stderr io.Writer) (benchModel, error) {
	s, err := benchSpec(name)
	if err != nil {
		return benchModel{}, err
	}
	keySpec := s
	keySpec.Quantize = nil
	sum := sha256.Sum256(fmt.Appendf(nil, "%s %+v", benchModelVersion, keySpec))
	path := filepath.Join(dir, name+"-"+hex.EncodeToString(sum[:6])+".gguf")
	if st, err := os.Stat(path); err == nil {
		return benchModel{Name: name, Path: path, Bytes: st.Size()}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return benchModel{}, err
	}
	fmt.Fprintf(stderr, "scale: writing %s (random weights, once; cached by content key)\n", path)
	start := time.Now()
	tmp := path + ".tmp"
	if err := testmodel.WriteGGUF(tmp, s); err != nil {
		return benchModel{}, fmt.Errorf("scale: %s: %w", name, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return benchModel{}, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return benchModel{}, err
	}
	return benchModel{Name: name, Path: path, Bytes: st.Size(), GeneratedSeconds: time.Since(start).Seconds()}, nil
}

// resolveBenchModel turns --model bench:SHAPE-QUANT into the path of
// that random-weight GGUF under --scale-model-dir, writing it first if
// it is not there; other values are left alone.
func resolveBenchModel(o *options, stderr io.Writer) error {
	name, ok := strings.CutPrefix(o.model, "bench:")
	if !ok {
		return nil
	}
	m, err := ensureBenchModel(o.scale.dir, name, stderr)
	if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	o.model = m.Path
	return nil
}

// quantizeParallel is model.Quantize split across the CPUs in runs of
// whole blocks (blocks are quantized independently).
func quantizeParallel(t model.DType, v []float32) []byte {
	bs := t.BlockSize()
	n := runtime.NumCPU()
	per := (len(v)/bs + n - 1) / n * bs
	if n == 1 || per == 0 || len(v) < 1<<16 {
		b, err := model.Quantize(t, v)
		if err != nil {
			panic(err) // testmodel checks sizes; a type Quantize lacks fails there
		}
		return b
	}
	out := make([]byte, t.RowBytes(len(v)))
	var wg sync.WaitGroup
	var first error
	var mu sync.Mutex
	for lo := 0; lo < len(v); lo += per {
		hi := min(lo+per, len(v))
		wg.Go(func() {
			b, err := model.Quantize(t, v[lo:hi])
			if err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
				return
			}
			copy(out[t.RowBytes(lo):], b)
		})
	}
	wg.Wait()
	if first != nil {
		return nil // testmodel reports the wrong length
	}
	return out
}

// decodeBytes is what one decode step reads at batch 1 from the model at
// path, for an engine whose KV cache has kvElem bytes per element, at
// depth tokens: every matrix and vector once, one embedding row (the
// whole embedding if it is the LM head too), and depth tokens of K and V
// in every layer.
type decodeBytes struct {
	Weights  int64 `json:"weights"`
	KVPerTok int64 `json:"kv_per_token"` // K+V bytes per token of depth, all layers, f32 KV
}

// readDecodeBytes reads the model's tensor sizes and shape.
func readDecodeBytes(path string) (decodeBytes, error) {
	m, err := loader.Load(path)
	if err != nil {
		return decodeBytes{}, fmt.Errorf("scale: %w", err)
	}
	defer m.Close()
	var d decodeBytes
	for name, t := range m.Tensors {
		n := int64(len(t.Data))
		if name == "token_embd.weight" && !m.Config.TiedEmbeddings && len(t.Shape) == 2 && t.Shape[1] > 0 {
			n /= int64(t.Shape[1]) // one row
		}
		d.Weights += n
	}
	c := m.Config
	d.KVPerTok = int64(c.NumLayers) * 2 * int64(c.NumKVHeads*c.HeadDim) * 4
	return d, nil
}

// at is the bytes one decode step reads at depth tokens with KV elements
// of kvElem bytes.
func (d decodeBytes) at(depth int, kvElem int64) float64 {
	return float64(d.Weights) + float64(depth)*float64(d.KVPerTok)/4*float64(kvElem)
}
