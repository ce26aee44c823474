package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tandem-llm/tandem/frontend/detok"
	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/session"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// genRequest is one prompt to generate n choices for.
type genRequest struct {
	internalID  string // parent internal id; children are "i_<internalID>" when n > 1
	externalID  string // user-visible id
	prompt      []int32
	params      wire.SamplingParams
	n           int
	firstIndex  int // choice index of the first child (prompt index · n)
	sessionID   string
	source      session.Source // where sessionID came from, for metrics
	cacheSalt   string
	priority    int
	rank        *int
	stops       []string
	includeStop bool
	skipSpecial bool
	slot        *slotPin // id_slot's: the first choice's tokens are recorded there (slotsave.go)
	lora        []wire.LoRARequest
}

// newGen is the one-choice engine request id of an HTTP request (cm, its
// body's params p): its prompt and sampling parameters, and p's session,
// rank, cache salt, priority and stop strings. Callers set the rest (n,
// include_stop_str_in_output, an id_slot's slot).
func (cm common) newGen(id string, prompt []int32, sp wire.SamplingParams, p *openai.Params, skipSpecial bool) *genRequest {
	return &genRequest{
		internalID:  id + "-" + randomHex(4),
		externalID:  id,
		prompt:      prompt,
		params:      sp,
		n:           1,
		sessionID:   cm.sessionID,
		source:      cm.source,
		cacheSalt:   p.CacheSalt,
		priority:    p.Priority,
		rank:        cm.rank,
		stops:       p.Stop,
		skipSpecial: skipSpecial,
		lora:        cm.lora,
	}
}

// choiceEvent is one child's news, already detokenized and stop-checked.
type choiceEvent struct {
	index      int     // choice index
	text       string  // new text to emit
	tokenIDs   []int32 // tokens this event stands for
	logprobs   *wire.Logprobs
	finish     string              // "", "stop", "length", "abort", "error"
	stopReason any                 // stop string, stop token id, or nil
	numCached  int                 // prompt tokens served from cache
	err        error               // engine failure; ends the request
	timing     engineclient.Timing // the engine's timestamps, on the finishing event
	// promptLogprobs are the prompt's logprobs (prompt_logprobs), on the
	// first event of a request that asked for them.
	promptLogprobs *wire.Logprobs
	// progress, on an event without tokens of a request with
	// ReturnProgress, is the prompt tokens the engine computed so far.
	progress int
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// start submits every child of g and streams their events into events.
// It returns a cancel func that aborts all children. On a submit error the
// already-started children are aborted.
func (s *Server) start(ctx context.Context, g *genRequest, events chan<- choiceEvent) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	var streams []Stream
	var waits []*waitingToken
	abort := func() {
		for i, st := range streams {
			st.Close()
			waits[i].finish()
		}
		cancel()
	}
	parent := &wire.EngineCoreRequest{
		RequestID:        g.internalID,
		PromptTokenIDs:   g.prompt,
		SamplingParams:   g.params,
		ArrivalTime:      float64(time.Now().UnixNano()) / 1e9,
		CacheSalt:        g.cacheSalt,
		DataParallelRank: g.rank,
		Priority:         g.priority,
		ExternalReqID:    g.externalID,
		SessionID:        g.sessionID,
		FlowID:           flowOf(ctx),
		LoRA:             g.lora,
	}
	parent.SamplingParams.N = g.n
	if parent.SamplingParams.Seed == nil && s.cfg.DefaultSeed != nil { // --seed: the seed of requests that set none
		seed := *s.cfg.DefaultSeed
		parent.SamplingParams.Seed = &seed
	}
	for _, req := range engineclient.Children(parent) { // the Go client's parallel sampling
		w := s.startWaiting()
		w.lora = s.metrics.LoRARequest(loraNames(g.lora))
		st, err := s.eng.Submit(ctx, req)
		if err != nil {
			w.lora.Done()
			w.finish()
			abort()
			return nil, err
		}
		streams, waits = append(streams, st), append(waits, w)
		s.metrics.ObserveRouted(engineOf(st))
	}
	ps := &parentStats{left: len(streams)}
	for i, st := range streams {
		go s.follow(ctx, g, g.firstIndex+i, st, waits[i], ps, events)
	}
	return cancel, nil
}

// follow reads one child's outputs until it finishes, detokenizing and
// applying stop strings. A matched stop string aborts the child in the
// engine (closing its stream).
func (s *Server) follow(ctx context.Context, g *genRequest, index int, st Stream, w *waitingToken, ps *parentStats, events chan<- choiceEvent) {
	defer st.Close()
	defer w.lora.Done()
	defer w.finish()
	seq := detok.NewSequence(s.tok, detok.SequenceConfig{Stops: g.stops, IncludeStop: g.includeStop, SkipSpecial: g.skipSpecial, MinTokens: g.params.MinTokens})
	send := func(ev choiceEvent) bool {
		select {
		case events <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	start := time.Now()
	var last time.Time    // when the previous token arrived
	numCached := 0        // prompt tokens the engine's prefix cache served
	var generated []int32 // with a slot, the first choice's tokens
	for {
		out, err := st.Next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("engine stream ended without a finish reason")
			}
			if ctx.Err() == nil {
				send(choiceEvent{index: index, err: err})
			}
			return
		}
		ev := choiceEvent{index: index, tokenIDs: out.NewTokenIDs, logprobs: out.NewLogprobs, promptLogprobs: out.NewPromptLogprobs, numCached: out.NumCachedTokens,
			progress: out.PromptProgress}
		if len(out.NewTokenIDs) > 0 {
			w.finish()
			t, engine := time.Now(), engineOf(st)
			s.metrics.ObserveTokens(engine, len(out.NewTokenIDs))
			if last.IsZero() {
				numCached = out.NumCachedTokens
				s.metrics.ObserveFirstToken(engine, t.Sub(start), len(g.prompt), numCached)
				if index == g.firstIndex {
					s.metrics.ObserveSession(g.source.String(), len(g.prompt), out.NumCachedTokens)
				}
			} else {
				s.metrics.ObserveInterToken(engine, t.Sub(last))
			}
			last = t
		}
		if out.FinishReason == wire.FinishError {
			msg, _ := out.StopReason.(string)
			send(choiceEvent{index: index, err: fmt.Errorf("%w: %s", errEngineRejected, msg)})
			return
		}
		finished := out.FinishReason != wire.FinishNone
		emit, stopped, which := seq.Push(out.NewTokenIDs, finished, out.FinishReason == wire.FinishStop)
		switch {
		case stopped:
			ev.finish, ev.stopReason = "stop", which
		case finished:
			ev.finish, ev.stopReason = out.FinishReason.String(), out.StopReason
		}
		ev.text = emit
		if g.slot != nil && index == 0 {
			generated = append(generated, out.NewTokenIDs...)
		}
		if ev.finish != "" {
			ev.timing = timingOf(st)
			s.observeFinish(g, st, ps, start, seq.NumTokens(), numCached, ev.finish)
			if g.slot != nil && index == 0 && (ev.finish == "stop" || ev.finish == "length") {
				s.recordSlot(g.slot, g.prompt, generated)
			}
		}
		if !send(ev) || ev.finish != "" {
			return
		}
	}
}

var errEngineRejected = errors.New("the engine rejected the request")

// tokenText is the text of one token for logprobs.
func tokenText(tok tokenizer.Tokenizer, id int32) (string, []int) {
	b, ok := tok.TokenBytes(id)
	if !ok {
		return "", nil
	}
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	return string(b), ints
}
