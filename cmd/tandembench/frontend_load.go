package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tandem-llm/tandem/wire"
)

// feResult is what one load run streamed.
type feResult struct {
	tokens int
	ttft   []time.Duration
	ttfb   []time.Duration // HTTP only: to the response's headers (sent with the role chunk, before any token)
	twin   []time.Duration // paired runs only: twin[i] is the TTFT of ttft[i]'s direct twin
}

// feSample is one request's figures.
type feSample struct {
	tokens     int
	ttft, ttfb time.Duration
	twin       time.Duration // the direct twin's TTFT (paired runs), else 0
}

// measure is one stream count: a warm-up round over HTTP, perStream
// requests per stream over HTTP (timed, CPU and allocations counted),
// then a warm-up round and as many requests straight to the engine.
func (s *feStack) measure(ctx context.Context, prompts []fePrompt, perStream, gen int) (FrontendRow, error) {
	row := FrontendRow{Streams: len(prompts), Requests: len(prompts) * perStream}
	if _, err := s.runHTTP(ctx, prompts, 1, gen); err != nil {
		return row, err
	}
	fe0, err1 := procCPU(s.frontend.Process.Pid)
	eng0, err2 := procCPU(s.engine.Process.Pid)
	c0, err3 := s.counters(ctx)
	if err := errors.Join(err1, err2, err3); err != nil {
		return row, err
	}
	t0 := time.Now()
	res, err := s.runHTTP(ctx, prompts, perStream, gen)
	if err != nil {
		return row, err
	}
	wall := time.Since(t0)
	fe1, err1 := procCPU(s.frontend.Process.Pid)
	eng1, err2 := procCPU(s.engine.Process.Pid)
	c1, err3 := s.counters(ctx)
	if err := errors.Join(err1, err2, err3); err != nil {
		return row, err
	}
	row.Tokens, row.Seconds = res.tokens, wall.Seconds()
	row.TokS = float64(res.tokens) / wall.Seconds()
	row.FrontendCPU, row.EngineCPU = fe1-fe0, eng1-eng0
	if row.FrontendCPU > 0 {
		row.TokSPerCore = float64(res.tokens) / row.FrontendCPU
	}
	row.AllocsPerToken = (c1.mallocs - c0.mallocs) / float64(res.tokens)
	row.BytesPerToken = (c1.bytes - c0.bytes) / float64(res.tokens)
	row.FrontendTTFTus = meanUs(c1.ttftSum-c0.ttftSum, c1.ttftCount-c0.ttftCount)
	row.QueueUs = meanUs(c1.queueSum-c0.queueSum, c1.queueCount-c0.queueCount)
	row.TTFT = percentiles(res.ttft)
	row.TTFB = percentiles(res.ttfb)

	if _, err := s.runDirect(ctx, prompts, 1, gen); err != nil {
		return row, err
	}
	t0 = time.Now()
	dres, err := s.runDirect(ctx, prompts, perStream, gen)
	if err != nil {
		return row, err
	}
	row.DirectTokS = float64(dres.tokens) / time.Since(t0).Seconds()
	row.DirectTTFT = percentiles(dres.ttft)
	row.AddedTTFTus = row.TTFT.minus(row.DirectTTFT)
	return row, nil
}

// meanUs is a histogram's mean in µs from its sum (seconds) and count
// over a run; 0 without observations.
func meanUs(sum, count float64) float64 {
	if count <= 0 {
		return 0
	}
	return 1e6 * sum / count
}

