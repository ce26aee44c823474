package server

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/cohere"
	"github.com/tandem-llm/tandem/frontend/llamacpp"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/wire"
)

// cohereEmbed serves Cohere's POST /v2/embed (as vLLM serves it) and the
// older POST /v1/embed: texts embedded as /v1/embeddings embeds them
// (inputs' text parts rendered as one user message each, as vLLM renders
// them), truncated as truncate and max_tokens say, answered in Cohere's
// shapes (cohere.EmbedRequest.Response).
func (s *Server) cohereEmbed(c echo.Context) error {
	v1 := strings.HasPrefix(c.Path(), "/v1/")
	var req cohere.EmbedRequest
	if e := readBody(c, &req); e != nil {
		return writeError(c, e)
	}
	if e := req.Validate(); e != nil {
		return writeError(c, e)
	}
	p := openai.Params{Model: req.Model, Priority: req.Priority}
	if req.Model == "" {
		p.Model = s.cfg.ServedModelName // Cohere's v1 makes model optional
	}
	k := s.cfg.MaxModelLen
	if req.MaxTokens != nil {
		k = min(k, *req.MaxTokens)
	}
	if req.Truncate != "NONE" {
		side := "right" // END: the last tokens go
		if req.Truncate == "START" {
			side = "left"
		}
		p.TruncatePromptTokens, p.TruncationSide = &k, &side
	}
	if len(req.Inputs) > 0 {
		no := false
		p.AddSpecialTokens = &no // the chat template writes them
	}
	ps, e := s.cohereInputs(&req)
	if e != nil {
		return writeError(c, e)
	}
	pooling := &wire.PoolingParams{PoolingType: s.cfg.Pooling, Normalize: true}
	if req.OutputDimension != nil {
		pooling.Dimensions = *req.OutputDimension
	}
	withinMax := func(prompts [][]int32) *openai.Error { // truncate NONE
		for i, pr := range prompts {
			if len(pr) > k {
				return openai.BadRequest("max_tokens", "Input %d of %d tokens exceeds max_tokens=%d with truncate=NONE. Set truncate to END or START to allow truncation.", i, len(pr), k)
			}
		}
		return nil
	}
	vecs, prompts, id, e := s.embedTexts(c, &p, ps, pooling, withinMax)
	if e != nil {
		return writeError(c, e)
	}
	tokens := 0
	for _, pr := range prompts {
		tokens += len(pr)
	}
	out, err := req.Response(id, v1, vecs, tokens)
	if err != nil {
		return writeError(c, openai.BadRequest("embedding_types", "%v", err))
	}
	return c.JSON(http.StatusOK, out)
}

// cohereInputs is req's inputs as embedding prompts: each text as it is
// (tokenized with the model's special tokens), or each mixed input's text
// parts as one user message in the chat template (no generation prompt;
// the caller tokenizes it without adding special tokens).
func (s *Server) cohereInputs(req *cohere.EmbedRequest) (llamacpp.Prompts, *openai.Error) {
	if len(req.Texts) > 0 {
		return textPrompts(req.Texts), nil
	}
	parts := req.TextParts()
	convs := make([][]openai.ChatMessage, len(parts))
	for i, texts := range parts {
		content := openai.Content{Text: strings.Join(texts, "\n")}
		for _, t := range texts {
			content.Parts = append(content.Parts, openai.ContentPart{Type: "text", Text: t})
		}
		convs[i] = []openai.ChatMessage{{Role: "user", Content: content}}
	}
	return s.conversationPrompts(convs, &openai.ChatInput{})
}
