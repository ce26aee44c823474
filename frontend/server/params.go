package server

import (
	"io"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/session"
	"github.com/tandem-llm/tandem/wire"
)

// common is what every generation endpoint resolves before tokenizing.
type common struct {
	baseID    string // X-Request-Id header, else body request_id, else random
	sessionID string
	source    session.Source // where sessionID came from
	rank      *int           // X-data-parallel-rank
}

// readBody decodes the JSON body into v, as a 400 when malformed.
func readBody(c echo.Context, v any) *openai.Error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return openai.BadRequest("", "reading request body: %v", err)
	}
	return openai.Decode(body, v)
}

// resolveCommon checks the model name and resolves ids, session and rank.
func (s *Server) resolveCommon(c echo.Context, p *openai.Params) (common, *openai.Error) {
	var cm common
	if p.Model != "" && p.Model != s.cfg.ServedModelName {
		return cm, openai.ModelNotFound(p.Model)
	}
	h := c.Request().Header
	id, src, err := session.Resolve(p.SessionID, h, p.VLLMXArgs)
	if err != nil {
		return cm, openai.BadRequest("session_id", "%v", err)
	}
	cm.sessionID, cm.source = id, src
	switch {
	case h.Get(echo.HeaderXRequestID) != "":
		cm.baseID = h.Get(echo.HeaderXRequestID)
	case p.RequestID != "":
		cm.baseID = p.RequestID
		c.Response().Header().Set(echo.HeaderXRequestID, p.RequestID)
	default:
		cm.baseID = c.Response().Header().Get(echo.HeaderXRequestID)
	}
	if r := h.Get("X-data-parallel-rank"); r != "" {
		v, err := strconv.Atoi(r)
		if err != nil || v < 0 {
			return cm, openai.BadRequest("X-data-parallel-rank", "header X-data-parallel-rank must be a non-negative integer, got %q", r)
		}
		cm.rank = &v
	}
	return cm, nil
}

// checkLength enforces max_model_len and the KV pool for one prompt and
// returns the effective max_tokens (defaulting to the rest of the context).
func (s *Server) checkLength(numPrompt int, maxTokens int, set bool) (int, *openai.Error) {
	if numPrompt >= s.cfg.MaxModelLen {
		return 0, openai.ContextLengthExceeded(numPrompt, s.cfg.MaxModelLen)
	}
	if !set {
		maxTokens = s.cfg.MaxModelLen - numPrompt
	} else if numPrompt+maxTokens > s.cfg.MaxModelLen {
		return 0, openai.MaxTokensTooLarge(maxTokens, numPrompt, s.cfg.MaxModelLen)
	}
	if bs := s.cfg.BlockSize; bs > 0 && s.cfg.NumBlocks > 0 {
		if need := (numPrompt + 1 + bs - 1) / bs; need > s.cfg.NumBlocks {
			return 0, openai.BadRequest("messages", "the prompt has %d tokens, more than the engine's KV cache holds (%d tokens)", numPrompt, s.cfg.NumBlocks*bs)
		}
	}
	return maxTokens, nil
}

// samplingParams maps the request's fields to the engine's parameters.
func samplingParams(p *openai.Params, maxTokens int, logprobs *int, eos []int32) (wire.SamplingParams, *openai.Error) {
	sp := wire.DefaultSamplingParams()
	sp.MaxTokens = maxTokens
	sp.MinTokens = p.MinTokens
	if p.Temperature != nil {
		sp.Temperature = *p.Temperature
	}
	if p.TopP != nil {
		sp.TopP = *p.TopP
	}
	if p.TopK > 0 {
		sp.TopK = p.TopK
	}
	sp.MinP = p.MinP
	sp.Seed = p.Seed
	sp.PresencePenalty = p.PresencePenalty
	sp.FrequencyPenalty = p.FrequencyPenalty
	if p.RepetitionPenalty != nil {
		sp.RepetitionPenalty = *p.RepetitionPenalty
	}
	sp.StopTokenIDs = p.StopTokenIDs
	sp.IgnoreEOS = p.IgnoreEOS
	sp.Logprobs = logprobs
	if len(p.LogitBias) > 0 {
		sp.LogitBias = make(map[int32]float64, len(p.LogitBias))
		for k, v := range p.LogitBias {
			id, err := strconv.ParseInt(k, 10, 32)
			if err != nil {
				return sp, openai.BadRequest("logit_bias", "logit_bias key %q is not a token id", k)
			}
			sp.LogitBias[int32(id)] = v
		}
	}
	if len(p.VLLMXArgs) > 0 {
		sp.ExtraArgs = p.VLLMXArgs
	}
	_ = eos
	return sp, nil
}

// checkTokens rejects token ids outside the vocabulary.
func (s *Server) checkTokens(param string, ids []int32) *openai.Error {
	v := int32(s.tok.VocabSize())
	for _, id := range ids {
		if id < 0 || id >= v {
			return openai.BadRequest(param, "token id %d is outside the vocabulary [0, %d)", id, v)
		}
	}
	return nil
}

var _ = http.StatusOK
