package server

import (
	"cmp"
	"context"
	"math"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/wire"
)

// rerankPrompter builds a reranker's prompt for a query/document pair
// (tokenizer.BPE: llama-server's format, the model's rerank template).
type rerankPrompter interface {
	RerankPrompt(query, document string) []int32
}

// score serves vLLM's POST /score and /v1/score: each first text against
// its second, in order.
func (s *Server) score(c echo.Context) error {
	var req openai.ScoreRequest
	cm, e := s.beginScoring(c, &req, &req.Params)
	if e != nil {
		return writeError(c, e)
	}
	first, second, _ := req.Sides()
	id := "score-" + cm.baseID
	scores, tokens, e := s.scorePairs(c.Request().Context(), id, cm, &req.Params, &req.ScoreOptions, first, second)
	if e != nil {
		return writeError(c, e)
	}
	out := openai.NewList[openai.ScoreData](id, s.cfg.ServedModelName, nowUnix(), len(scores))
	out.Usage = openai.Usage{PromptTokens: tokens, TotalTokens: tokens}
	for i, sc := range scores {
		out.Data[i] = openai.ScoreData{Index: i, Object: "score", Score: sc}
	}
	return respondCollected(c, out, nil)
}

// rerank serves POST /rerank, /v1/rerank, /v2/rerank (vLLM's, Jina's,
// Cohere's) and /reranking, /v1/reranking (llama-server's): the documents
// by their score against the query, best first, the top_n of them; TEI's
// bare array when the request gives texts.
func (s *Server) rerank(c echo.Context) error {
	var req openai.RerankRequest
	cm, e := s.beginScoring(c, &req, &req.Params)
	if e != nil {
		return writeError(c, e)
	}
	docs, _ := req.Docs()
	queries := make([]string, len(docs))
	for i := range queries {
		queries[i] = req.QueryText()
	}
	id := "rerank-" + cm.baseID
	scores, tokens, e := s.scorePairs(c.Request().Context(), id, cm, &req.Params, &req.ScoreOptions, queries, docs)
	if e != nil {
		return writeError(c, e)
	}
	order := make([]int, len(docs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	if n := req.TopN; n != nil && *n > 0 && *n < len(order) {
		order = order[:*n]
	}
	if req.TEI() {
		out := make([]openai.TEIRank, len(order))
		for k, i := range order {
			out[k] = openai.TEIRank{Index: i, Score: scores[i]}
			if req.ReturnText {
				out[k].Text = &docs[i]
			}
		}
		return c.JSON(http.StatusOK, out)
	}
	out := openai.RerankResponse{ID: id, Object: openai.ObjectList, Model: s.cfg.ServedModelName,
		Usage: openai.RerankUsage{PromptTokens: tokens, TotalTokens: tokens}, Results: make([]openai.RerankResult, len(order))}
	for k, i := range order {
		out.Results[k] = openai.RerankResult{Index: i, RelevanceScore: scores[i]}
		if req.ReturnDocuments == nil || *req.ReturnDocuments {
			out.Results[k].Document = &openai.RerankDocument{Text: docs[i]}
		}
	}
	return respondCollected(c, out, nil)
}

// beginScoring is begin for /score and /rerank, whose documents are
// theirs (a generation's RAG documents are refused, not these).
func (s *Server) beginScoring(c echo.Context, req interface{ Validate() *openai.Error }, p *openai.Params) (common, *openai.Error) {
	if e := readBody(c, req); e != nil {
		return common{}, e
	}
	return s.validated(c, req, p)
}

// scorePairs scores first[i] against second[i] (equal lengths) and counts
// the prompt tokens computed. With a classification head (a reranker)
// each pair is one prompt (rerankPrompt) through the head; without one,
// each distinct text is embedded once (normalized) and a pair's score is
// the cosine of its embeddings, as vLLM scores with an embedding model.
func (s *Server) scorePairs(ctx context.Context, id string, cm common, p *openai.Params, o *openai.ScoreOptions, first, second []string) ([]float64, int, *openai.Error) {
	first = s.truncateTexts(first, o.MaxTokensPerQuery)
	second = s.truncateTexts(second, o.MaxTokensPerDoc)
	if n := len(s.cfg.ClassifierLabels); n > 2 {
		return nil, 0, openai.BadRequest("", "The model's classification head has %d classes; scoring needs one (a relevance logit) or two (yes, no). Use /classify.", n)
	} else if n == 0 {
		return s.cosinePairs(ctx, id, cm, p, first, second)
	}
	tokens := 0
	prompts := make([][]int32, len(first))
	for i := range first {
		ids, e := s.rerankPrompt(first[i], second[i])
		if e != nil {
			return nil, 0, e
		}
		if e := s.checkPrompt(p, &ids); e != nil {
			return nil, 0, e
		}
		prompts[i] = ids
		tokens += len(ids)
	}
	logits, err := s.embed(ctx, id, cm, p, prompts, &wire.PoolingParams{PoolingType: wire.PoolingRank})
	if err != nil {
		return nil, 0, engineError(err)
	}
	out := make([]float64, len(logits))
	for i, l := range logits {
		out[i] = relevance(l, o.Activate())
	}
	return out, tokens, nil
}

// cosinePairs is scorePairs for a model without a classification head:
// each distinct text of either side is embedded once (a rerank's query
// once, not once per document).
func (s *Server) cosinePairs(ctx context.Context, id string, cm common, p *openai.Params, first, second []string) ([]float64, int, *openai.Error) {
	if e := s.pooledOnly(); e != nil {
		return nil, 0, e
	}
	index := map[string]int{} // text → its prompt
	var prompts [][]int32
	tokens := 0
	for _, t := range append(slices.Clone(first), second...) {
		if _, ok := index[t]; ok {
			continue
		}
		ids := s.tok.Encode(t, p.AddSpecial(true))
		if e := s.checkPrompt(p, &ids); e != nil {
			return nil, 0, e
		}
		index[t] = len(prompts)
		prompts = append(prompts, ids)
		tokens += len(ids)
	}
	vecs, err := s.embed(ctx, id, cm, p, prompts, &wire.PoolingParams{PoolingType: s.cfg.Pooling, Normalize: true})
	if err != nil {
		return nil, 0, engineError(err)
	}
	out := make([]float64, len(first))
	for i := range out {
		out[i] = cosine(vecs[index[first[i]]], vecs[index[second[i]]])
	}
	return out, tokens, nil
}

// rerankPrompt is the pair's reranker prompt: with ScoreTemplate, the
// chat template rendered over a "query" and a "document" message (no
// generation prompt), as vLLM renders a pair through --chat-template;
// else the tokenizer's (the model's rerank template, or llama-server's
// default layout), else the query with special tokens then the document.
func (s *Server) rerankPrompt(query, doc string) ([]int32, *openai.Error) {
	if s.cfg.ScoreTemplate {
		no := false
		text, e := s.renderChat(&openai.ChatCompletionRequest{AddGenerationPrompt: &no, Messages: []openai.ChatMessage{
			{Role: "query", Content: openai.Content{Text: query}}, {Role: "document", Content: openai.Content{Text: doc}}}})
		if e != nil {
			return nil, e
		}
		return s.tok.Encode(text, false), nil
	}
	if rp, ok := s.tok.(rerankPrompter); ok {
		return rp.RerankPrompt(query, doc), nil
	}
	return append(s.tok.Encode(query, true), s.tok.Encode(doc, false)...), nil
}

// checkPrompt truncates *ids (truncate_prompt_tokens) and refuses one
// with no token or past the context.
func (s *Server) checkPrompt(p *openai.Params, ids *[]int32) *openai.Error {
	*ids = s.truncatePrompt(p, *ids)
	switch n := len(*ids); {
	case n == 0:
		return openai.BadRequest("", "A text to score has no token.")
	case n > s.cfg.MaxModelLen:
		return openai.ContextLengthExceeded(n, s.cfg.MaxModelLen)
	}
	return nil
}

// truncateTexts is texts each cut to its first n tokens (vLLM's
// max_tokens_per_query and max_tokens_per_doc), a new slice; n = 0 keeps
// all. A text repeated (a rerank's query) is tokenized once.
func (s *Server) truncateTexts(texts []string, n int) []string {
	if n <= 0 {
		return texts
	}
	out := make([]string, len(texts))
	cut := map[string]string{}
	for i, t := range texts {
		c, ok := cut[t]
		if !ok {
			c = t
			if ids := s.tok.Encode(t, false); len(ids) > n {
				c = s.tok.Decode(ids[:n], false)
			}
			cut[t] = c
		}
		out[i] = c
	}
	return out
}

// relevance is a pair's score from the head's logits: a one-class
// head's logit, a two-class (yes, no) head's logit difference — with the
// activation, the sigmoid of either: the probability of relevance (for
// two classes, the softmax's first, as llama.cpp's Qwen3 reranker).
func relevance(logits []float32, activate bool) float64 {
	x := float64(logits[0])
	if len(logits) > 1 {
		x -= float64(logits[1])
	}
	if !activate {
		return x
	}
	return 1 / (1 + math.Exp(-x))
}

// cosine is a·b / (|a| |b|); 0 when either is zero.
func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i, x := range a {
		y := float64(b[i])
		ab += float64(x) * y
		aa += float64(x) * float64(x)
		bb += y * y
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}
