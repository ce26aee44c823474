package server

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/llamacpp"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/wire"
)

// Hugging Face's text-embeddings-inference (TEI) embedding API, for the
// clients written against it: huggingface_hub's InferenceClient
// (feature_extraction posts to the server's root), and through it
// LangChain's HuggingFaceEndpointEmbeddings and Haystack's TEI embedders;
// LlamaIndex's TextEmbeddingsInference posts to /embed. TEI's rerank form
// (query and texts) is served by the rerank routes (score.go).

// teiEmbedRequest is TEI's POST /embed body.
type teiEmbedRequest struct {
	// Inputs is a string or an array of strings (token ids too, as for
	// /v1/embeddings): one embedding each.
	Inputs json.RawMessage `json:"inputs"`
	// Truncate cuts an input longer than the context (default false: it
	// is an error), from the end unless TruncationDirection is "Left".
	Truncate            bool    `json:"truncate"`
	TruncationDirection string  `json:"truncation_direction"`
	Normalize           *bool   `json:"normalize"`   // default true
	PromptName          *string `json:"prompt_name"` // refused: the models served have no prompts
	Dimensions          *int    `json:"dimensions"`  // the first n values, normalized again
	// EncodingFormat is "float" (the default); another (huggingface_hub
	// offers base64) is refused rather than answered in floats.
	EncodingFormat string `json:"encoding_format"`
}

// teiError is TEI's error answer.
type teiError struct {
	Error     string `json:"error"`
	ErrorType string `json:"error_type"`
}

// isTEIPath reports whether a request's errors take TEI's shape.
func isTEIPath(method, path string) bool {
	return path == "/embed" || path == "/" && method == http.MethodPost
}

// teiErrorOf is e as TEI answers it: a bad request is its 422
// Validation error.
func teiErrorOf(e *openai.Error) (int, teiError) {
	switch e.Status {
	case http.StatusBadRequest:
		return http.StatusUnprocessableEntity, teiError{e.Message, "Validation"}
	case http.StatusTooManyRequests:
		return e.Status, teiError{e.Message, "Overloaded"}
	case http.StatusServiceUnavailable:
		return e.Status, teiError{e.Message, "Unhealthy"}
	}
	return e.Status, teiError{e.Message, "Backend"}
}

// teiEmbed serves TEI's POST /embed and POST /: the inputs embedded as
// /v1/embeddings embeds them, answered as TEI's bare array of vectors.
func (s *Server) teiEmbed(c echo.Context) error {
	var req teiEmbedRequest
	if e := readBody(c, &req); e != nil {
		return writeError(c, e)
	}
	var ps llamacpp.Prompts
	if err := json.Unmarshal(req.Inputs, &ps); err != nil || len(req.Inputs) == 0 {
		return writeError(c, openai.BadRequest("inputs", "`inputs` must be a string or an array of strings"))
	}
	if req.PromptName != nil {
		return writeError(c, openai.BadRequest("prompt_name", "`prompt_name` %q: the model has no prompts", *req.PromptName))
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" {
		return writeError(c, openai.BadRequest("encoding_format", "`encoding_format` %q: only float is answered here (base64 is on /v1/embeddings)", req.EncodingFormat))
	}
	if req.Dimensions != nil && *req.Dimensions < 1 {
		return writeError(c, openai.BadRequest("dimensions", "`dimensions` must be at least 1, got %d", *req.Dimensions))
	}
	side := "right" // TEI's Right: the end goes
	switch req.TruncationDirection {
	case "", "Right", "right":
	case "Left", "left":
		side = "left"
	default:
		return writeError(c, openai.BadRequest("truncation_direction", "`truncation_direction` must be Left or Right, got %q", req.TruncationDirection))
	}
	p := openai.Params{Model: s.cfg.ServedModelName}
	if req.Truncate {
		k := s.cfg.MaxModelLen
		p.TruncatePromptTokens, p.TruncationSide = &k, &side
	}
	pooling := &wire.PoolingParams{PoolingType: s.cfg.Pooling, Normalize: req.Normalize == nil || *req.Normalize}
	if req.Dimensions != nil {
		pooling.Dimensions = *req.Dimensions
	}
	vecs, _, _, e := s.embedTexts(c, &p, ps, pooling, nil)
	if e != nil {
		return writeError(c, e)
	}
	return c.JSON(http.StatusOK, vecs)
}
