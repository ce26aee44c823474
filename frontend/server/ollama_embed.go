package server

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/ollama"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/wire"
)

// ollamaEmbed serves POST /api/embed: one normalized embedding per input
// (Ollama's truncate, default true, cuts an input to the context).
func (s *Server) ollamaEmbed(c echo.Context) error {
	start := time.Now()
	var req ollama.EmbedRequest
	if e := decodeOllama(c, &req); e != nil {
		return writeError(c, e)
	}
	if e := s.checkOllamaModel(req.Model); e != nil {
		return writeError(c, e)
	}
	texts, err := req.Inputs()
	if err != nil {
		return writeError(c, openai.BadRequest("input", "%v", err))
	}
	if req.Dimensions < 0 {
		return writeError(c, openai.BadRequest("dimensions", "dimensions must be positive, got %d", req.Dimensions))
	}
	p := openai.Params{Model: s.ollamaModule(req.Model)}
	if req.Truncate == nil || *req.Truncate {
		k, right := s.cfg.MaxModelLen, "right"
		p.TruncatePromptTokens, p.TruncationSide = &k, &right // Ollama keeps the start
	}
	vecs, n, e := s.ollamaEmbeddings(c, &p, texts, &wire.PoolingParams{Normalize: true, Dimensions: req.Dimensions})
	if e != nil {
		return writeError(c, e)
	}
	return c.JSON(http.StatusOK, ollama.EmbedResponse{Model: req.Model, Embeddings: vecs, PromptEvalCount: n,
		TotalDuration: time.Since(start).Nanoseconds()})
}

// ollamaEmbeddings serves the older POST /api/embeddings: one prompt's
// embedding, not normalized; an empty prompt gets an empty one.
func (s *Server) ollamaLegacyEmbeddings(c echo.Context) error {
	var req ollama.EmbeddingsRequest
	if e := decodeOllama(c, &req); e != nil {
		return writeError(c, e)
	}
	if e := s.checkOllamaModel(req.Model); e != nil {
		return writeError(c, e)
	}
	if req.Prompt == "" {
		return c.JSON(http.StatusOK, ollama.EmbeddingsResponse{Embedding: []float32{}})
	}
	p := openai.Params{Model: s.ollamaModule(req.Model)}
	vecs, _, e := s.ollamaEmbeddings(c, &p, []string{req.Prompt}, &wire.PoolingParams{})
	if e != nil {
		return writeError(c, e)
	}
	return c.JSON(http.StatusOK, ollama.EmbeddingsResponse{Embedding: vecs[0]})
}

// ollamaEmbeddings embeds texts for the Ollama routes and counts their
// prompt tokens.
func (s *Server) ollamaEmbeddings(c echo.Context, p *openai.Params, texts []string, pooling *wire.PoolingParams) ([][]float32, int, *openai.Error) {
	vecs, prompts, _, e := s.embedTexts(c, p, textPrompts(texts), pooling, nil)
	if e != nil {
		return nil, 0, e
	}
	n := 0
	for _, p := range prompts {
		n += len(p)
	}
	return vecs, n, nil
}
