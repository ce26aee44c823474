package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/llamacpp"
	"github.com/tandem-llm/tandem/frontend/metrics"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/wire"
)

// embeddings serves POST /v1/embeddings: one engine request per input,
// each computing its prompt and finishing with the pooled hidden states
// (wire.PoolingParams), answered in OpenAI's shape.
func (s *Server) embeddings(c echo.Context) error {
	var req openai.EmbeddingRequest
	cm, e := s.begin(c, &req, &req.Params)
	if e != nil {
		return writeError(c, e)
	}
	if e := s.pooledOnly(); e != nil {
		return writeError(c, e)
	}
	id := "embd-" + cm.baseID
	vecs, prompts, e := s.embedRequest(c, id, cm, &req)
	if e != nil {
		return writeError(c, e)
	}
	out := openai.NewList[openai.Embedding](id, s.cfg.ServedModelName, nowUnix(), len(vecs))
	for i, v := range vecs {
		enc, err := openai.EncodeEmbedding(v, req.EncodingFormat)
		if err != nil {
			return writeError(c, openai.Internal("embedding %d: %v", i, err))
		}
		out.Data[i] = openai.Embedding{Index: i, Object: openai.ObjectEmbedding, Embedding: enc}
		out.Usage.PromptTokens += len(prompts[i])
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	return respondCollected(c, out, nil)
}

// llamaEmbedding is one item of llama-server's /embedding answer: the
// input's index and its pooled vector, in a list (llama-server lists a
// vector per token when it pools nothing).
type llamaEmbedding struct {
	Index     int         `json:"index"`
	Embedding [][]float32 `json:"embedding"`
}

// llamaEmbeddings serves llama-server's POST /embedding and /embeddings:
// "content" (or "input") embedded as /v1/embeddings does, normalized as
// embd_normalize says (default 2, euclidean), answered as its array of
// {"index", "embedding": [[…]]}.
func (s *Server) llamaEmbeddings(c echo.Context) error {
	var req openai.EmbeddingRequest
	cm, e := s.begin(c, &req, &req.Params)
	if e != nil {
		return writeError(c, e)
	}
	none := s.cfg.Pooling == wire.PoolingNone
	if none { // llama-server: per-token vectors, as computed
		req.EmbdNormalize, req.Dimensions = nil, nil
		f := false
		req.Normalize = &f
	}
	vecs, prompts, e := s.embedRequest(c, "embd-"+cm.baseID, cm, &req)
	if e != nil {
		return writeError(c, e)
	}
	out := make([]llamaEmbedding, len(vecs))
	for i, v := range vecs {
		out[i] = llamaEmbedding{Index: i, Embedding: [][]float32{v}}
		if none { // [P][Dim], row after row
			n := len(prompts[i])
			dim := len(v) / max(n, 1)
			out[i].Embedding = make([][]float32, n)
			for j := range n {
				out[i].Embedding[j] = v[j*dim : (j+1)*dim]
			}
		}
	}
	return c.JSON(http.StatusOK, out)
}

// pooledOnly refuses an embedding on the OpenAI and Ollama routes when
// the engines pool nothing (--pooling none), with llama-server's words.
func (s *Server) pooledOnly() *openai.Error {
	if s.cfg.Pooling == wire.PoolingNone {
		return openai.BadRequest("", "Pooling type 'none' is not OAI compatible. Please use a different pooling type")
	}
	return nil
}

// embedRequest embeds req's inputs: their embeddings and prompts, in
// order.
func (s *Server) embedRequest(c echo.Context, id string, cm common, req *openai.EmbeddingRequest) ([][]float32, [][]int32, *openai.Error) {
	prompts, e := s.poolingPrompts(&req.Params, &req.ChatInput, req.Input)
	if e != nil {
		return nil, nil, e
	}
	pooling := &wire.PoolingParams{PoolingType: s.cfg.Pooling, Normalize: req.EngineNormalizes()}
	if req.Dimensions != nil {
		pooling.Dimensions = *req.Dimensions
	}
	vecs, err := s.embed(c.Request().Context(), id, cm, &req.Params, prompts, pooling)
	if err != nil {
		return nil, nil, engineError(err)
	}
	if p := req.EmbdNormalize; p != nil && *p != 2 {
		for _, v := range vecs {
			openai.NormalizeEmbedding(v, *p)
		}
	}
	return vecs, prompts, nil
}

// poolingPrompts tokenizes a pooling route's input: conversations (ci's
// messages, or input in the chat form) each rendered by the chat template
// (special tokens not added on top unless add_special_tokens says so),
// else input parsed by llama-server's rule (embeddingInputs).
func (s *Server) poolingPrompts(p *openai.Params, ci *openai.ChatInput, input json.RawMessage) ([][]int32, *openai.Error) {
	convs, chat, e := ci.Conversations(input)
	if e != nil {
		return nil, e
	}
	var ps llamacpp.Prompts
	if !chat {
		if err := json.Unmarshal(input, &ps); err != nil {
			return nil, openai.BadRequest("input", "Invalid 'input': %v", err)
		}
		return s.embeddingInputs(p, ps)
	}
	if ps, e = s.conversationPrompts(convs, ci); e != nil {
		return nil, e
	}
	if p.AddSpecialTokens == nil {
		no := false
		p.AddSpecialTokens = &no // the template writes them
	}
	return s.embeddingInputs(p, ps)
}

// conversationPrompts renders each conversation with the chat template
// and ci's options into one prompt's text; the caller tokenizes it
// without special tokens on top (the template writes them).
func (s *Server) conversationPrompts(convs [][]openai.ChatMessage, ci *openai.ChatInput) (llamacpp.Prompts, *openai.Error) {
	ps := make(llamacpp.Prompts, len(convs))
	for i, msgs := range convs {
		addGen := ci.AddGenerationPrompt
		text, e := s.renderChat(&openai.ChatCompletionRequest{Messages: msgs, AddGenerationPrompt: &addGen,
			ContinueFinalMessage: ci.ContinueFinalMessage, ChatTemplateKwargs: ci.ChatTemplateKwargs})
		if e != nil {
			return nil, e
		}
		ps[i] = llamacpp.Prompt{{Text: text, IsText: true}}
	}
	return ps, nil
}

// textPrompts is texts as prompts, one each.
func textPrompts(texts []string) llamacpp.Prompts {
	ps := make(llamacpp.Prompts, len(texts))
	for i, t := range texts {
		ps[i] = llamacpp.Prompt{{Text: t, IsText: true}}
	}
	return ps
}

// embedTexts embeds ps for a route with a request shape of its own
// (Ollama's, Cohere's, TEI's): p's model and options resolved, each
// prompt tokenized and checked (embeddingInputs), accept (when set)
// refusing what the route refuses, then the engines' embeddings under
// id, in order.
func (s *Server) embedTexts(c echo.Context, p *openai.Params, ps llamacpp.Prompts, pooling *wire.PoolingParams, accept func([][]int32) *openai.Error) (vecs [][]float32, prompts [][]int32, id string, e *openai.Error) {
	if e := s.pooledOnly(); e != nil {
		return nil, nil, "", e
	}
	cm, e := s.resolveCommon(c, p)
	if e != nil {
		return nil, nil, "", e
	}
	if prompts, e = s.embeddingInputs(p, ps); e != nil {
		return nil, nil, "", e
	}
	if accept != nil {
		if e := accept(prompts); e != nil {
			return nil, nil, "", e
		}
	}
	id = "embd-" + cm.baseID
	vecs, err := s.embed(c.Request().Context(), id, cm, p, prompts, pooling)
	if err != nil {
		return nil, nil, "", engineError(err)
	}
	return vecs, prompts, id, nil
}

// embeddingInputs tokenizes inputs, parsed by llama-server's rule (a
// string, strings, token ids, lists of token ids, arrays mixing ids and
// strings): their text gets special tokens unless add_special_tokens is
// false (a text input, or a mixed one that starts with text), and each is
// truncated (truncate_prompt_tokens, -1 = max_model_len). An input with
// no token, or longer than max_model_len, is an error.
func (s *Server) embeddingInputs(p *openai.Params, ps llamacpp.Prompts) ([][]int32, *openai.Error) {
	switch n := len(ps); {
	case n == 0:
		return nil, openai.BadRequest("input", "'input' is an empty array.")
	case n > openai.MaxPrompts:
		return nil, openai.BadRequest("input", "'input' holds %d inputs; at most %d per request.", n, openai.MaxPrompts)
	}
	if p.TruncatePromptTokens != nil && *p.TruncatePromptTokens == -1 {
		k := s.cfg.MaxModelLen
		p.TruncatePromptTokens = &k
	}
	add := p.AddSpecial(true)
	prompts := make([][]int32, len(ps))
	for i, in := range ps {
		var ids []int32
		for j, part := range in {
			if part.IsText {
				ids = append(ids, s.tok.Encode(part.Text, add && j == 0)...)
			} else {
				ids = append(ids, part.Token)
			}
		}
		if e := s.checkTokens("input", ids); e != nil {
			return nil, e
		}
		ids = s.truncatePrompt(p, ids)
		switch {
		case len(ids) == 0:
			return nil, openai.BadRequest("input", "input %d has no token to embed", i)
		case len(ids) > s.cfg.MaxModelLen:
			e := openai.ContextLengthExceeded(len(ids), s.cfg.MaxModelLen)
			param := "input"
			e.Param = &param
			return nil, e
		}
		prompts[i] = ids
	}
	return prompts, nil
}

// embed submits one embedding request per prompt, at once, and returns
// their embeddings in order. The first failure aborts the rest.
func (s *Server) embed(ctx context.Context, id string, cm common, p *openai.Params, prompts [][]int32, pooling *wire.PoolingParams) ([][]float32, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		i   int
		v   []float32
		err error
	}
	results := make(chan result, len(prompts))
	for i, prompt := range prompts {
		w := s.startWaiting()
		st, err := s.eng.Submit(ctx, &wire.EngineCoreRequest{
			RequestID:        fmt.Sprintf("%s-%d-%s", id, i, randomHex(4)),
			PromptTokenIDs:   prompt,
			SamplingParams:   wire.DefaultSamplingParams(),
			ArrivalTime:      float64(time.Now().UnixNano()) / 1e9,
			CacheSalt:        p.CacheSalt,
			DataParallelRank: cm.rank,
			Priority:         p.Priority,
			ExternalReqID:    fmt.Sprintf("%s-%d", id, i),
			SessionID:        cm.sessionID,
			FlowID:           flowOf(ctx),
			Pooling:          pooling,
			LoRA:             cm.lora,
		})
		if err != nil {
			w.finish()
			return nil, err // cancel aborts those already submitted
		}
		s.metrics.ObserveRouted(engineOf(st))
		go func() {
			defer w.finish()
			start := time.Now()
			out, err := pooled(ctx, st)
			if err == nil { // vLLM counts a pooling request's prompt and success as a generation's
				s.metrics.ObserveFinish(metrics.Finished{Engine: engineOf(st), Reason: "stop", E2E: time.Since(start),
					NumPrompt: len(prompt), NumCached: out.NumCachedTokens, Timing: timingOf(st)})
			}
			results <- result{i, out.PoolingOutput, err}
		}()
	}
	vecs := make([][]float32, len(prompts))
	for range prompts {
		r := <-results
		if r.err != nil {
			return nil, r.err
		}
		vecs[r.i] = r.v
	}
	return vecs, nil
}

// pooled reads an embedding request's stream to its finishing output,
// which holds the embedding.
func pooled(ctx context.Context, st Stream) (wire.EngineCoreOutput, error) {
	defer st.Close()
	for {
		out, err := st.Next(ctx)
		switch {
		case errors.Is(err, io.EOF):
			return out, fmt.Errorf("engine stream ended without an embedding")
		case err != nil:
			return out, err
		case out.FinishReason == wire.FinishError:
			msg, _ := out.StopReason.(string)
			return out, fmt.Errorf("%w: %s", errEngineRejected, msg)
		case out.FinishReason == wire.FinishNone:
			continue
		case out.PoolingOutput == nil:
			return out, fmt.Errorf("engine finished an embedding request (%s) without an embedding", out.FinishReason)
		}
		return out, nil
	}
}
