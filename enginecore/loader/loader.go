package loader

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// ErrUnsupported reports a model Tandem cannot run: an unknown
// architecture, tensor, tensor type or hyper-parameter. The message names
// what is missing.
var ErrUnsupported = errors.New("loader: unsupported model")

// ErrInvalid reports a model file whose contents contradict themselves
// (a missing tensor, a shape that does not match the hyper-parameters).
var ErrInvalid = errors.New("loader: invalid model")

// unsupportedError is an ErrUnsupported with its own message.
type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string        { return "loader: " + e.msg }
func (e *unsupportedError) Is(target error) bool { return target == ErrUnsupported }

func unsupported(format string, args ...any) error {
	return &unsupportedError{fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Model is a loaded checkpoint: hyper-parameters and tensors by GGUF name.
type Model struct {
	Config model.Config

	// Tensors are keyed by GGUF name: token_embd.weight, output_norm.weight,
	// output.weight (absent when tied), rope_freqs.weight (llama3 RoPE
	// scaling, [HeadDim/2] F32 frequency divisors; absent without it), and
	// per layer N blk.N.attn_norm.weight, blk.N.attn_{q,k,v,output}.weight,
	// blk.N.attn_{q,k,v}.bias (Config.QKVBias), blk.N.attn_{q,k}_norm.weight
	// (Config.QKNorm), blk.N.ffn_norm.weight, blk.N.ffn_{gate,up,down}.weight.
	// Shapes are in ggml order; Q/K rows follow Config.RopeNeox. Data is
	// mostly mmapped: read-only, valid until Close.
	Tensors map[string]*model.Tensor

	Source string       // the path loaded
	Close  func() error // unmaps the files; call once the tensors are no longer used
	// Vocab is what each token id stands for, from a GGUF's tokenizer or
	// a Hugging Face directory's tokenizer.json (hfvocab.go); nil for a
	// tokenizer neither reads.
	Vocab *gguf.Vocab

	// LongRope is Phi-3's long LongRoPE factors ([D/2]), which Open puts
	// in rope_freqs.weight's place when the context it serves exceeds
	// OrigContextLen (Tensors holds the short ones); nil without them.
	LongRope       *model.Tensor
	OrigContextLen int
}

// supported lists the architectures by GGUF name. gemma: Gemma 2's and
// 3's scaled embeddings, GELU, post-norms and sliding-window layers
// (kvReader.gemma). noRopeEvery: SmolLM3's NoPE layers, every fourth
// (llama.cpp's n_no_rope_layer_step, which no key sets). granite: IBM
// Granite 3's embedding, attention, residual and logit scales
// (kvReader.granite). phi3: fused matrices and LongRoPE (phi3.go). moe:
// Mixtral's, Granite MoE's, Qwen2-MoE's, Qwen3-MoE's and ERNIE 4.5's
// experts (kvReader.moe). ERNIE 4.5 (ernie4_5) is Llama otherwise.
var supported = map[string]struct {
	neox, qkvBias, qkNorm, gemma, granite, phi3 bool
	moe                                         bool // a mixture of experts (llama, granitemoe: when expert_count > 0)
	interleaved                                 bool // a Hugging Face checkpoint rotates adjacent pairs itself (ERNIE): Q/K rows not permuted
	olmo                                        bool // OLMo's whole-vector QK norm (olmo2: with post-norms instead of pre-norms)
	noRopeEvery                                 int  // every noRopeEvery-th layer takes no RoPE (SmolLM3: 4); 0: all do
	gptOSS                                      bool // gpt-oss: attention sinks, biases everywhere, the clamped SwiGLU, every other layer local
}{
	"gpt-oss":      {neox: true, qkvBias: true, moe: true, gptOSS: true},
	"llama":        {moe: true},
	"qwen2":        {neox: true, qkvBias: true},
	"qwen3":        {neox: true, qkNorm: true},
	"qwen2moe":     {neox: true, qkvBias: true, moe: true},
	"qwen3moe":     {neox: true, qkNorm: true, moe: true},
	"ernie4_5":     {interleaved: true},
	"olmo2":        {neox: true, qkNorm: true, olmo: true},
	"olmoe":        {neox: true, qkNorm: true, olmo: true, moe: true},
	"ernie4_5-moe": {moe: true, interleaved: true},
	"smollm3":      {noRopeEvery: 4},
	"granite":      {granite: true},
	"granitemoe":   {granite: true, moe: true},
	"phi3":         {neox: true, phi3: true},
	"gemma2":       {neox: true, gemma: true},
	"gemma3":       {neox: true, qkNorm: true, gemma: true},
}

func supportedList() string {
	names := make([]string, 0, len(supported))
	for n := range supported {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// Load reads the model at path: a GGUF file, or a Hugging Face directory
// (config.json plus safetensors; path may also name a file inside it).
func Load(path string) (*Model, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	if st.IsDir() {
		return loadHF(path)
	}
	if isGGUF(path) {
		return loadGGUF(path)
	}
	if base := filepath.Base(path); base == "config.json" || strings.HasSuffix(base, ".safetensors") {
		return loadHF(filepath.Dir(path))
	}
	return nil, fmt.Errorf("loader: %s is neither a GGUF file nor a Hugging Face model directory", path)
}

func isGGUF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 4)
	_, err = io.ReadFull(f, magic)
	return err == nil && bytes.Equal(magic, []byte("GGUF"))
}

// checkConfig rejects hyper-parameters no kernel can use.
func checkConfig(cfg *model.Config) error {
	switch {
	case cfg.Dim <= 0, cfg.NumLayers <= 0, cfg.NumHeads <= 0, cfg.NumKVHeads <= 0, cfg.HeadDim <= 0, cfg.FFNDim <= 0:
		return invalid("non-positive dimension: dim %d, layers %d, heads %d/%d, head dim %d, ffn %d",
			cfg.Dim, cfg.NumLayers, cfg.NumHeads, cfg.NumKVHeads, cfg.HeadDim, cfg.FFNDim)
	case cfg.NumHeads%cfg.NumKVHeads != 0:
		return invalid("%d heads are not a multiple of %d KV heads", cfg.NumHeads, cfg.NumKVHeads)
	case cfg.HeadDim%2 != 0:
		return invalid("odd head dim %d", cfg.HeadDim)
	case cfg.MaxContextLen <= 0:
		return invalid("context length %d", cfg.MaxContextLen)
	case !(cfg.NormEps > 0), !(cfg.RopeTheta > 0):
		return invalid("norm epsilon %g, rope theta %g", cfg.NormEps, cfg.RopeTheta)
	}
	return nil
}

// want is a tensor's expected ggml shape, and whether it may be absent.
type want struct {
	shape    []int
	optional bool
}

// expectedShapes is every tensor the config implies, by GGUF name, with
// its ggml shape; optional ones are marked. A mixture of experts' are
// stacked (ffn_*_exps) or one per expert (ffn_*.E).
func expectedShapes(cfg *model.Config, stacked bool) map[string]want {
	d, v, f := cfg.Dim, cfg.VocabSize, cfg.FFNDim
	qd, kvd := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim
	m := map[string]want{
		"token_embd.weight":  {[]int{d, v}, false},
		"output_norm.weight": {[]int{d}, false},
		"output.weight":      {[]int{d, v}, true},
		"rope_freqs.weight":  {[]int{cfg.RotaryDim() / 2}, true},
	}
	for i := range cfg.NumLayers {
		p := fmt.Sprintf("blk.%d.", i)
		m[p+"attn_norm.weight"] = want{[]int{d}, false}
		m[p+"attn_q.weight"] = want{[]int{d, qd}, false}
		m[p+"attn_k.weight"] = want{[]int{d, kvd}, false}
		m[p+"attn_v.weight"] = want{[]int{d, kvd}, false}
		m[p+"attn_output.weight"] = want{[]int{qd, d}, false}
		m[p+"ffn_norm.weight"] = want{[]int{d}, false}
		m[p+"ffn_gate.weight"] = want{[]int{d, f}, false}
		m[p+"ffn_up.weight"] = want{[]int{d, f}, false}
		m[p+"ffn_down.weight"] = want{[]int{f, d}, false}
		if cfg.OutBias {
			m[p+"attn_output.bias"] = want{[]int{d}, false}
		}
		if cfg.AttnSinks {
			m[p+"attn_sinks.weight"] = want{[]int{cfg.NumHeads}, false}
		}
		if cfg.QKVBias {
			m[p+"attn_q.bias"] = want{[]int{qd}, false}
			m[p+"attn_k.bias"] = want{[]int{kvd}, false}
			m[p+"attn_v.bias"] = want{[]int{kvd}, false}
		}
		if cfg.QKNorm {
			qn, kn := cfg.QKNormDims()
			m[p+"attn_q_norm.weight"] = want{[]int{qn}, false}
			m[p+"attn_k_norm.weight"] = want{[]int{kn}, false}
		}
		if cfg.NoPreNorms {
			delete(m, p+"attn_norm.weight")
			delete(m, p+"ffn_norm.weight")
		}
		if cfg.PostNorms {
			m[p+"post_attention_norm.weight"] = want{[]int{d}, false}
			m[p+"post_ffw_norm.weight"] = want{[]int{d}, false}
		}
		if cfg.Sparse(i) {
			moeShapes(cfg, i, m, stacked)
		}
	}
	return m
}

// checkTensors verifies that tensors are exactly what cfg implies: every
// required name present, no unknown name, shapes matching (trailing 1s
// allowed), types supported (vectors F32, F16 or BF16), data sized right.
func checkTensors(cfg *model.Config, tensors map[string]*model.Tensor) error {
	if cfg.NumLayers > len(tensors) { // before expectedShapes allocates per layer
		return invalid("%d layers but only %d tensors", cfg.NumLayers, len(tensors))
	}
	stacked := false // experts in one tensor (GGUF) or one each (Hugging Face)
	for l := range cfg.NumLayers {
		if cfg.Sparse(l) {
			_, stacked = tensors[fmt.Sprintf("blk.%d.ffn_up_exps.weight", l)]
			break
		}
	}
	expected := expectedShapes(cfg, stacked)
	if out, ok := tensors["cls.output.weight"]; ok && len(out.Shape) >= 2 { // a classification head: a reranker's
		d, n := cfg.Dim, out.Shape[1]
		expected["cls.output.weight"] = want{[]int{d, n}, true}
		expected["cls.output.bias"] = want{[]int{n}, true}
		expected["cls.weight"] = want{[]int{d, d}, true}
		expected["cls.bias"] = want{[]int{d}, true}
		if l := len(cfg.ClassifierLabels); l > 0 && l != n {
			return invalid("%d classifier labels for a head of %d classes", l, n)
		}
	}
	var errs []error
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		t := tensors[name]
		w, ok := expected[name]
		if !ok {
			errs = append(errs, unsupported("tensor %q is not supported for architecture %q", name, cfg.Arch))
			continue
		}
		if !t.Type.Supported() {
			errs = append(errs, unsupported("tensor %q has type %v, which is not supported (supported: %s)", name, typeName(t.Type), supportedTypes()))
			continue
		}
		if len(w.shape) == 1 && t.Type != model.F32 && t.Type != model.F16 && t.Type != model.BF16 {
			errs = append(errs, unsupported("vector %q has type %v (supported: F32, F16, BF16)", name, typeName(t.Type)))
			continue
		}
		if !shapeIs(t.Shape, w.shape) {
			errs = append(errs, invalid("tensor %q has shape %v, want %v", name, t.Shape, w.shape))
			continue
		}
		if bs := t.Type.BlockSize(); t.Shape[0]%bs != 0 || t.Type.RowBytes(t.NumElements()) != len(t.Data) {
			errs = append(errs, invalid("tensor %q (%v %v) has %d bytes of data", name, typeName(t.Type), t.Shape, len(t.Data)))
		}
	}
	for name, w := range expected {
		if _, ok := tensors[name]; !ok && !w.optional {
			errs = append(errs, invalid("tensor %q is missing", name))
		}
	}
	return errors.Join(errs...)
}

// shapeIs reports whether shape equals want, ignoring trailing 1s.
func shapeIs(shape, want []int) bool {
	for len(shape) > len(want) && shape[len(shape)-1] == 1 {
		shape = shape[:len(shape)-1]
	}
	return slices.Equal(shape, want)
}

func supportedTypes() string {
	var names []string
	for t := range model.DType(64) {
		if t.Supported() {
			names = append(names, t.String())
		}
	}
	return strings.Join(names, ", ")
}

// appendUnique appends the ids not already in ids.
func appendUnique(ids []int32, more ...int32) []int32 {
	for _, id := range more {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// Served is what an engine serves, loaded.
type Served struct {
	Config  model.Config
	Weights *model.Weights
	// Vocab is what each token id stands for (constrained decoding needs
	// it); nil when the checkpoint does not say (a Hugging Face directory
	// for now).
	Vocab   *gguf.Vocab
	Release func() error // unmaps the checkpoint; nil for the dummy model
}

// OpenOption changes how Open serves a checkpoint.
type OpenOption func(*openOptions)

type openOptions struct {
	rope *model.RopeScaling
	hf   *HFOverrides
}

// WithRopeScaling serves the checkpoint with RoPE scaling s instead of
// its own (vllm serve --rope-scaling, llama-server's --rope-scaling and
// --rope-scale; Type "" for none). A yarn s without OrigContextLen takes
// the checkpoint's context length; the context served extends to
// Factor × that, as vLLM derives it.
func WithRopeScaling(s model.RopeScaling) OpenOption {
	return func(o *openOptions) { o.rope = &s }
}

// Open loads what an engine serves: the dummy model (random weights,
// maxContextLen tokens of context; 0 for its default) when name is
// "dummy", else the checkpoint at name turned into weights. Call Release
// once the backend built over the weights is closed.
func Open(name string, maxContextLen int, opts ...OpenOption) (*Served, error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	if name == "dummy" {
		if o.hf != nil {
			return nil, fmt.Errorf("loader: --hf-overrides applies to a checkpoint, not the dummy model")
		}
		cfg, w := model.Dummy(maxContextLen)
		v := &gguf.Vocab{Pieces: make([][]byte, model.DummyVocabSize), Special: make([]bool, model.DummyVocabSize)}
		for id := range v.Pieces {
			v.Pieces[id], v.Special[id] = []byte(model.DummyTokenName(int32(id))), id >= 256
		}
		return &Served{Config: cfg, Weights: w, Vocab: v}, nil
	}
	m, err := Load(name)
	if err != nil {
		return nil, err
	}
	if o.rope != nil {
		overrideRope(&m.Config, *o.rope)
	}
	if o.hf != nil {
		if err := applyHFOverrides(m, *o.hf); err != nil {
			_ = m.Close()
			return nil, fmt.Errorf("loader: %s: %w", name, err)
		}
	}
	if served := min(maxContextLen, m.Config.MaxContextLen); m.LongRope != nil && maxContextLen > 0 && served > m.OrigContextLen {
		m.Tensors["rope_freqs.weight"] = m.LongRope // as llama.cpp picks them: by the context served
	}
	w, err := model.FromTensors(m.Config, m.Tensors)
	if err != nil {
		_ = m.Close()
		return nil, fmt.Errorf("loader: %s: %w", name, err)
	}
	return &Served{Config: m.Config, Weights: w, Vocab: m.Vocab, Release: m.Close}, nil
}

// overrideRope puts s in place of cfg's RoPE scaling (see
// WithRopeScaling).
func overrideRope(cfg *model.Config, s model.RopeScaling) {
	if s.Type == "yarn" && s.OrigContextLen == 0 {
		s.OrigContextLen = cfg.MaxContextLen
	}
	cfg.RopeScaling = s
	if s.Type != "" && s.Factor > 1 {
		orig := cmp.Or(s.OrigContextLen, cfg.MaxContextLen)
		cfg.MaxContextLen = max(cfg.MaxContextLen, int(s.Factor*float64(orig)))
	}
}
