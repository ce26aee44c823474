package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/tandem-llm/tandem/frontend/beam"
	"github.com/tandem-llm/tandem/frontend/detok"
	"github.com/tandem-llm/tandem/frontend/metrics"
	"github.com/tandem-llm/tandem/wire"
)

// beamSource returns a source that runs beam search of the given width for
// each prompt and emits its g.n best beams as finished choices. Every
// sub-request carries the request's session id, cache salt, priority and
// data-parallel rank. logprobs, when set, is the number of alternatives
// reported per token.
func (s *Server) beamSource(width int, lengthPenalty float64, logprobs *int) source {
	return func(ctx context.Context, gens []*genRequest) (<-chan choiceEvent, func(), error) {
		if e := s.admit(); e != nil {
			return nil, nil, e
		}
		ctx, cancel := context.WithCancel(ctx)
		events := make(chan choiceEvent, numChoices(gens))
		for _, g := range gens {
			go s.runBeam(ctx, g, width, lengthPenalty, logprobs, events)
		}
		return events, cancel, nil
	}
}

// runBeam searches one prompt and sends one finishing event per returned
// beam, or one error event.
func (s *Server) runBeam(ctx context.Context, g *genRequest, width int, lengthPenalty float64, logprobs *int, events chan<- choiceEvent) {
	start := time.Now()
	p := beam.Params{Width: width, MaxTokens: g.params.MaxTokens, LengthPenalty: lengthPenalty, EOS: s.tok.EOS(), IgnoreEOS: g.params.IgnoreEOS}
	step := 0
	expand := func(ctx context.Context, seqs [][]int32) ([][]beam.Candidate, error) {
		step++
		return s.expandBeams(ctx, g, step, 2*width, seqs)
	}
	beams, err := beam.Search(ctx, g.prompt, p, expand)
	send := func(ev choiceEvent) {
		select {
		case events <- ev:
		case <-ctx.Done():
		}
	}
	if err != nil {
		send(choiceEvent{index: g.firstIndex, err: err})
		return
	}
	for i := range g.n {
		if i >= len(beams) {
			// Fewer beams than choices (a tiny vocabulary): an empty choice.
			send(choiceEvent{index: g.firstIndex + i, finish: "length"})
			continue
		}
		b := beams[i]
		ids := b.Tokens
		if b.Stopped {
			ids = append(slices.Clip(ids), b.StopToken)
		}
		dt := detok.New(s.tok, g.skipSpecial)
		text := dt.Add(b.Tokens)
		if b.Stopped && g.includeStop {
			text += dt.Add([]int32{b.StopToken})
		}
		text += dt.Flush()
		ev := choiceEvent{index: g.firstIndex + i, text: text, tokenIDs: ids, finish: "length"}
		if b.Stopped {
			ev.finish = "stop"
		}
		if logprobs != nil {
			ev.logprobs = beamLogprobs(b, *logprobs)
		}
		// A beam's tokens come from many sub-requests, on any engine.
		s.metrics.ObserveFinish(metrics.Finished{Engine: -1, Reason: ev.finish, E2E: time.Since(start),
			NumPrompt: len(g.prompt), NumGenerated: len(ids), MaxTokens: g.params.MaxTokens})
		send(ev)
	}
}

// beamLogprobs reports a beam's tokens with up to k alternatives each, in
// the engine's layout (column 0 the chosen token).
func beamLogprobs(b beam.Beam, k int) *wire.Logprobs {
	lp := &wire.Logprobs{}
	for i, tok := range b.Tokens {
		ids, lps := []int32{tok}, []float64{b.Logprobs[i]}
		for _, c := range b.Steps[i][:min(k, len(b.Steps[i]))] {
			ids, lps = append(ids, c.Token), append(lps, c.Logprob)
		}
		lp.TokenIDs, lp.Logprobs = append(lp.TokenIDs, ids), append(lp.Logprobs, lps)
	}
	return lp
}

// expandBeams submits one max_tokens=1 sub-request per sequence, all at
// once, and returns each one's top k next tokens.
func (s *Server) expandBeams(ctx context.Context, g *genRequest, step, k int, seqs [][]int32) ([][]beam.Candidate, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sp := wire.DefaultSamplingParams()
	sp.MaxTokens, sp.Temperature, sp.Logprobs, sp.IgnoreEOS = 1, 0, &k, true
	// Under a constraint each expansion continues its beam's answer (the
	// constraint takes the beam's tokens first) and ranks only the tokens
	// the constraint allows next.
	so := g.params.StructuredOutputs
	sp.StructuredOutputs, sp.MaskedLogprobs = so, so != nil
	streams := make([]Stream, 0, len(seqs))
	waits := make([]*waitingToken, 0, len(seqs))
	defer func() {
		for i, st := range streams {
			st.Close()
			waits[i].finish()
		}
	}()
	for i, seq := range seqs {
		sp := sp
		if so != nil {
			sp.ConstraintPrefix = len(seq) - len(g.prompt)
		}
		req := &wire.EngineCoreRequest{
			RequestID:        fmt.Sprintf("%s-%d-beam-%d", g.internalID, step, i),
			PromptTokenIDs:   seq,
			SamplingParams:   sp,
			ArrivalTime:      float64(time.Now().UnixNano()) / 1e9,
			CacheSalt:        g.cacheSalt,
			DataParallelRank: g.rank,
			Priority:         g.priority,
			ExternalReqID:    g.externalID,
			SessionID:        g.sessionID,
			FlowID:           flowOf(ctx),
			LoRA:             g.lora,
		}
		w := s.startWaiting()
		st, err := s.eng.Submit(ctx, req)
		if err != nil {
			w.finish()
			return nil, err
		}
		streams, waits = append(streams, st), append(waits, w)
	}
	out := make([][]beam.Candidate, len(seqs))
	errs := make([]error, len(seqs))
	var wg sync.WaitGroup
	for i, st := range streams {
		wg.Go(func() { out[i], errs[i] = nextCandidates(ctx, st, k) })
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// nextCandidates reads a one-token sub-request to its end and returns the
// top k candidates of its logprobs.
func nextCandidates(ctx context.Context, st Stream, k int) ([]beam.Candidate, error) {
	var cands []beam.Candidate
	for {
		out, err := st.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if out.FinishReason == wire.FinishError {
			msg, _ := out.StopReason.(string)
			return nil, fmt.Errorf("%w: %s", errEngineRejected, msg)
		}
		if lp := out.NewLogprobs; cands == nil && lp != nil && len(lp.TokenIDs) > 0 {
			// A constraint's masked logprobs give disallowed tokens -Inf.
			cands = slices.DeleteFunc(beam.Top(lp.TokenIDs[0], lp.Logprobs[0], k), func(c beam.Candidate) bool { return math.IsInf(c.Logprob, -1) })
		}
		if out.FinishReason != wire.FinishNone {
			break
		}
	}
	if cands == nil {
		return nil, errors.New("beam search: the engine returned no logprobs for a step")
	}
	return cands, nil
}
