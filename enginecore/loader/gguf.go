package loader

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// typeName is ggml's name for t, known to Tandem or not.
func typeName(t model.DType) string { return gguf.TypeName(uint32(t)) }

// loadGGUF reads a GGUF file; tensors stay in the mapping.
func loadGGUF(path string) (m *Model, err error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			err = fmt.Errorf("%s: %w", path, err)
		}
	}()
	cfg, err := ggufConfig(&f.Metadata)
	if err != nil {
		return nil, err
	}
	cfg.Name = strings.TrimSuffix(filepath.Base(path), ".gguf")

	tensors := make(map[string]*model.Tensor, len(f.Tensors()))
	for _, ti := range f.Tensors() {
		data, err := f.TensorData(ti)
		if err != nil {
			return nil, fmt.Errorf("loader: %w", err)
		}
		shape := make([]int, len(ti.Shape))
		for i, d := range ti.Shape {
			shape[i] = int(d) // fits: the bytes are in the file
		}
		tensors[ti.Name] = &model.Tensor{Name: ti.Name, Type: model.DType(ti.Type), Shape: shape, Data: data}
	}
	if cfg.Arch == "gpt-oss" {
		renameGPTOSS(&cfg, tensors)
	}
	if _, ok := tensors["blk.0.attn_q.bias"]; ok && cfg.Arch == "llama" {
		cfg.QKVBias = true // llama.cpp's llama arch takes optional Q/K/V biases
	}
	var longRope *model.Tensor
	if cfg.Arch == "phi3" {
		if err := splitFused(&cfg, tensors); err != nil {
			return nil, err
		}
		longRope = ropeFactors(tensors)
	}
	if err := finishConfig(&cfg, tensors); err != nil {
		return nil, err
	}
	if n, ok := f.Strings("tokenizer.ggml.tokens"); ok && len(n) > cfg.VocabSize {
		return nil, invalid("%d tokens but token_embd.weight has %d rows", len(n), cfg.VocabSize)
	}
	if err := checkTensors(&cfg, tensors); err != nil {
		return nil, err
	}
	vocab, _ := f.Metadata.Vocab() // nil for a tokenizer it does not read: structured outputs are then unavailable
	orig := cfg.MaxContextLen
	if u, ok := f.Uint(cfg.Arch + ".rope.scaling.original_context_length"); ok && u > 0 && u <= math.MaxInt32 {
		orig = int(u)
	}
	if longRope != nil && !shapeIs(longRope.Shape, []int{cfg.RotaryDim() / 2}) {
		return nil, invalid("tensor %q has shape %v, want [%d]", "rope_factors_long.weight", longRope.Shape, cfg.RotaryDim()/2)
	}
	return &Model{Config: cfg, Tensors: tensors, Source: path, Close: f.Close, Vocab: vocab, LongRope: longRope, OrigContextLen: orig}, nil
}

