package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/session"
	"github.com/tandem-llm/tandem/wire"
)

// common is what every generation endpoint resolves before tokenizing.
type common struct {
	baseID    string // X-Request-Id header, else body request_id, else random
	sessionID string
	source    session.Source     // where sessionID came from
	rank      *int               // X-data-parallel-rank, or id_slot's engine
	slot      *slotPin           // id_slot's (llama.cpp): the slot the tokens are recorded in
	lora      []wire.LoRARequest // the adapters the request applies (lora.go)
}

// readBody decodes the JSON body into v, as a 400 when malformed.
func readBody(c echo.Context, v any) *openai.Error {
	body, e := requestBody(c)
	if e != nil {
		return e
	}
	return openai.Decode(body, v)
}

// requestBody reads the request's body: a 413 over --max-request-body.
func requestBody(c echo.Context) ([]byte, *openai.Error) {
	body, err := readAll(c.Request())
	var he *echo.HTTPError
	switch {
	case errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge:
		// A chunked body has no Content-Length for BodyLimit to refuse up
		// front; its limited reader fails here instead.
		return nil, openai.PayloadTooLarge("request body larger than the server's --max-request-body")
	case err != nil:
		return nil, openai.BadRequest("", "reading request body: %v", err)
	}
	return body, nil
}

// readAll reads r's body into a buffer of its Content-Length (which
// BodyLimit has checked) rather than io.ReadAll's doublings, which for a
// 16 MB body peak at 32 MB of capacity.
func readAll(r *http.Request) ([]byte, error) {
	if r.ContentLength <= 0 {
		return io.ReadAll(r.Body)
	}
	buf := make([]byte, r.ContentLength)
	n, err := io.ReadFull(r.Body, buf)
	if err != nil {
		return nil, err
	}
	if extra, _ := r.Body.Read(make([]byte, 1)); extra > 0 {
		return nil, fmt.Errorf("the body is longer than its Content-Length")
	}
	return buf[:n], nil
}

// readRequest decodes a generation request (chat, completions,
// responses) and refuses the vLLM features Tandem does not have yet.
func readRequest(c echo.Context, v any) *openai.Error {
	body, e := requestBody(c)
	if e != nil {
		return e
	}
	if e := openai.Decode(body, v); e != nil {
		return e
	}
	return openai.CheckUnsupported(body)
}

// truncatePrompt applies truncate_prompt_tokens: it keeps the last k
// tokens (vLLM's default truncation side), or the last max_model_len - 1
// for -1; the first k with truncation_side "right".
func (s *Server) truncatePrompt(p *openai.Params, prompt []int32) []int32 {
	if p.TruncatePromptTokens == nil {
		return prompt
	}
	k := *p.TruncatePromptTokens
	if k == -1 {
		k = s.cfg.MaxModelLen - 1
	}
	if k > 0 && len(prompt) > k {
		if p.TruncationSide != nil && *p.TruncationSide == "right" {
			return prompt[:k]
		}
		return prompt[len(prompt)-k:]
	}
	return prompt
}

// begin is every generation endpoint's prologue: decode the body into req,
// validate it, and resolve ids, session and rank from its params (p points
// into req).
func (s *Server) begin(c echo.Context, req interface{ Validate() *openai.Error }, p *openai.Params) (common, *openai.Error) {
	if e := readRequest(c, req); e != nil {
		return common{}, e
	}
	return s.validated(c, req, p)
}

// validated is begin's part after the body is read: the request's own
// checks, then the model name, ids, session and rank.
func (s *Server) validated(c echo.Context, req interface{ Validate() *openai.Error }, p *openai.Params) (common, *openai.Error) {
	if e := req.Validate(); e != nil {
		return common{}, e
	}
	return s.resolveCommon(c, p)
}

// resolveCommon checks the model name and resolves ids, session and rank.
func (s *Server) resolveCommon(c echo.Context, p *openai.Params) (common, *openai.Error) {
	var cm common
	if e := s.checkModel(p.Model); e != nil {
		return cm, e
	}
	if e := s.checkLogitBias(p.LogitBias); e != nil {
		return cm, e
	}
	lora, e := s.loras.resolve(p.Model, p.LoRA)
	if e != nil {
		return cm, e
	}
	cm.lora = lora
	h := c.Request().Header
	id, src, err := session.Resolve(p.SessionID, h, p.VLLMXArgs)
	if err != nil {
		return cm, openai.BadRequest("session_id", "%v", err)
	}
	c.Set(ctxSessionKey, id)
	tenant := tenantOf(c)
	cm.sessionID, cm.source = scopeSession(tenant, id), src
	p.CacheSalt = scopeSalt(tenant, p.CacheSalt)
	if v := h.Get(echo.HeaderXRequestID); len(v) > openai.MaxRequestIDBytes {
		return cm, openai.BadRequest("X-Request-Id", "header X-Request-Id is %d bytes; at most %d.", len(v), openai.MaxRequestIDBytes)
	}
	switch {
	case h.Get(echo.HeaderXRequestID) != "":
		cm.baseID = h.Get(echo.HeaderXRequestID)
	case p.RequestID != "":
		cm.baseID = p.RequestID
		c.Response().Header().Set(echo.HeaderXRequestID, p.RequestID)
	default:
		cm.baseID = c.Response().Header().Get(echo.HeaderXRequestID)
	}
	if v := h.Get("X-Vllm-Priority"); v != "" {
		prio, err := strconv.Atoi(v)
		if err != nil {
			return cm, openai.BadRequest("X-Vllm-Priority", "header X-Vllm-Priority must be an integer, got %q", v)
		}
		p.Priority = prio // the header wins over the body, as in vLLM
	}
	if r := h.Get("X-data-parallel-rank"); r != "" {
		v, err := strconv.Atoi(r)
		if err != nil || v < 0 {
			return cm, openai.BadRequest("X-data-parallel-rank", "header X-data-parallel-rank must be a non-negative integer, got %q", r)
		}
		cm.rank = &v
	}
	if p.IDSlot != nil {
		slot, e := s.pinSlot(*p.IDSlot, p.CacheSalt, &cm.rank)
		if e != nil {
			return cm, e
		}
		cm.slot = slot
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
	} else if numPrompt+maxTokens > s.cfg.MaxModelLen && !s.cfg.ContextShift {
		return 0, openai.MaxTokensTooLarge(maxTokens, numPrompt, s.cfg.MaxModelLen)
	}
	if bs := s.cfg.BlockSize; bs > 0 && s.cfg.NumBlocks > 0 {
		if need := (numPrompt + 1 + bs - 1) / bs; need > s.cfg.NumBlocks {
			return 0, openai.BadRequest("messages", "the prompt has %d tokens, more than the engine's KV cache holds (%d tokens)", numPrompt, s.cfg.NumBlocks*bs)
		}
	}
	return maxTokens, nil
}

