package lora

import (
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/wire/gguf"
)

var (
	// ErrFormat: the file is not a GGUF LoRA adapter, or a malformed one.
	ErrFormat = errors.New("lora: not a LoRA adapter")
	// ErrMismatch: the adapter is for another model (architecture or
	// tensor shapes), or adapts a tensor this backend cannot.
	ErrMismatch = errors.New("lora: adapter does not fit the model")
)

// Target is which of a layer's matrices a pair adapts.
type Target int

// A layer's matrices, by their GGUF names.
const (
	Q    Target = iota // attn_q
	K                  // attn_k
	V                  // attn_v
	O                  // attn_output
	Gate               // ffn_gate
	Up                 // ffn_up
	Down               // ffn_down
	NumTargets
)

var targetNames = [NumTargets]string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}

func (t Target) String() string { return targetNames[t] }

// Pair is one adapted matrix's low-rank update.
type Pair struct {
	R, In, Out int
	A          []float32 // [R][In] (token_embd's: [Vocab][R], a row per token)
	Bt         []float32 // [R][Out]: lora_b transposed, so a rank's column is contiguous
	// Packed is the one backend's form of A and B that applies the
	// adapter (its kernels' layout), made on first use; nil until then.
	Packed any
}

// Adapter is one loaded LoRA adapter.
type Adapter struct {
	Path   string
	Arch   string
	Alpha  float32             // adapter.lora.alpha; 0: the scale is the user's alone
	Layers [][NumTargets]*Pair // [L]; nil where a matrix is not adapted
	Output *Pair               // the LM head's; nil if not adapted
	Embed  *Pair               // token_embd's (flipped, see Pair.A); nil if not adapted
	Floats int                 // float32s held, all pairs
	Tensor map[string]struct{} // the base tensors adapted, by GGUF name
	_      [0]func()           // not comparable
}

// Scale is the factor on B·(A·x) for a request's scale s: s·α/R, or s
// when the file gives no α (llama_adapter_lora_weight::get_scale).
func (a *Adapter) Scale(p *Pair, s float32) float32 {
	if a.Alpha != 0 {
		return s * a.Alpha / float32(p.R)
	}
	return s
}

// Base describes the model an adapter must fit.
type Base struct {
	Arch string // general.architecture, e.g. "llama"
	// Shape returns the base tensor name's matrix shape (In, Out: ggml's
	// [In, Out]); ok is false for a tensor the backend has not, or
	// cannot adapt (a tied LM head, a mixture's experts).
	Shape     func(name string) (in, out int, ok bool)
	NumLayers int
	MaxRank   int // refuse adapters of a higher rank (vLLM's --max-lora-rank); 0: any
	// PermuteQK says the model's Q and K rows are in GGUF llama's RoPE
	// order (adjacent pairs) while Hugging Face checkpoints, and so PEFT
	// adapters, have them in halves: a PEFT adapter's lora_B rows of Q and
	// K are then permuted as convert_hf_to_gguf.py permutes the weights,
	// over Heads, KVHeads heads of HeadDim rows.
	PermuteQK               bool
	Heads, KVHeads, HeadDim int
}

// Load opens path and parses it against base.
func Load(path string, base Base) (*Adapter, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		a, err := loadPEFT(path, base)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		a.Path = path
		return a, nil
	}
	f, err := gguf.Open(path)
	if err != nil {
		if errors.Is(err, gguf.ErrFormat) {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		return nil, fmt.Errorf("lora: %w", err)
	}
	defer f.Close() // Parse copies what it keeps
	a, err := Parse(f, base)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	a.Path = path
	return a, nil
}

// checkHeader checks that m is a LoRA adapter's header for arch ("" =
// any): gguf.LoRAArch, then the architecture.
func checkHeader(m *gguf.Metadata, arch string) error {
	a, err := gguf.LoRAArch(m)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if arch != "" && a != arch {
		return fmt.Errorf("%w: the adapter is for architecture %q, the model is %q", ErrMismatch, a, arch)
	}
	return nil
}

var layerName = regexp.MustCompile(`^blk\.(\d+)\.([a-z_]+)\.weight$`)

// LayerTensor parses a layer matrix's GGUF name, blk.N.KIND.weight
// (KIND: attn_q, ffn_down, …); ok is false for any other name.
func LayerTensor(name string) (layer int, kind string, ok bool) {
	m := layerName.FindStringSubmatch(name)
	if m == nil {
		return 0, "", false
	}
	l, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, "", false
	}
	return l, m[2], true
}

// LayerShapes are the [In, Out] of the attention and MLP matrices of
// every layer of a dense model cfg, by GGUF name: what Random adapts for
// an adapter on every one of them.
func LayerShapes(cfg model.Config) map[string][2]int {
	q, kv := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim
	shapes := map[string][2]int{}
	for l := range cfg.NumLayers {
		for t, s := range [NumTargets][2]int{Q: {cfg.Dim, q}, K: {cfg.Dim, kv}, V: {cfg.Dim, kv}, O: {q, cfg.Dim},
			Gate: {cfg.Dim, cfg.FFNDim}, Up: {cfg.Dim, cfg.FFNDim}, Down: {cfg.FFNDim, cfg.Dim}} {
			shapes[fmt.Sprintf("blk.%d.%s.weight", l, Target(t))] = s
		}
	}
	return shapes
}