// ggufConfig reads the hyper-parameters of a supported architecture.
func ggufConfig(md *gguf.Metadata) (model.Config, error) {
	arch, ok := md.String("general.architecture")
	if !ok {
		return model.Config{}, invalid("no general.architecture")
	}
	a, ok := supported[arch]
	if !ok {
		return model.Config{}, unsupported("architecture %q is not supported (supported: %s)", arch, supportedList())
	}
	r := &kvReader{md: md, prefix: arch + "."}
	cfg := model.Config{
		Arch:          arch,
		Dim:           r.int("embedding_length", 0),
		NumLayers:     r.int("block_count", 0),
		FFNDim:        r.int("feed_forward_length", 0),
		NumHeads:      r.int("attention.head_count", 0),
		MaxContextLen: r.int("context_length", 0),
		NormEps:       r.float("attention.layer_norm_rms_epsilon", 0),
		RopeTheta:     r.float("rope.freq_base", 10000),
		RopeNeox:      a.neox,
		QKVBias:       a.qkvBias,
		QKNorm:        a.qkNorm,
	}
	cfg.NumKVHeads = r.int("attention.head_count_kv", cfg.NumHeads)
	if cfg.NumHeads > 0 {
		cfg.HeadDim = r.int("attention.key_length", cfg.Dim/cfg.NumHeads)
	}
	if vd := r.int("attention.value_length", cfg.HeadDim); vd != cfg.HeadDim {
		r.errs = append(r.errs, unsupported("value head dim %d differs from key head dim %d", vd, cfg.HeadDim))
	}
	switch rd := r.int("rope.dimension_count", cfg.HeadDim); {
	case rd == cfg.HeadDim:
	case !a.phi3: // llama.cpp's other graphs assert n_rot == head dim
		r.errs = append(r.errs, unsupported("partial RoPE (%d of %d dims) is not supported for %s (only phi3)", rd, cfg.HeadDim, arch))
	case rd <= 0, rd%2 != 0, rd > cfg.HeadDim:
		r.errs = append(r.errs, invalid("RoPE over %d of %d dims", rd, cfg.HeadDim))
	default:
		cfg.RopeDim = rd // Phi-4-mini: 96 of 128
	}
	// llama.cpp's enum llama_pooling_type: an embedding model's file says
	// how it pools (Qwen3-Embedding: last); none (0) and rank (4, a
	// reranker's: its classification head, cls.*) are not an embedding's.
	if _, ok := md.KV(r.prefix + "pooling_type"); ok {
		cfg.Pooling = map[int]string{1: "MEAN", 2: "CLS", 3: "LAST"}[r.int("pooling_type", 0)]
	}
	if v, ok := md.KV(r.prefix + "classifier.output_labels"); ok {
		labels, isStrings := md.Strings(r.prefix + "classifier.output_labels")
		if !isStrings {
			r.errs = append(r.errs, invalid("%sclassifier.output_labels is %T, want an array of strings", r.prefix, v))
		}
		cfg.ClassifierLabels = labels
	}
	cfg.RopeScaling = r.ropeScaling()
	if s := cfg.RopeScaling; s.Type == "yarn" {
		cfg.MaxContextLen = max(cfg.MaxContextLen, int(s.Factor*float64(s.OrigContextLen))) // what YaRN extends to, as vLLM takes it
	}
	if a.gemma {
		r.gemma(&cfg)
	}
	if a.olmo {
		r.olmo(&cfg)
	}
	cfg.NoRopeLayers = noRopeEvery(cfg.NumLayers, a.noRopeEvery)
	if _, ok := md.KV(r.prefix + "rope.scaling.attn_factor"); ok && (a.phi3 || cfg.RopeScaling.Type == "yarn") {
		cfg.RopeAttnFactor = r.float("rope.scaling.attn_factor", 1)
	}
	if a.granite {
		r.granite(&cfg)
	}
	if a.moe {
		r.moe(&cfg)
	}
	if a.gptOSS {
		r.gptOSS(&cfg)
	}
	if bos, ok := r.tokenID("tokenizer.ggml.bos_token_id"); ok {
		cfg.BOSTokenID = bos
	}
	for _, k := range []string{"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"} {
		if id, ok := r.tokenID(k); ok {
			cfg.EOSTokenIDs = appendUnique(cfg.EOSTokenIDs, id)
		}
	}
	if err := errors.Join(r.errs...); err != nil {
		return model.Config{}, err
	}
	return cfg, checkConfig(&cfg)
}

// kvReader reads typed hyper-parameters, collecting errors.
type kvReader struct {
	md     *gguf.Metadata
	prefix string // "<arch>."
	errs   []error
}

// int reads prefix+key as a non-negative integer; def applies when absent
// (a zero def makes the key required).
func (r *kvReader) int(key string, def int) int {
	key = r.prefix + key
	v, ok := r.md.KV(key)
	if !ok {
		if def == 0 {
			r.errs = append(r.errs, invalid("no %s", key))
		}
		return def
	}
	u, ok := r.md.Uint(key)
	if !ok || u > math.MaxInt32 {
		if _, isArray := r.md.Array(key); isArray {
			r.errs = append(r.errs, unsupported("per-layer %s is not supported", key))
		} else {
			r.errs = append(r.errs, invalid("%s = %v is not a valid count", key, v))
		}
		return def
	}
	return int(u)
}

// float reads prefix+key; a zero def makes it required.
func (r *kvReader) float(key string, def float64) float64 {
	key = r.prefix + key
	if _, ok := r.md.KV(key); !ok {
		if def == 0 {
			r.errs = append(r.errs, invalid("no %s", key))
		}
		return def
	}
	v, ok := r.md.Float(key)
	if !ok {
		r.errs = append(r.errs, invalid("%s is not a number", key))
		return def
	}
	if f32, ok := r.md.KV(key); ok {
		if f, isF32 := f32.(float32); isF32 {
			// The decimal the writer meant: float32(1e-5) reads as 1e-5, as
			// config.json has it, not 9.99999974738e-06.
			v, _ = strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
		}
	}
	return v
}

