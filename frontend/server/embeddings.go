package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/wire"
)

// embeddings serves POST /v1/embeddings (and llama-server's
// /embeddings): one engine request per input, each computing its prompt
// and finishing with the pooled hidden states (wire.PoolingParams).
func (s *Server) embeddings(c echo.Context) error {
	var req openai.EmbeddingRequest
	cm, e := s.begin(c, &req, &req.Params)
	if e != nil {
		return writeError(c, e)
	}
	prompts, e := s.embeddingInputs(&req)
	if e != nil {
		return writeError(c, e)
	}
	pooling := &wire.PoolingParams{Normalize: req.NormalizeOrDefault()}
	if req.Dimensions != nil {
		pooling.Dimensions = *req.Dimensions
	}
	id := "embd-" + cm.baseID
	vecs, err := s.embed(c.Request().Context(), id, cm, &req.Params, prompts, pooling)
	if err != nil {
		return writeError(c, engineError(err))
	}
	out := openai.EmbeddingResponse{ID: id, Object: openai.ObjectList, Created: nowUnix(), Model: s.cfg.ServedModelName,
		Data: make([]openai.Embedding, len(vecs))}
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

// embeddingInputs tokenizes req's inputs (special tokens added unless
// add_special_tokens is false) and truncates them (truncate_prompt_tokens,
// -1 = max_model_len); an input longer than max_model_len is an error.
func (s *Server) embeddingInputs(req *openai.EmbeddingRequest) ([][]int32, *openai.Error) {
	p := &req.Params
	if p.TruncatePromptTokens != nil && *p.TruncatePromptTokens == -1 {
		k := s.cfg.MaxModelLen
		p.TruncatePromptTokens = &k
	}
	var prompts [][]int32
	switch req.Input.Kind {
	case openai.PromptText, openai.PromptTexts:
		for _, t := range req.Input.Texts {
			prompts = append(prompts, s.truncatePrompt(p, s.tok.Encode(t, p.AddSpecial(true))))
		}
	default:
		for _, ids := range req.Input.Tokens {
			if e := s.checkTokens("input", ids); e != nil {
				return nil, e
			}
			prompts = append(prompts, s.truncatePrompt(p, ids))
		}
	}
	for i, ids := range prompts {
		switch {
		case len(ids) == 0:
			return nil, openai.BadRequest("input", "input %d is empty after tokenization", i)
		case len(ids) > s.cfg.MaxModelLen:
			e := openai.ContextLengthExceeded(len(ids), s.cfg.MaxModelLen)
			param := "input"
			e.Param = &param
			return nil, e
		}
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
		})
		if err != nil {
			w.finish()
			return nil, err // cancel aborts those already submitted
		}
		s.metrics.ObserveRouted(engineOf(st))
		go func() {
			defer w.finish()
			v, err := pooled(ctx, st)
			results <- result{i, v, err}
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

// pooled reads an embedding request's stream to its finishing output.
func pooled(ctx context.Context, st Stream) ([]float32, error) {
	defer st.Close()
	for {
		out, err := st.Next(ctx)
		switch {
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("engine stream ended without an embedding")
		case err != nil:
			return nil, err
		case out.FinishReason == wire.FinishError:
			msg, _ := out.StopReason.(string)
			return nil, fmt.Errorf("%w: %s", errEngineRejected, msg)
		case out.FinishReason == wire.FinishNone:
			continue
		case out.PoolingOutput == nil:
			return nil, fmt.Errorf("engine finished an embedding request (%s) without an embedding", out.FinishReason)
		}
		return out.PoolingOutput, nil
	}
}
