package llm

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tandem-llm/tandem/frontend/detok"
	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// Delta is one sample's news: the text generated since the last delta.
type Delta struct {
	Index           int            // the sample, 0 ≤ Index < N
	Text            string         // new text ("" while a stop string or UTF-8 sequence may still complete)
	TokenIDs        []int32        // the tokens it stands for
	Logprobs        *wire.Logprobs // with Params.Logprobs: per token, the sampled one and the top alternatives
	Finish          string         // "" until the sample ends, then "stop", "length" or "abort"
	StopReason      any            // with Finish "stop": the stop string, the stop token id, or nil for EOS
	NumCachedTokens int            // prompt tokens served from the KV cache
	// PromptLogprobs, with Params.PromptLogprobs, on a sample's first
	// delta: a row per prompt position 1..P-1, the prompt token first.
	PromptLogprobs *wire.Logprobs
}

// Stream is one request's samples in flight. Read it with Next until
// io.EOF, or Close it.
type Stream struct {
	ID           string // the request id (samples are "<i>_<ID>" in the engine when N > 1)
	PromptTokens int

	gen   *engineclient.Generation
	seqs  []*detok.Sequence
	ended []bool
}

// Generate starts prompt (tokenized as the completions API does) and
// streams its text.
func (l *LLM) Generate(ctx context.Context, prompt string, p Params, opts ...Option) (*Stream, error) {
	return l.GenerateTokens(ctx, l.Encode(prompt), p, opts...)
}

// Chat renders msgs with the model's chat template and streams the
// assistant's answer.
func (l *LLM) Chat(ctx context.Context, msgs []tokenizer.Message, p Params, opts ...Option) (*Stream, error) {
	prompt, err := l.RenderChat(msgs, nil)
	if err != nil {
		return nil, err
	}
	return l.GenerateTokens(ctx, prompt, p, opts...)
}

// GenerateTokens streams the text of a tokenized prompt. MaxTokens ≤ 0
// means up to the engine's context length.
func (l *LLM) GenerateTokens(ctx context.Context, prompt []int32, p Params, opts ...Option) (*Stream, error) {
	sp := l.sampling(p, len(prompt))
	id := newRequestID()
	gen, err := l.client.Generate(ctx, prompt, sp, id, opts...)
	if err != nil {
		return nil, fmt.Errorf("llm: %w", err)
	}
	s := &Stream{ID: id, PromptTokens: len(prompt), gen: gen, ended: make([]bool, len(gen.Children))}
	for range gen.Children {
		s.seqs = append(s.seqs, detok.NewSequence(l.tok, detok.SequenceConfig{
			Stops: p.Stop, IncludeStop: p.IncludeStop, SkipSpecial: !p.KeepSpecial, MinTokens: sp.MinTokens,
		}))
	}
	return s, nil
}

// sampling is p's engine parameters for a prompt of n tokens.
func (l *LLM) sampling(p Params, n int) wire.SamplingParams {
	sp := p.SamplingParams
	sp.N = max(sp.N, 1)
	if sp.MaxTokens <= 0 {
		sp.MaxTokens = 1
		if info, ok := l.client.Info(); ok && info.MaxModelLen > n {
			sp.MaxTokens = info.MaxModelLen - n
		}
	}
	return sp
}

// Next returns the next delta of any sample; io.EOF once every sample
// ended. A stop string ends its sample (aborted in the engine) while the
// others go on. An engine's refusal wraps ErrRejected.
func (s *Stream) Next(ctx context.Context) (Delta, error) {
	for {
		o, err := s.gen.Next(ctx)
		if errors.Is(err, io.EOF) {
			return Delta{}, io.EOF
		}
		if err != nil {
			return Delta{}, fmt.Errorf("llm: %w", err)
		}
		if s.ended[o.Index] {
			continue // read before its Stop took effect
		}
		if o.FinishReason == wire.FinishError {
			s.gen.Close()
			msg, _ := o.StopReason.(string)
			return Delta{}, fmt.Errorf("%w: %s", ErrRejected, msg)
		}
		finished := o.FinishReason != wire.FinishNone
		text, stopped, which := s.seqs[o.Index].Push(o.NewTokenIDs, finished, o.FinishReason == wire.FinishStop)
		d := Delta{Index: o.Index, Text: text, TokenIDs: o.NewTokenIDs, Logprobs: o.NewLogprobs, NumCachedTokens: o.NumCachedTokens,
			PromptLogprobs: o.NewPromptLogprobs}
		switch {
		case stopped:
			s.ended[o.Index] = true
			s.gen.Stop(o.Index)
			d.Finish, d.StopReason = "stop", which
		case finished:
			s.ended[o.Index] = true
			d.Finish, d.StopReason = o.FinishReason.String(), o.StopReason
		}
		return d, nil
	}
}

// Close stops every sample that has not ended.
func (s *Stream) Close() { s.gen.Close() }
