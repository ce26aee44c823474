package server

import (
	"encoding/json"
	"math"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/decisions"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/wire"
)

// classify serves vLLM's POST /classify: each input through the model's
// classification head, its class probabilities and most probable label.
func (s *Server) classify(c echo.Context) error {
	var req openai.ClassificationRequest
	cm, e := s.begin(c, &req, &req.Params)
	if e != nil {
		return writeError(c, e)
	}
	id := "classify-" + cm.baseID
	probs, prompts, e := s.classes(c, id, cm, &req.Params, &req.ChatInput, req.Input, req.Activate())
	if e != nil {
		return writeError(c, e)
	}
	out := openai.NewList[openai.ClassificationData](id, s.cfg.ServedModelName, nowUnix(), len(probs))
	for i, p := range probs {
		best := 0
		for k, x := range p {
			if x > p[best] {
				best = k
			}
		}
		out.Data[i] = openai.ClassificationData{Index: i, Label: s.cfg.ClassifierLabels[best], Probs: p, NumClasses: len(p)}
		out.Usage.PromptTokens += len(prompts[i])
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	return respondCollected(c, out, nil)
}

// classes runs input (embeddings' forms) through the classification
// head: per input, its classes' probabilities (sigmoid for one class,
// softmax for more; the raw logits without activate) and its prompt.
func (s *Server) classes(c echo.Context, id string, cm common, p *openai.Params, ci *openai.ChatInput, input json.RawMessage, activate bool) ([][]float64, [][]int32, *openai.Error) {
	if len(s.cfg.ClassifierLabels) == 0 {
		return nil, nil, openai.BadRequest("", "The model %s has no classification head (cls.output.weight): it can embed (/v1/embeddings) but not classify.", s.cfg.ServedModelName)
	}
	prompts, e := s.poolingPrompts(p, ci, input)
	if e != nil {
		return nil, nil, e
	}
	logits, err := s.embed(c.Request().Context(), id, cm, p, prompts, &wire.PoolingParams{PoolingType: wire.PoolingRank})
	if err != nil {
		return nil, nil, engineError(err)
	}
	out := make([][]float64, len(logits))
	for i, l := range logits {
		out[i] = activation(l, activate)
	}
	return out, prompts, nil
}

// activation is vLLM's default classification activation: the sigmoid
// of a one-class head's logit, the softmax of more; the logits as they
// are without activate.
func activation(logits []float32, activate bool) []float64 {
	out := make([]float64, len(logits))
	for k, x := range logits {
		out[k] = float64(x)
	}
	switch {
	case !activate:
		return out
	case len(out) == 1:
		out[0] = 1 / (1 + math.Exp(-out[0]))
		return out
	}
	return decisions.Softmax(out)
}

// pooling serves vLLM's POST /pooling: each input's pooled output for
// the task — embed (the embedding, as /v1/embeddings), classify or score
// (the classification head's probabilities, as /classify); by default
// classify for a model with a head, else embed.
func (s *Server) pooling(c echo.Context) error {
	var req openai.PoolingRequest
	cm, e := s.begin(c, &req, &req.Params)
	if e != nil {
		return writeError(c, e)
	}
	id := "pool-" + cm.baseID
	task := req.Task
	if task == "" {
		task = "embed"
		if len(s.cfg.ClassifierLabels) > 0 {
			task = "classify"
		}
	}
	out := openai.NewList[openai.PoolingData](id, s.cfg.ServedModelName, nowUnix(), 0)
	var prompts [][]int32
	if task == "embed" {
		if e := s.pooledOnly(); e != nil {
			return writeError(c, e)
		}
		var vecs [][]float32
		if vecs, prompts, e = s.embedRequest(c, id, cm, &req.EmbeddingRequest); e != nil {
			return writeError(c, e)
		}
		for i, v := range vecs {
			enc, err := openai.EncodeEmbedding(v, req.EncodingFormat)
			if err != nil {
				return writeError(c, openai.Internal("pooling %d: %v", i, err))
			}
			out.Data = append(out.Data, openai.PoolingData{Index: i, Object: "pooling", Data: enc})
		}
	} else {
		var probs [][]float64
		if probs, prompts, e = s.classes(c, id, cm, &req.Params, &req.ChatInput, req.Input, req.Activate()); e != nil {
			return writeError(c, e)
		}
		for i, p := range probs {
			out.Data = append(out.Data, openai.PoolingData{Index: i, Object: "pooling", Data: p})
		}
	}
	for _, p := range prompts {
		out.Usage.PromptTokens += len(p)
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	return respondCollected(c, out, nil)
}
