package server

import (
	"encoding/json"
	"time"

	"github.com/tandem-llm/tandem/frontend/llamacpp"
	"github.com/tandem-llm/tandem/frontend/openai"
)

// respTelemetry is llama.cpp's telemetry on a Responses stream:
// timings_per_token puts a timings object on every text delta and on
// response.completed; return_progress sends response.in_progress events
// with prompt_progress while the prompt is computed (promptProgress).
type respTelemetry struct {
	timings, progress bool
	numPrompt         int
	r                 *choiceResult // the answer so far: tokens, cached tokens
	start, first      time.Time     // request arrival, first token (frontend clock)
	last              time.Time
	prompt            promptProgress
}

func newRespTelemetry(g *genRequest, call *responseCall, r *choiceResult) *respTelemetry {
	return &respTelemetry{timings: call.timings, progress: g.params.ReturnProgress, numPrompt: len(call.prompt), r: r, start: time.Now()}
}

// observe notes ev's arrival and sends the prompt_progress it brings.
func (t *respTelemetry) observe(ev *choiceEvent, w *responseStream, snapshot openai.Response) error {
	now := time.Now()
	if len(ev.tokenIDs) > 0 {
		if t.first.IsZero() {
			t.first = now
		}
		t.last = now
	}
	if !t.progress {
		return nil
	}
	snapshot.Output = nil // an in-progress snapshot, as response.in_progress's first one
	for _, p := range t.prompt.next(ev, t.numPrompt, t.r.numCached, t.start) {
		if err := w.out.sendEvent("response.in_progress", withField(openai.ResponseLifecycleEvent{Type: "response.in_progress", SequenceNumber: w.next(), Response: &snapshot},
			"prompt_progress", p)); err != nil {
			return err
		}
	}
	return nil
}

// now are the timings so far, by the frontend's clock (the engine's come
// with the end).
func (t *respTelemetry) now() llamacpp.Timings {
	cached := min(t.r.numCached, t.numPrompt)
	var promptMS, predMS float64
	if !t.first.IsZero() {
		promptMS, predMS = ms(t.first.Sub(t.start)), ms(t.last.Sub(t.first))
	}
	return llamacpp.NewTimings(cached, t.numPrompt-cached, promptMS, t.r.numTokens, predMS)
}

// decorate puts the timings so far on every text delta.
func (t *respTelemetry) decorate(typ string, ev any) any {
	if typ != "response.output_text.delta" {
		return ev
	}
	return withField(ev, "timings", t.now())
}

// withField is ev's JSON object with key set to val (keys then in
// alphabetical order).
func withField(ev any, key string, val any) any {
	b, err := json.Marshal(ev)
	if err != nil {
		return ev
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return ev
	}
	if m[key], err = json.Marshal(val); err != nil {
		return ev
	}
	return m
}