func (r *kvReader) tokenID(key string) (int32, bool) {
	u, ok := r.md.Uint(key)
	if !ok {
		if _, present := r.md.KV(key); present {
			r.errs = append(r.errs, invalid("%s is not a token id", key))
		}
		return 0, false
	}
	if u > math.MaxInt32 {
		r.errs = append(r.errs, invalid("%s = %d is out of range", key, u))
		return 0, false
	}
	return int32(u), true
}

// ropeScaling reads rope.scaling.* (and the older rope.scale_linear) the
// way llama.cpp does: the type defaults to linear, and a factor of 0 or 1
// means none. llama3 scaling is not here: GGUF stores it as the
// rope_freqs.weight tensor.
func (r *kvReader) ropeScaling() model.RopeScaling {
	typ, ok := r.md.String(r.prefix + "rope.scaling.type")
	if !ok {
		typ = "linear"
	}
	factor := r.float("rope.scale_linear", 1)
	if _, ok := r.md.KV(r.prefix + "rope.scaling.factor"); ok {
		factor = r.float("rope.scaling.factor", 1)
	}
	switch {
	case typ == "none", factor == 0, factor == 1:
		return model.RopeScaling{}
	case typ == "linear":
		return model.RopeScaling{Type: "linear", Factor: factor}
	case typ == "yarn":
		return r.yarn(factor)
	}
	r.errs = append(r.errs, unsupported("RoPE scaling %q is not supported (supported: linear, llama3, yarn)", typ))
	return model.RopeScaling{}
}

// yarn reads YaRN scaling as llama.cpp applies it: over
// rope.scaling.original_context_length (default context_length), with
// betas 32 and 1 (llama.cpp reads rope.scaling.yarn_beta_fast and _slow
// for Grok and Mistral 3 only, none of the families here).
// DeepSeek's yarn_log_multiplier is refused.
func (r *kvReader) yarn(factor float64) model.RopeScaling {
	s := model.RopeScaling{Type: "yarn", Factor: factor, OrigContextLen: r.int("context_length", 0)}
	if _, ok := r.md.KV(r.prefix + "rope.scaling.original_context_length"); ok {
		s.OrigContextLen = r.int("rope.scaling.original_context_length", 0)
	}
	if _, ok := r.md.KV(r.prefix + "rope.scaling.yarn_log_multiplier"); ok && r.float("rope.scaling.yarn_log_multiplier", 0) != 0 {
		r.errs = append(r.errs, unsupported("YaRN with yarn_log_multiplier (DeepSeek's mscale) is not supported"))
	}
	return s
}

// finishConfig takes what only the tensors tell: the vocabulary size (the
// embedding's rows) and whether the output is tied to the embedding.
func finishConfig(cfg *model.Config, tensors map[string]*model.Tensor) error {
	emb, ok := tensors["token_embd.weight"]
	if !ok {
		return invalid("tensor %q is missing", "token_embd.weight")
	}
	if len(emb.Shape) < 2 || emb.Shape[1] <= 0 {
		return invalid("token_embd.weight has shape %v", emb.Shape)
	}
	cfg.VocabSize = emb.Shape[1]
	_, hasOutput := tensors["output.weight"]
	cfg.TiedEmbeddings = !hasOutput
	if cfg.BOSTokenID < 0 || int(cfg.BOSTokenID) >= cfg.VocabSize {
		return invalid("BOS token %d outside the vocabulary of %d", cfg.BOSTokenID, cfg.VocabSize)
	}
	for _, id := range cfg.EOSTokenIDs {
		if id < 0 || int(id) >= cfg.VocabSize {
			return invalid("EOS token %d outside the vocabulary of %d", id, cfg.VocabSize)
		}
	}
	return nil
}

