package llm

import (
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// Completion is one sample's whole answer.
type Completion struct {
	Index      int
	Text       string
	TokenIDs   []int32
	Logprobs   []float64 // per token, the sampled token's logprob (only when asked for, or for BestOf)
	Finish     string    // "stop", "length" or "abort"
	StopReason any
	// PromptLogprobs (with SamplingParams.PromptLogprobs) are the prompt's:
	// a row per position 1..P-1, the prompt token first, then the top k.
	PromptLogprobs *wire.Logprobs
}

// MeanLogprob is the mean logprob per token, -Inf without tokens or
// logprobs; BestOf keeps the samples with the highest.
func (c *Completion) MeanLogprob() float64 {
	if len(c.Logprobs) == 0 {
		return math.Inf(-1)
	}
	var sum float64
	for _, l := range c.Logprobs {
		sum += l
	}
	return sum / float64(len(c.Logprobs))
}

// Result is one request's answer: N completions, best first with BestOf,
// else by index.
type Result struct {
	ID              string
	PromptTokens    int
	NumCachedTokens int
	Completions     []Completion
}

// Complete generates prompt's answer and waits for it.
func (l *LLM) Complete(ctx context.Context, prompt string, p Params, opts ...Option) (*Result, error) {
	return l.CompleteTokens(ctx, l.Encode(prompt), p, opts...)
}

// CompleteChat renders msgs with the chat template and waits for the
// answer.
func (l *LLM) CompleteChat(ctx context.Context, msgs []tokenizer.Message, p Params, opts ...Option) (*Result, error) {
	prompt, err := l.RenderChat(msgs, nil)
	if err != nil {
		return nil, err
	}
	return l.CompleteTokens(ctx, prompt, p, opts...)
}

// CompleteTokens is Complete for a tokenized prompt. With BestOf > N it
// samples BestOf (asking the engine for the sampled tokens' logprobs) and
// keeps the N with the highest mean logprob, as OpenAI's best_of does.
func (l *LLM) CompleteTokens(ctx context.Context, prompt []int32, p Params, opts ...Option) (*Result, error) {
	n := max(p.N, 1)
	wantLogprobs := p.SamplingParams.Logprobs != nil
	if p.BestOf > n {
		p.N = p.BestOf
		if p.SamplingParams.Logprobs == nil {
			zero := 0
			p.SamplingParams.Logprobs = &zero
		}
	}
	st, err := l.GenerateTokens(ctx, prompt, p, opts...)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	res := &Result{ID: st.ID, PromptTokens: st.PromptTokens, Completions: make([]Completion, len(st.seqs))}
	texts := make([]strings.Builder, len(st.seqs))
	for {
		d, err := st.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		c := &res.Completions[d.Index]
		c.Index = d.Index
		texts[d.Index].WriteString(d.Text)
		c.TokenIDs = append(c.TokenIDs, d.TokenIDs...)
		if d.Logprobs != nil {
			for _, row := range d.Logprobs.Logprobs {
				c.Logprobs = append(c.Logprobs, row[0])
			}
		}
		if d.Finish != "" {
			c.Finish, c.StopReason = d.Finish, d.StopReason
		}
		if d.PromptLogprobs != nil {
			c.PromptLogprobs = d.PromptLogprobs
		}
		res.NumCachedTokens = max(res.NumCachedTokens, d.NumCachedTokens)
	}
	for i := range res.Completions {
		res.Completions[i].Text = texts[i].String()
	}
	if len(res.Completions) > n {
		res.Completions = engineclient.Best(res.Completions, n, (*Completion).MeanLogprob)
	}
	if !wantLogprobs {
		for i := range res.Completions {
			res.Completions[i].Logprobs = nil
		}
	}
	return res, nil
}

// Batch generates every prompt's answer at once, like vLLM's
// LLM.generate, and returns them in the prompts' order. The engines
// schedule them together (at most maxInFlight requests are in flight);
// the first failure stops the rest and is returned.
func (l *LLM) Batch(ctx context.Context, prompts []string, p Params, opts ...Option) ([]*Result, error) {
	toks := make([][]int32, len(prompts))
	for i, s := range prompts {
		toks[i] = l.Encode(s)
	}
	return l.BatchTokens(ctx, toks, p, opts...)
}

// BatchChat is Batch for conversations, each rendered with the chat
// template (vLLM's LLM.chat).
func (l *LLM) BatchChat(ctx context.Context, convs [][]tokenizer.Message, p Params, opts ...Option) ([]*Result, error) {
	toks := make([][]int32, len(convs))
	for i, msgs := range convs {
		t, err := l.RenderChat(msgs, nil)
		if err != nil {
			return nil, err
		}
		toks[i] = t
	}
	return l.BatchTokens(ctx, toks, p, opts...)
}

// maxInFlight bounds a batch's requests in flight (the engines queue
// what they cannot run yet; this bounds the client's memory).
const maxInFlight = 1024

// BatchTokens is Batch for tokenized prompts.
func (l *LLM) BatchTokens(ctx context.Context, prompts [][]int32, p Params, opts ...Option) ([]*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]*Result, len(prompts))
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	sem := make(chan struct{}, maxInFlight)
	for i, prompt := range prompts {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := l.CompleteTokens(ctx, prompt, p, opts...)
			if err != nil {
				once.Do(func() { first = err; cancel() })
				return
			}
			out[i] = r
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