// measurePaced is one stream count's run behind a paced engine. One
// stream finds the engine idle, so its step starts as the request
// arrives: the HTTP and direct runs are measured one after the other as
// in measure. With more streams a request waits for the running step to
// end, a wait that depends on where in the step period it arrives; each
// request is then sent over HTTP and as a direct twin at once
// (runPaired), and the twins' TTFTs are the direct ones.
func (s *feStack) measurePaced(ctx context.Context, prompts []fePrompt, perStream, gen int) (FrontendPaced, error) {
	if len(prompts) == 1 {
		r, err := s.measure(ctx, prompts, perStream, gen)
		return FrontendPaced{Requests: r.Requests, TokS: r.TokS, TTFT: r.TTFT, TTFB: r.TTFB, DirectTTFT: r.DirectTTFT,
			AddedTTFTus: r.AddedTTFTus, FrontendTTFTus: r.FrontendTTFTus}, err
	}
	p := FrontendPaced{Requests: len(prompts) * perStream, Paired: true}
	if _, err := s.runPaired(ctx, prompts, 1, gen); err != nil {
		return p, err
	}
	c0, err := s.counters(ctx)
	if err != nil {
		return p, err
	}
	t0 := time.Now()
	res, err := s.runPaired(ctx, prompts, perStream, gen)
	if err != nil {
		return p, err
	}
	wall := time.Since(t0)
	c1, err := s.counters(ctx)
	if err != nil {
		return p, err
	}
	p.FrontendTTFTus = meanUs(c1.ttftSum-c0.ttftSum, c1.ttftCount-c0.ttftCount)
	p.TokS = float64(res.tokens) / wall.Seconds()
	p.TTFT, p.TTFB, p.DirectTTFT = percentiles(res.ttft), percentiles(res.ttfb), percentiles(res.twin)
	p.AddedTTFTus = p.TTFT.minus(p.DirectTTFT)
	added := make([]time.Duration, len(res.twin))
	for i, tw := range res.twin {
		added[i] = res.ttft[i] - tw
	}
	p.PairAddedUs = percentiles(added)
	return p, nil
}

// runLoad runs one goroutine per prompt, each doing perStream requests
// back to back with one, and gathers their tokens and TTFTs. With jitter,
// each request waits a random time below it first, so that closed-loop
// arrivals do not lock to a paced engine's steps (which would make a
// TTFT jump by whole steps with the phase).
func runLoad(ctx context.Context, prompts []fePrompt, perStream int, jitter time.Duration, one func(ctx context.Context, stream, r int) (feSample, error)) (feResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		res  feResult
		errs []error
		wg   sync.WaitGroup
	)
	for i := range prompts {
		wg.Go(func() {
			for r := range perStream {
				if jitter > 0 {
					select {
					case <-time.After(rand.N(jitter)):
					case <-ctx.Done():
					}
				}
				sm, err := one(ctx, i, r)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
					mu.Unlock()
					cancel()
					return
				}
				res.tokens += sm.tokens
				res.ttft = append(res.ttft, sm.ttft)
				if sm.ttfb > 0 {
					res.ttfb = append(res.ttfb, sm.ttfb)
				}
				if sm.twin > 0 {
					res.twin = append(res.twin, sm.twin)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return res, errs[0]
	}
	return res, nil
}

// runHTTP streams chat completions through the frontend.
func (s *feStack) runHTTP(ctx context.Context, prompts []fePrompt, perStream, gen int) (feResult, error) {
	bodies := chatBodies(prompts, gen)
	return runLoad(ctx, prompts, perStream, s.jitter, func(ctx context.Context, i, _ int) (feSample, error) {
		return s.streamHTTP(ctx, i, bodies[i], gen)
	})
}

// chatBodies are the streamed chat completion requests of prompts.
func chatBodies(prompts []fePrompt, gen int) [][]byte {
	bodies := make([][]byte, len(prompts))
	for i, p := range prompts {
		bodies[i], _ = json.Marshal(map[string]any{
			"model": "dummy", "stream": true, "max_tokens": gen,
			"stream_options": map[string]bool{"include_usage": true},
			"messages":       []map[string]string{{"role": "user", "content": p.content}},
		})
	}
	return bodies
}

var (
	sseContent      = []byte(`"content":"`)
	sseEmptyContent = []byte(`"content":""`)
	sseUsage        = []byte(`"usage":{`)
	sseDone         = []byte("data: [DONE]")
)

// streamHTTP sends one streamed chat completion on stream's connection
// and reads it to [DONE]: its completion tokens (usage), TTFB and TTFT
// (to the first chunk with content). It decodes only the usage chunk, so
// the client's own cost stays small next to the frontend's.
func (s *feStack) streamHTTP(ctx context.Context, stream int, body []byte, gen int) (feSample, error) {
	var sm feSample
	err := s.client.stream(ctx, stream, newChatRequest(s.base, body), func(resp *http.Response, start time.Time) error {
		sm.ttfb = time.Since(start)
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
			return fmt.Errorf("chat completion: status %d: %s", resp.StatusCode, msg)
		}
		tokens, chunks := -1, 0
		br := bufio.NewReaderSize(resp.Body, 16<<10)
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return fmt.Errorf("chat completion: stream ended before [DONE]: %w", err)
			}
			switch {
			case bytes.HasPrefix(line, sseDone):
				if tokens != gen {
					return fmt.Errorf("chat completion: usage.completion_tokens %d (from %d content chunks), want %d", tokens, chunks, gen)
				}
				if rest, err := io.ReadAll(br); err != nil || len(bytes.TrimSpace(rest)) > 0 {
					return fmt.Errorf("chat completion: %q after [DONE] (%v)", rest, err)
				}
				sm.tokens = tokens
				return nil
			case bytes.Contains(line, sseUsage):
				var u struct {
					Usage struct {
						CompletionTokens int `json:"completion_tokens"`
					} `json:"usage"`
				}
				if err := json.Unmarshal(bytes.TrimPrefix(bytes.TrimSpace(line), []byte("data: ")), &u); err != nil {
					return fmt.Errorf("chat completion: usage chunk: %w", err)
				}
				tokens = u.Usage.CompletionTokens
			case bytes.Contains(line, sseContent) && !bytes.Contains(line, sseEmptyContent):
				if chunks == 0 {
					sm.ttft = time.Since(start)
				}
				chunks++
			}
		}
	})
	return sm, err
}