// Parse builds the adapter of f, checking every pair against base.
func Parse(f *gguf.File, base Base) (*Adapter, error) {
	if err := checkHeader(&f.Metadata, base.Arch); err != nil {
		return nil, err
	}
	a := &Adapter{Arch: base.Arch, Layers: make([][NumTargets]*Pair, base.NumLayers), Tensor: map[string]struct{}{}}
	if alpha, ok := f.Float("adapter.lora.alpha"); ok {
		if math.IsNaN(alpha) || math.IsInf(alpha, 0) {
			return nil, fmt.Errorf("%w: adapter.lora.alpha is %v", ErrFormat, alpha)
		}
		a.Alpha = float32(alpha)
	}
	pairs := map[string][2]*model.Tensor{}
	for _, ti := range f.Tensors() {
		name, half := "", 0
		switch {
		case strings.HasSuffix(ti.Name, ".lora_a"):
			name = strings.TrimSuffix(ti.Name, ".lora_a")
		case strings.HasSuffix(ti.Name, ".lora_b"):
			name, half = strings.TrimSuffix(ti.Name, ".lora_b"), 1
		case strings.HasSuffix(ti.Name, "_norm.weight"):
			continue // llama.cpp ignores an adapter's norms too
		default:
			return nil, fmt.Errorf("%w: tensor %q is neither a lora_a nor a lora_b", ErrFormat, ti.Name)
		}
		t, err := tensorOf(f, ti)
		if err != nil {
			return nil, err
		}
		p := pairs[name]
		p[half] = t
		pairs[name] = p
	}
	return a, a.addAll(pairs, base, false)
}

// addAll checks and stores every pair, by base tensor name; peft says
// they come from a PEFT checkpoint (Q and K rows in Hugging Face's order).
func (a *Adapter) addAll(pairs map[string][2]*model.Tensor, base Base, peft bool) error {
	if len(pairs) == 0 {
		return fmt.Errorf("%w: no lora_a/lora_b tensors", ErrFormat)
	}
	for name, ab := range pairs {
		if ab[0] == nil || ab[1] == nil {
			return fmt.Errorf("%w: %s has only one of lora_a and lora_b", ErrFormat, name)
		}
		if err := a.add(name, ab[0], ab[1], base, peft); err != nil {
			return err
		}
	}
	return nil
}

// add checks and stores the pair of base tensor name.
func (a *Adapter) add(name string, ta, tb *model.Tensor, base Base, peft bool) error {
	if len(ta.Shape) != 2 || len(tb.Shape) != 2 {
		return fmt.Errorf("%w: %s: lora_a %v and lora_b %v are not matrices", ErrFormat, name, ta.Shape, tb.Shape)
	}
	if name == "token_embd.weight" {
		dim, vocab, ok := base.Shape(name)
		r := ta.Shape[0]
		if !ok || tb.Shape[1] != dim || ta.Shape[1] != vocab || tb.Shape[0] != r {
			return fmt.Errorf("%w: %s: lora_a %v and lora_b %v for a %d×%d embedding", ErrMismatch, name, ta.Shape, tb.Shape, vocab, dim)
		}
		p, err := a.pair(name, ta, tb, r, vocab, dim, base.MaxRank, nil)
		if err != nil {
			return err
		}
		// lora_a [Vocab][R] is already a row per token; lora_b [Dim][R].
		a.Embed = p
		return nil
	}
	layer, kind, isLayer := LayerTensor(name)
	if isLayer && kind == "attn_qkv" {
		return a.addFused(name, layer, ta, tb, base)
	}
	in, out, ok := base.Shape(name)
	if !ok {
		return fmt.Errorf("%w: the model has no tensor %s this backend adapts", ErrMismatch, name)
	}
	r := ta.Shape[1]
	if ta.Shape[0] != in || tb.Shape[1] != out || tb.Shape[0] != r {
		return fmt.Errorf("%w: %s: lora_a %v and lora_b %v for a [%d, %d] matrix", ErrMismatch, name, ta.Shape, tb.Shape, in, out)
	}
	var perm []int
	if peft && base.PermuteQK && (kind == "attn_q" || kind == "attn_k") {
		heads := base.Heads
		if kind == "attn_k" {
			heads = base.KVHeads
		}
		if heads*base.HeadDim != out || base.HeadDim%2 != 0 {
			return fmt.Errorf("%w: %s: %d rows are not %d heads of %d", ErrMismatch, name, out, heads, base.HeadDim)
		}
		perm = ropeOrder(heads, base.HeadDim)
	}
	p, err := a.pair(name, ta, tb, r, in, out, base.MaxRank, perm)
	if err != nil {
		return err
	}
	if name == "output.weight" {
		a.Output = p
		return nil
	}
	t := slices.Index(targetNames[:], kind)
	switch {
	case !isLayer || t < 0:
		return fmt.Errorf("%w: cannot adapt %s", ErrMismatch, name)
	case layer >= len(a.Layers):
		return fmt.Errorf("%w: %s: the model has %d layers", ErrMismatch, name, len(a.Layers))
	}
	a.Layers[layer][t] = p
	return nil
}

