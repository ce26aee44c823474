package tokenizer

import "strings"

// RerankPrompt is the prompt a reranker scores for one query/document
// pair, as llama-server builds it (format_prompt_rerank): the model's
// rerank template (GGUF tokenizer.chat_template.rerank, which
// convert_hf_to_gguf.py writes for Qwen3-Reranker) with {query} and
// {document} replaced, special tokens parsed and nothing added; without
// one, BOS (when the model adds it), the query, EOS (when it adds EOS),
// the separator (when it adds one), the document and EOS again.
func (t *BPE) RerankPrompt(query, document string) []int32 {
	if t.rerankSource != "" {
		r := strings.NewReplacer("{query}", query, "{document}", document)
		return t.EncodeWith(r.Replace(t.rerankSource), EncodeOptions{ParseSpecial: true})
	}
	plain := EncodeOptions{}
	ids := append([]int32(nil), t.prefix...)
	ids = append(ids, t.EncodeWith(query, plain)...)
	ids = append(ids, t.suffix...)
	ids = append(ids, t.sep...)
	ids = append(ids, t.EncodeWith(document, plain)...)
	return append(ids, t.suffix...)
}
