package cpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/lora"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/model/safetensors"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// hfPermute is convert_hf_to_gguf.py's LlamaModel.permute written as
// numpy has it, on a matrix of rows×cols: reshape(heads, 2, rows/heads/2,
// cols).swapaxes(1, 2).reshape(rows, cols), so GGUF's element
// [h][i][s][c] is Hugging Face's [h][s][i][c].
func hfPermute(w []float32, heads, rows, cols int) []float32 {
	half := rows / heads / 2
	out := make([]float32, len(w))
	for h := range heads {
		for i := range half {
			for s := range 2 {
				for c := range cols {
					out[((h*half+i)*2+s)*cols+c] = w[((h*2+s)*half+i)*cols+c]
				}
			}
		}
	}
	return out
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// TestPEFTMatchesMergedWeights: a PEFT adapter directory (vLLM's format:
// adapter_config.json, adapter_model.safetensors in Hugging Face's names
// and row order) applied to the dummy model (GGUF llama, Q and K rows in
// RoPE pair order) gives the logits of the model with s·(α/r)·B·A merged
// into each weight in Hugging Face's order and then permuted as
// convert_hf_to_gguf.py permutes Q and K; the embedding's update is
// A's column per token (PEFT's lora_embedding_A is [r][vocab]).
func TestPEFTMatchesMergedWeights(t *testing.T) {
	cfg, w := dummy()
	const r, alpha, scale = 4, 8.0, 0.8
	rng := rand.New(rand.NewPCG(5, 6))
	randn := func(n int, std float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * std)
		}
		return v
	}
	q, kv := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim
	type mod struct {
		hf      string
		in, out int
		heads   int // > 0: Q or K, permuted
		target  func(l *model.Layer) **model.Tensor
	}
	mods := []mod{
		{"self_attn.q_proj", cfg.Dim, q, cfg.NumHeads, func(l *model.Layer) **model.Tensor { return &l.Wq }},
		{"self_attn.k_proj", cfg.Dim, kv, cfg.NumKVHeads, func(l *model.Layer) **model.Tensor { return &l.Wk }},
		{"self_attn.o_proj", q, cfg.Dim, 0, func(l *model.Layer) **model.Tensor { return &l.Wo }},
		{"mlp.down_proj", cfg.FFNDim, cfg.Dim, 0, func(l *model.Layer) **model.Tensor { return &l.W2 }},
	}
	sw := safetensors.NewWriter()
	m := *w
	m.Layers = append([]model.Layer(nil), w.Layers...)
	sc := float32(scale * alpha / r)
	for l := range cfg.NumLayers {
		for _, md := range mods {
			a, b := randn(r*md.in, 1/math.Sqrt(float64(md.in))), randn(md.out*r, 0.05) // A [r][in], B [out][r]
			prefix := "base_model.model.model.layers." + strconv.Itoa(l) + "." + md.hf
			if err := sw.Add(prefix+".lora_A.weight", "F32", []uint64{r, uint64(md.in)}, f32Bytes(a)); err != nil {
				t.Fatal(err)
			}
			if err := sw.Add(prefix+".lora_B.weight", "F32", []uint64{uint64(md.out), r}, f32Bytes(b)); err != nil {
				t.Fatal(err)
			}
			delta := make([]float32, md.out*md.in) // B·A in Hugging Face's row order
			for o := range md.out {
				for i := range md.in {
					var d float32
					for k := range r {
						d += b[o*r+k] * a[k*md.in+i]
					}
					delta[o*md.in+i] = sc * d
				}
			}
			if md.heads > 0 {
				delta = hfPermute(delta, md.heads, md.out, md.in)
			}
			ptr := md.target(&m.Layers[l])
			v, _ := (*ptr).Float32s()
			for i := range v {
				v[i] += delta[i]
			}
			nt, err := model.NewTensor((*ptr).Name, model.F32, (*ptr).Shape, v)
			if err != nil {
				t.Fatal(err)
			}
			*ptr = nt
		}
	}
	ea, eb := randn(r*cfg.VocabSize, 1), randn(cfg.Dim*r, 0.05) // lora_embedding_A [r][vocab], _B [dim][r]
	_ = sw.Add("base_model.model.model.embed_tokens.lora_embedding_A", "F32", []uint64{r, uint64(cfg.VocabSize)}, f32Bytes(ea))
	_ = sw.Add("base_model.model.model.embed_tokens.lora_embedding_B", "F32", []uint64{uint64(cfg.Dim), r}, f32Bytes(eb))
	emb, _ := w.TokenEmbed.Float32s()
	for tok := range cfg.VocabSize {
		for d := range cfg.Dim {
			var x float32
			for k := range r {
				x += ea[k*cfg.VocabSize+tok] * eb[d*r+k]
			}
			emb[tok*cfg.Dim+d] += sc * x
		}
	}
	nt, err := model.NewTensor(w.TokenEmbed.Name, model.F32, w.TokenEmbed.Shape, emb)
	if err != nil {
		t.Fatal(err)
	}
	m.TokenEmbed = nt
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sw.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	config := `{"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "k_proj", "o_proj", "down_proj", "embed_tokens"], "bias": "none"}`
	if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}

	h := newHarness(t, cfg, w, 2, 64, 16, 3)
	a, err := h.be.LoadLoRA(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	ref := newHarness(t, cfg, &m, 2, 64, 16, 3)
	plain := newHarness(t, cfg, w, 2, 64, 16, 3)
	toks := prompt(30, 9)
	var s1, s2, s3 seqState
	maxDiff, moved := 0.0, 0.0
	for _, chunk := range [][]int32{toks[:29], toks[29:]} {
		var step runner.Step
		h.add(&step, &s1, chunk, true)
		step.Seqs[0].LoRA = []lora.Use{{Adapter: a, Scale: scale}}
		got := h.forward(&step)[0]
		want, bare := ref.feed(&s2, chunk), plain.feed(&s3, chunk)
		for j := range want {
			maxDiff = max(maxDiff, math.Abs(float64(got[j]-want[j])))
			moved = max(moved, math.Abs(float64(want[j]-bare[j])))
		}
	}
	t.Logf("max |PEFT − merged| = %.2g; the adapter moves logits by up to %.2g", maxDiff, moved)
	if moved < 0.1 || maxDiff > 2e-3 {
		t.Errorf("PEFT logits %.3g from the merged model's, which the adapter moves by %.3g", maxDiff, moved)
	}

	// What a PEFT directory may not hold is refused with the reason.
	for _, bad := range []string{
		`{"peft_type": "LORA", "r": 4, "lora_alpha": 8, "use_dora": true}`,
		`{"peft_type": "LORA", "r": 4, "lora_alpha": 8, "modules_to_save": ["lm_head"]}`,
		`{"peft_type": "PREFIX_TUNING"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := h.be.LoadLoRA(dir, 0); err == nil {
			t.Errorf("adapter_config %s loaded", bad)
		}
	}
}
