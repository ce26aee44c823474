package loader

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// HFOverrides is what Tandem reads of vllm serve --hf-overrides: the keys
// with which vLLM serves a causal LM as a sequence classifier (its
// as_seq_cls_model), as Qwen3-Reranker's model card has you serve it:
//
//	{"architectures": ["Qwen3ForSequenceClassification"],
//	 "classifier_from_token": ["no", "yes"], "is_original_qwen3_reranker": true}
//
// The head is built from the rows of the LM head (output.weight, or the
// token embedding when tied) of the named tokens, as vLLM builds it:
// Method "from_2_way_softmax" (what is_original_qwen3_reranker sets; two
// tokens) is one class whose logit is the second token's minus the
// first's, so its sigmoid is the softmax's probability of the second;
// "no_post_processing" is one class per token (bge-reranker-v2-gemma's
// ["Yes"]).
type HFOverrides struct {
	Architectures           []string `json:"architectures"`
	ClassifierFromToken     []string `json:"classifier_from_token"`
	Method                  string   `json:"method"`
	IsOriginalQwen3Reranker bool     `json:"is_original_qwen3_reranker"`
}

// HFOverrideKeys are the --hf-overrides keys Tandem reads.
var HFOverrideKeys = []string{"architectures", "classifier_from_token", "method", "is_original_qwen3_reranker"}

// WithHFOverrides serves the checkpoint with o applied (see HFOverrides).
func WithHFOverrides(o HFOverrides) OpenOption {
	return func(opts *openOptions) { opts.hf = &o }
}

// applyHFOverrides adds the classification head o asks for to m's tensors
// (cls.output.weight, F32), from its LM head's rows of o's tokens.
func applyHFOverrides(m *Model, o HFOverrides) error {
	method := o.Method
	if o.IsOriginalQwen3Reranker {
		method = "from_2_way_softmax"
	}
	classify := slices.ContainsFunc(o.Architectures, func(a string) bool { return strings.HasSuffix(a, "ForSequenceClassification") })
	for _, a := range o.Architectures {
		if !strings.HasSuffix(a, "ForSequenceClassification") && !strings.HasSuffix(a, "ForCausalLM") {
			return fmt.Errorf("--hf-overrides: architecture %q: Tandem serves a checkpoint as its causal LM or, with classifier_from_token, as a ...ForSequenceClassification", a)
		}
	}
	switch {
	case method == "" && len(o.ClassifierFromToken) == 0:
		if classify && m.Tensors["cls.output.weight"] == nil {
			return fmt.Errorf("--hf-overrides: %v without a classification head in the checkpoint needs classifier_from_token and method (or is_original_qwen3_reranker)", o.Architectures)
		}
		return nil
	case method == "":
		return fmt.Errorf(`--hf-overrides: classifier_from_token needs a method: "from_2_way_softmax" or "no_post_processing" (or is_original_qwen3_reranker: true)`)
	case method != "from_2_way_softmax" && method != "no_post_processing":
		return fmt.Errorf(`--hf-overrides: method %q: want "from_2_way_softmax" or "no_post_processing"`, method)
	case len(o.ClassifierFromToken) == 0:
		return fmt.Errorf("--hf-overrides: method %q needs classifier_from_token", method)
	case method == "from_2_way_softmax" && len(o.ClassifierFromToken) != 2:
		return fmt.Errorf("--hf-overrides: from_2_way_softmax needs 2 tokens in classifier_from_token (the false one, then the true one), got %d", len(o.ClassifierFromToken))
	case m.Tensors["cls.output.weight"] != nil:
		return fmt.Errorf("--hf-overrides: classifier_from_token on a checkpoint that has a classification head (cls.output.weight) already")
	case m.Vocab == nil:
		return fmt.Errorf("--hf-overrides: classifier_from_token needs the checkpoint's vocabulary, and Tandem reads none from it")
	}
	head := m.Tensors["output.weight"]
	if head == nil {
		head = m.Tensors["token_embd.weight"] // tied
	}
	if head == nil {
		return fmt.Errorf("--hf-overrides: the checkpoint has no LM head (output.weight or token_embd.weight)")
	}
	dim := m.Config.Dim
	rows := make([][]float32, len(o.ClassifierFromToken))
	for i, tok := range o.ClassifierFromToken {
		id, err := tokenID(m.Vocab, tok)
		if err != nil {
			return fmt.Errorf("--hf-overrides: classifier_from_token %q: %w", tok, err)
		}
		rows[i] = make([]float32, dim)
		if err := head.DequantizeRow(id, rows[i]); err != nil {
			return fmt.Errorf("--hf-overrides: the LM head's row of %q: %w", tok, err)
		}
	}
	if method == "from_2_way_softmax" {
		diff := make([]float32, dim)
		for j := range diff {
			diff[j] = rows[1][j] - rows[0][j] // in float32, as vLLM subtracts
		}
		rows = [][]float32{diff}
	}
	data := make([]byte, 0, 4*dim*len(rows))
	for _, r := range rows {
		for _, x := range r {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(x))
		}
	}
	m.Tensors["cls.output.weight"] = &model.Tensor{Name: "cls.output.weight", Type: model.F32, Shape: []int{dim, len(rows)}, Data: data}
	m.Config.ClassifierLabels = nil // LABEL_0…, as vLLM names a head without id2label
	return nil
}

// tokenID is the id of tok as the vocabulary spells it (the tokenizer's
// convert_tokens_to_ids: "Ġyes" in a byte-level BPE, "▁yes" in a
// SentencePiece one); without the spellings, the one token whose bytes
// tok stands for (Ġ and ▁ a space, Ċ a newline).
func tokenID(v *gguf.Vocab, tok string) (int, error) {
	if v.Texts != nil {
		if id := slices.Index(v.Texts, tok); id >= 0 {
			return id, nil
		}
		return 0, fmt.Errorf("no token of the vocabulary is %q", tok)
	}
	want := []byte(strings.NewReplacer("Ġ", " ", "▁", " ", "Ċ", "\n").Replace(tok))
	found := -1
	for id, p := range v.Pieces {
		if bytes.Equal(p, want) {
			if found >= 0 {
				return 0, fmt.Errorf("tokens %d and %d both stand for it", found, id)
			}
			found = id
		}
	}
	if found < 0 {
		return 0, fmt.Errorf("no token of the vocabulary is %q", tok)
	}
	return found, nil
}