// contextShift is the engine's _tandem_context_shift for prompt: nil
// without --context-shift, else the tokens a shift keeps, llama-server's
// n_keep: the BOS token and nKeep more (-1: the whole prompt).
func (s *Server) contextShift(prompt []int32, nKeep int) *int {
	if !s.cfg.ContextShift {
		return nil
	}
	keep := len(prompt)
	if nKeep >= 0 {
		keep = nKeep
		if bos, ok := s.tok.BOS(); ok && len(prompt) > 0 && prompt[0] == bos {
			keep++
		}
	}
	return &keep
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
	sp.AllowedTokenIDs = p.AllowedTokenIDs
	if len(p.LogprobTokenIDs) > 0 { // vLLM: these replace logprobs' top k
		sp.LogprobTokenIDs, sp.Logprobs = p.LogprobTokenIDs, nil
	}
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
	so, oe := p.Constraint()
	if oe != nil {
		return sp, oe
	}
	sp.StructuredOutputs = so
	return sp, nil
}

// vocabSize is the model's vocabulary: the engines' (READY), else the
// tokenizer's.
func (s *Server) vocabSize() int {
	if s.cfg.VocabSize > 0 {
		return s.cfg.VocabSize
	}
	return s.tok.VocabSize()
}

// checkLogitBias refuses logit_bias ids outside the model's vocabulary
// with vLLM's message, which lists them (in increasing order here: JSON
// object keys reach Go unordered) and the vocabulary size. Validate has
// checked that every key is a non-negative integer.
func (s *Server) checkLogitBias(bias map[string]float64) *openai.Error {
	v := s.vocabSize()
	var bad []int64
	for k := range bias {
		if id, err := strconv.ParseInt(k, 10, 64); err == nil && id >= int64(v) {
			bad = append(bad, id)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	ids := make([]string, len(bad))
	for i, id := range bad {
		ids[i] = strconv.FormatInt(id, 10)
	}
	return openai.BadRequest("logit_bias", "token_id(s) [%s] in logit_bias contain out-of-vocab token ids. Vocabulary size: %d", strings.Join(ids, ", "), v)
}

// checkTokens rejects token ids outside the vocabulary.
func (s *Server) checkTokens(param string, ids []int32) *openai.Error {
	v := int32(s.tok.VocabSize())
	for _, id := range ids {
		if id < 0 || id >= v {
			return openai.BadRequest(param, "Token id %d is out of vocabulary (size %d).", id, v)
		}
	}
	return nil
}

// candidatePlan says how many candidates a request generates per prompt
// and how they become its n choices.
type candidatePlan struct {
	numGenerated   int  // choices the source produces per prompt: best_of, else n
	numReturned    int  // n
	engineLogprobs *int // top logprobs to ask the engine for; best_of needs at least the sampled token's
	userLogprobs   bool // whether the client asked for logprobs
}

// planCandidates plans n, best_of and use_beam_search. Beam search returns
// n beams of a beam of width max(n, best_of) itself; plain best_of > n
// samples best_of choices and keeps the n best.
func planCandidates(p *openai.Params, logprobs *int) candidatePlan {
	pl := candidatePlan{numGenerated: p.NumChoices(), numReturned: p.NumChoices(), engineLogprobs: logprobs, userLogprobs: logprobs != nil}
	if !p.UseBeamSearch && p.NumCandidates() > p.NumChoices() {
		pl.numGenerated = p.NumCandidates()
		if logprobs == nil {
			zero := 0
			pl.engineLogprobs = &zero
		}
	}
	return pl
}

// pick turns the generated choices into the returned ones.
func (pl candidatePlan) pick(gens []*genRequest, res []*choiceResult) []*choiceResult {
	if pl.numGenerated == pl.numReturned {
		return res
	}
	res = pickBest(gens, res, pl.numReturned)
	if !pl.userLogprobs {
		for _, r := range res {
			r.logprobs = nil
		}
	}
	return res
}

// sourceFor picks the generation source: beam search or plain sampling.
func (s *Server) sourceFor(p *openai.Params, logprobs *int) source {
	if !p.UseBeamSearch {
		return s.startAll
	}
	return s.beamSource(p.NumCandidates(), p.LengthPenaltyOrDefault(), logprobs)
}