// addFused splits a fused attn_qkv pair (Phi-3's GGUF) into Q, K and V
// pairs sharing lora_a: lora_b's rows are Q's, then K's, then V's.
func (a *Adapter) addFused(name string, l int, ta, tb *model.Tensor, base Base) error {
	var outs [3]int
	in := 0
	for i, t := range []Target{Q, K, V} {
		n := fmt.Sprintf("blk.%d.%s.weight", l, t)
		var ok bool
		if in, outs[i], ok = base.Shape(n); !ok {
			return fmt.Errorf("%w: the model has no tensor %s this backend adapts", ErrMismatch, n)
		}
	}
	r := ta.Shape[1]
	if l >= len(a.Layers) || ta.Shape[0] != in || tb.Shape[1] != outs[0]+outs[1]+outs[2] || tb.Shape[0] != r {
		return fmt.Errorf("%w: %s: lora_a %v and lora_b %v for Q, K, V of %v rows", ErrMismatch, name, ta.Shape, tb.Shape, outs)
	}
	whole, err := a.pair(name, ta, tb, r, in, outs[0]+outs[1]+outs[2], base.MaxRank, nil)
	if err != nil {
		return err
	}
	off := 0
	for i, t := range []Target{Q, K, V} {
		p := &Pair{R: r, In: in, Out: outs[i], A: whole.A, Bt: make([]float32, r*outs[i])}
		for k := range r {
			copy(p.Bt[k*outs[i]:(k+1)*outs[i]], whole.Bt[k*whole.Out+off:k*whole.Out+off+outs[i]])
		}
		off += outs[i]
		a.Layers[l][t] = p
	}
	return nil
}

// pair dequantizes ta ([R][In] rows) and tb ([Out][R] rows) into a Pair,
// transposing tb; with perm, tb's row perm[o] becomes output o.
func (a *Adapter) pair(name string, ta, tb *model.Tensor, r, in, out, maxRank int, perm []int) (*Pair, error) {
	if r < 1 {
		return nil, fmt.Errorf("%w: %s has rank %d", ErrFormat, name, r)
	}
	if maxRank > 0 && r > maxRank {
		return nil, fmt.Errorf("%w: %s has rank %d, above --max-lora-rank %d", ErrMismatch, name, r, maxRank)
	}
	av, err := ta.Float32s()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, name, err)
	}
	bv, err := tb.Float32s()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, name, err)
	}
	for _, v := range [][]float32{av, bv} {
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("%w: %s holds %v", ErrFormat, name, x)
			}
		}
	}
	p := &Pair{R: r, In: in, Out: out, A: av, Bt: make([]float32, r*out)}
	for o := range out { // bv is [Out][R]
		src := o
		if perm != nil {
			src = perm[o]
		}
		for k := range r {
			p.Bt[k*out+o] = bv[src*r+k]
		}
	}
	a.Floats += len(av) + len(p.Bt)
	a.Tensor[name] = struct{}{}
	return p, nil
}

// tensorOf views ti's bytes in f as a model.Tensor (not copied: Parse
// dequantizes before f closes).
func tensorOf(f *gguf.File, ti gguf.TensorInfo) (*model.Tensor, error) {
	data, err := f.TensorData(ti)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, ti.Name, err)
	}
	t := &model.Tensor{Name: ti.Name, Type: model.DType(ti.Type), Shape: make([]int, len(ti.Shape))}
	n := 1
	for i, d := range ti.Shape {
		if d > 1<<31 {
			return nil, fmt.Errorf("%w: %s has shape %v", ErrFormat, ti.Name, ti.Shape)
		}
		t.Shape[i] = int(d)
		n *= int(d)
	}
	if !t.Type.Supported() {
		return nil, fmt.Errorf("%w: %s has type %v", ErrFormat, ti.Name, t.Type)
	}
	if n > 1<<28 {
		return nil, fmt.Errorf("%w: %s has %d elements", ErrFormat, ti.Name, n)
	}
	t.Data = data
	return t, nil
}

// Use is one adapter a request applies, with the user's scale (the
// backend multiplies it by Adapter.Scale's α/R).
type Use struct {
	Adapter *Adapter
	Scale   float32
}

// ropeOrder is convert_hf_to_gguf.py's LlamaModel.permute of the rows of
// heads heads of headDim: GGUF row h·D+2i+s is Hugging Face row
// h·D+s·D/2+i, s ∈ {0, 1}.
func ropeOrder(heads, headDim int) []int {
	perm := make([]int, heads*headDim)
	half := headDim / 2
	for h := range heads {
		for i := range half {
			for s := range 2 {
				perm[h*headDim+2*i+s] = h*headDim + s*half + i
			}
		}
	}
	return perm
}