// directSeq numbers the direct requests, for unique ids.
var directSeq atomic.Uint64

// runDirect sends the same prompts (their template-rendered token ids)
// straight to the engine through the Go engine client.
func (s *feStack) runDirect(ctx context.Context, prompts []fePrompt, perStream, gen int) (feResult, error) {
	return runLoad(ctx, prompts, perStream, s.jitter, func(ctx context.Context, i, _ int) (feSample, error) {
		return s.streamDirect(ctx, prompts[i].ids, gen)
	})
}

// runPaired sends every request both ways at once: over HTTP and, as
// its twin, straight to the engine. A twin reaches the engine within the
// intake's time of its HTTP request, so both usually join the same engine
// step and the pair's difference is what the frontend adds, free of where
// in the engine's step period the request happened to arrive.
func (s *feStack) runPaired(ctx context.Context, prompts []fePrompt, perStream, gen int) (feResult, error) {
	bodies := chatBodies(prompts, gen)
	return runLoad(ctx, prompts, perStream, s.jitter, func(ctx context.Context, i, _ int) (feSample, error) {
		var tw feSample
		var twinErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			tw, twinErr = s.streamDirect(ctx, prompts[i].ids, gen)
		}()
		sm, err := s.streamHTTP(ctx, i, bodies[i], gen)
		<-done
		if err = errors.Join(err, twinErr); err != nil {
			return feSample{}, err
		}
		sm.twin = tw.ttft
		return sm, nil
	})
}

// streamDirect sends one request straight to the engine through the Go
// engine client and reads it to its end.
func (s *feStack) streamDirect(ctx context.Context, ids []int32, gen int) (feSample, error) {
	params := wire.DefaultSamplingParams()
	params.MaxTokens = gen
	req := &wire.EngineCoreRequest{
		RequestID:      "bench-direct-" + strconv.FormatUint(directSeq.Add(1), 10),
		PromptTokenIDs: ids,
		SamplingParams: params,
	}
	start := time.Now()
	req.ArrivalTime = float64(start.UnixNano()) / 1e9
	st, err := s.direct.Submit(ctx, req)
	if err != nil {
		return feSample{}, err
	}
	defer st.Close()
	var ttft time.Duration
	tokens := 0
	for {
		out, err := st.Next(ctx)
		if err != nil {
			return feSample{}, fmt.Errorf("direct: %w", err)
		}
		if tokens == 0 && len(out.NewTokenIDs) > 0 {
			ttft = time.Since(start)
		}
		tokens += len(out.NewTokenIDs)
		if out.Finished() {
			if tokens != gen {
				return feSample{}, fmt.Errorf("direct: %d tokens, want %d", tokens, gen)
			}
			return feSample{tokens: tokens, ttft: ttft}, nil
		}
	}
}