// gemma reads what Gemma 2 and 3 add, as llama.cpp's gemma2 and gemma3
// models do: token embeddings scaled by √Dim, GELU, post-norms, queries
// scaled by 1/√HeadDim (1/√(Dim/H) for the 27B: 46 layers in Gemma 2,
// 62 in Gemma 3), and local layers over attention.sliding_window
// positions (Gemma 2: 4096 when absent): all but every
// sliding_window_pattern-th (Gemma 2: every other, layer 0 local; Gemma
// 3: five of six), or those an array of flags marks. Gemma 3's local
// layers rotate with rope.freq_base_swa (default 10000) and no scaling,
// Gemma 2's as the global ones unless the key is present. Soft-caps:
// final_logit_softcapping (Gemma 2: 30 when absent) and Gemma 2's
// attn_logit_softcapping (50 when absent).
func (r *kvReader) gemma(cfg *model.Config) {
	gemma2 := cfg.Arch == "gemma2"
	cfg.EmbedScale = math.Sqrt(float64(cfg.Dim))
	cfg.FFNAct = model.ActGELUTanh
	cfg.PostNorms = true
	if big := map[bool]int{true: 46, false: 62}[gemma2]; cfg.NumLayers == big && cfg.NumHeads > 0 {
		cfg.AttnScale = 1 / math.Sqrt(float64(cfg.Dim/cfg.NumHeads))
	}
	if _, ok := r.md.KV(r.prefix + "final_logit_softcapping"); ok || gemma2 {
		cfg.FinalSoftcap = r.float("final_logit_softcapping", 30)
	}
	if gemma2 {
		cfg.AttnSoftcap = r.float("attn_logit_softcapping", 50)
	}
	window := 0
	if gemma2 {
		window = 4096
	}
	if _, ok := r.md.KV(r.prefix + "attention.sliding_window"); ok {
		window = r.int("attention.sliding_window", 0)
	}
	if window == 0 || cfg.NumLayers <= 0 {
		return
	}
	cfg.SlidingWindow = window
	if _, ok := r.md.KV(r.prefix + "rope.freq_base_swa"); ok || !gemma2 {
		cfg.LocalRopeTheta = r.float("rope.freq_base_swa", 10000)
	}
	cfg.LocalLayers = r.localLayers(cfg.NumLayers, map[bool]int{true: 2, false: 6}[gemma2])
}

// localLayers reads which of numLayers layers attend over the sliding
// window from attention.sliding_window_pattern, as llama.cpp's
// set_swa_pattern reads it: an array of per-layer flags, or a period n
// (def when absent) whose every n-th layer is global (0: all local).
func (r *kvReader) localLayers(numLayers, def int) []bool {
	flags := make([]bool, numLayers)
	key := r.prefix + "attention.sliding_window_pattern"
	if arr, ok := r.md.Array(key); ok {
		local, ok := arr.([]bool)
		if !ok || len(local) != numLayers {
			r.errs = append(r.errs, invalid("%s is not one flag per layer", key))
			return flags
		}
		copy(flags, local)
		return flags
	}
	period := r.int("attention.sliding_window_pattern", def)
	for l := range flags {
		flags[l] = period == 0 || l%period < period-1
	}
	return flags
}

// noRopeEvery flags every n-th of numLayers layers (layers n-1, 2n-1, …)
// as taking no RoPE; nil when n is 0.
func noRopeEvery(numLayers, n int) []bool {
	if n <= 0 || numLayers <= 0 {
		return nil
	}
	flags := make([]bool, numLayers)
	for l := range flags {
		flags[l] = (l+1)%n == 0
	}
	return flags
}

// granite reads Granite 3's scales as llama.cpp's granite model does:
// logit_scale (required: logits are divided by it), and, when present,
// embedding_scale, attention.scale (the scores' scale, instead of
// 1/√HeadDim) and residual_scale (each sublayer's output). A file whose
// rope.scaling.finetuned is false rotates nothing, which is refused.
func (r *kvReader) granite(cfg *model.Config) {
	opt := func(key string) float64 {
		if _, ok := r.md.KV(r.prefix + key); !ok {
			return 0
		}
		return r.float(key, 0)
	}
	cfg.LogitScale = r.float("logit_scale", 0)
	cfg.EmbedScale, cfg.AttnScale, cfg.ResidualScale = opt("embedding_scale"), opt("attention.scale"), opt("residual_scale")
	if rope, ok := r.md.Bool(r.prefix + "rope.scaling.finetuned"); ok && !rope {
		r.errs = append(r.errs, unsupported("granite without RoPE (rope.scaling.finetuned false) is not supported"))
	}
}
