package soak

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Kind is a kind of request in the mix.
type Kind string

// The request kinds.
const (
	KindStream    Kind = "stream"
	KindSession   Kind = "session"
	KindCancel    Kind = "cancel"
	KindNonStream Kind = "nonstream"
	KindBad       Kind = "bad"
)

// Class is what became of a request.
type Class string

// The classes. ClassOK, ClassCancelled, ClassRejected and the two overload answers are
// expected; the others are failures.
const (
	ClassOK             Class = "ok"
	ClassCancelled      Class = "cancelled"       // the client hung up on purpose mid-stream
	ClassRejected       Class = "rejected_4xx"    // a bad request got its 4xx
	ClassOverload429    Class = "overload_429"    // --max-waiting-requests: documented, with Retry-After
	ClassUnavailable503 Class = "unavailable_503" // no engine could serve it (status or stream error event)
	ClassUnexpected4xx  Class = "unexpected_4xx"  // a good request refused
	ClassServer5xx      Class = "server_5xx"      // a 5xx other than 503
	ClassStreamError    Class = "stream_error"    // an error event (not 503) or a stream cut without [DONE]
	ClassTransport      Class = "transport_error" // connection refused or reset
	ClassTimeout        Class = "timeout"         // still open after RequestTimeout: a hang
	ClassBadAccepted    Class = "bad_accepted"    // a bad request answered 2xx
)

// Failure reports whether a class counts against the server.
func (c Class) Failure() bool {
	switch c {
	case ClassOK, ClassCancelled, ClassRejected, ClassOverload429, ClassUnavailable503:
		return false
	}
	return true
}

// result is one finished request.
type result struct {
	kind      Kind
	class     Class
	ttft      time.Duration // first SSE event with text, or the whole answer when not streaming
	e2e       time.Duration
	numTokens int    // completion tokens the server reported in usage
	detail    string // for the report's examples
}

// request is one HTTP request to make.
type request struct {
	kind        Kind
	path        string
	body        []byte
	contentType string
	header      map[string]string
	stream      bool
	bad         bool         // must be refused with a 4xx
	cancelAfter int          // stream events to read before hanging up; 0 = read to the end
	onContent   func(string) // each streamed content delta
	onDone      func(Class)  // the outcome
}

// next picks and runs one request of the mix.
func (w *worker) next(ctx context.Context) result {
	m := w.cfg.Mix
	n := w.rng.IntN(m.Stream + m.Session + m.Cancel + m.NonStream + m.Bad)
	switch {
	case n < m.Stream:
		return w.do(ctx, w.streamCompletion(1+w.rng.IntN(w.cfg.MaxTokens)))
	case n < m.Stream+m.Session:
		return w.do(ctx, w.sessionTurn())
	case n < m.Stream+m.Session+m.Cancel:
		r := w.streamCompletion(8 * w.cfg.MaxTokens)
		r.kind, r.cancelAfter = KindCancel, 1+w.rng.IntN(3)
		return w.do(ctx, r)
	case n < m.Stream+m.Session+m.Cancel+m.NonStream:
		return w.do(ctx, w.nonStream())
	}
	return w.do(ctx, w.badRequest())
}

// words make up prompts: real text keeps byte and BPE tokenizers alike busy. Prompts
// are short (tens of tokens): the soak is about concurrency, and prefill time on a CPU
// would otherwise bound the request rate.
var words = strings.Fields(`the a engine frontend request token block cache session stream model
	prompt answer quick brown fox jumps over lazy dog paged attention scheduler batch prefix
	hash router heartbeat socket zero message queue latency memory leak soak load test`)

// sharedPrefixes give some prompts a common start, so the prefix cache gets hits.
var sharedPrefixes = func() []string {
	var out []string
	for i := range 4 {
		var b strings.Builder
		fmt.Fprintf(&b, "System %d. ", i)
		for j := range 16 {
			b.WriteString(words[(i*7+j*3)%len(words)])
			b.WriteByte(' ')
		}
		out = append(out, b.String())
	}
	return out
}()

func (w *worker) text(numWords int) string {
	var b strings.Builder
	if w.rng.IntN(2) == 0 {
		b.WriteString(sharedPrefixes[w.rng.IntN(len(sharedPrefixes))])
	}
	for range numWords {
		b.WriteString(words[w.rng.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.String()
}

func (w *worker) streamCompletion(maxTokens int) request {
	body := map[string]any{"model": w.cfg.Model, "prompt": w.text(3 + w.rng.IntN(12)), "max_tokens": maxTokens,
		"stream": true, "stream_options": map[string]any{"include_usage": true}, "ignore_eos": true}
	return request{kind: KindStream, path: "/v1/completions", body: mustJSON(body), stream: true}
}

func (w *worker) nonStream() request {
	body := map[string]any{"model": w.cfg.Model, "prompt": w.text(3 + w.rng.IntN(8)),
		"max_tokens": 1 + w.rng.IntN(w.cfg.MaxTokens), "ignore_eos": true}
	return request{kind: KindNonStream, path: "/v1/completions", body: mustJSON(body)}
}

// conversation is a worker's current multi-turn chat.
type conversation struct {
	id       string
	messages []map[string]string
	numTurns int
}

// maxTurns is the length of a conversation; then a new one starts.
const maxTurns = 4

func (w *worker) sessionTurn() request {
	c := &w.conv
	if c.id == "" || c.numTurns >= maxTurns {
		*c = conversation{id: fmt.Sprintf("soak-%d-%d-%d", w.cfg.Seed, w.id, w.rng.Uint32()),
			messages: []map[string]string{{"role": "system", "content": sharedPrefixes[w.rng.IntN(len(sharedPrefixes))]}}}
	}
	c.numTurns++
	c.messages = append(c.messages, map[string]string{"role": "user", "content": w.text(2 + w.rng.IntN(6))})
	body := map[string]any{"model": w.cfg.Model, "messages": c.messages, "max_tokens": 1 + w.rng.IntN(w.cfg.MaxTokens),
		"stream": true, "stream_options": map[string]any{"include_usage": true}, "ignore_eos": true}
	r := request{kind: KindSession, path: "/v1/chat/completions", stream: true}
	if w.rng.IntN(2) == 0 {
		body["session_id"] = c.id
	} else {
		r.header = map[string]string{"X-Session-ID": c.id}
	}
	r.body = mustJSON(body)
	var answer strings.Builder
	r.onContent = func(s string) { answer.WriteString(s) }
	r.onDone = func(cl Class) {
		if cl != ClassOK || answer.Len() == 0 {
			c.id = "" // start over rather than send a history with a hole
			return
		}
		c.messages = append(c.messages, map[string]string{"role": "assistant", "content": answer.String()})
	}
	return r
}

// badRequests are requests the server must refuse with a 4xx. Each names what is wrong.
func (w *worker) badRequest() request {
	model := w.cfg.Model
	bad := []struct {
		path, body, contentType string
	}{
		{"/v1/completions", `{"model": "` + model + `", "prompt": "x", "max_tokens": `, "application/json"}, // truncated JSON
		{"/v1/completions", `{"model": "no-such-model", "prompt": "x"}`, "application/json"},
		{"/v1/completions", `{"model": "` + model + `", "prompt": "x", "max_tokens": -3}`, "application/json"},
		{"/v1/completions", `{"model": "` + model + `", "prompt": "x", "temperature": -1}`, "application/json"},
		{"/v1/completions", `{"model": "` + model + `", "prompt": "x", "session_id": "` + strings.Repeat("s", 300) + `"}`, "application/json"},
		{"/v1/completions", `{"model": "` + model + `", "prompt": "x", "n": 0}`, "application/json"},
		{"/v1/completions", `{"model": "` + model + `", "prompt": "` + strings.Repeat("z ", 40000) + `"}`, "application/json"},
		{"/v1/chat/completions", `{"model": "` + model + `", "messages": []}`, "application/json"},
		{"/v1/chat/completions", `{"model": "` + model + `", "messages": [{"role": "wizard", "content": "hi"}]}`, "application/json"},
		{"/v1/chat/completions", `[1, 2, 3]`, "application/json"},
		{"/v1/chat/completions", "\x00\xff\xfe garbage", "application/json"},
		{"/v1/responses", `{"model": "` + model + `", "input": 42}`, "application/json"},
		{"/tokenize", `{"model": "` + model + `"}`, "application/json"},
	}
	b := bad[w.rng.IntN(len(bad))]
	return request{kind: KindBad, path: b.path, body: []byte(b.body), contentType: b.contentType, bad: true}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of strings and numbers: cannot fail
	}
	return b
}

// do runs one request and classifies the outcome.
func (w *worker) do(ctx context.Context, r request) (res result) {
	res.kind = r.kind
	rctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	start := time.Now()
	defer func() {
		res.e2e = time.Since(start)
		if r.onDone != nil {
			r.onDone(res.class)
		}
	}()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, w.cfg.BaseURL+r.path, bytes.NewReader(r.body))
	if err != nil {
		res.class, res.detail = ClassTransport, err.Error()
		return res
	}
	ct := r.contentType
	if ct == "" {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	if w.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+w.cfg.APIKey)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		res.class, res.detail = transportClass(rctx, err), err.Error()
		return res
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !r.stream {
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		res.ttft = time.Since(start)
		res.class = statusClass(resp.StatusCode, r.bad)
		res.detail = fmt.Sprintf("%s %d: %.200s", r.path, resp.StatusCode, bytes.TrimSpace(body))
		if err != nil && res.class == ClassOK {
			res.class, res.detail = transportClass(rctx, err), err.Error()
		}
		if res.class == ClassOK {
			res.numTokens = usageTokens(body)
		}
		return res
	}
	return w.readStream(rctx, cancel, r, resp.Body, start, res)
}

// readStream reads an SSE body to [DONE], or hangs up after r.cancelAfter events.
func (w *worker) readStream(ctx context.Context, cancel context.CancelFunc, r request, body io.Reader, start time.Time, res result) result {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var numEvents int
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		numEvents++
		if data == "[DONE]" {
			res.class = ClassOK
			if res.ttft == 0 {
				res.ttft = time.Since(start)
			}
			return res
		}
		var ev struct {
			Error *struct {
				Message string `json:"message"`
				Code    any    `json:"code"`
			} `json:"error"`
			Choices []struct {
				Text  string `json:"text"` // completions
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"` // chat
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			res.class, res.detail = ClassStreamError, fmt.Sprintf("bad event %.200q: %v", data, err)
			return res
		}
		if ev.Error != nil {
			res.class, res.detail = ClassStreamError, fmt.Sprintf("error event: %.300s", data)
			if unavailable(ev.Error.Code, ev.Error.Message) {
				res.class = ClassUnavailable503
			}
			return res
		}
		if ev.Usage != nil {
			res.numTokens = ev.Usage.CompletionTokens
		}
		if len(ev.Choices) > 0 {
			text := ev.Choices[0].Text + ev.Choices[0].Delta.Content
			if res.ttft == 0 && text != "" {
				res.ttft = time.Since(start) // the first token, not chat's role-only chunk
			}
			if r.onContent != nil {
				r.onContent(text)
			}
		}
		if r.cancelAfter > 0 && numEvents >= r.cancelAfter {
			cancel() // hang up mid-stream
			res.class, res.detail = ClassCancelled, fmt.Sprintf("hung up after %d events", numEvents)
			return res
		}
	}
	if err := sc.Err(); err != nil {
		res.class, res.detail = transportClass(ctx, err), err.Error()
		return res
	}
	res.class, res.detail = ClassStreamError, fmt.Sprintf("stream ended after %d events without [DONE]", numEvents)
	return res
}

// unavailable reports whether a stream's error event is the 503-class answer for a
// failed engine. The event carries no status (its code is null, as for a 500), so the
// message decides: engineclient.ErrEngineDead's text, or the server's "no engine core
// is available".
func unavailable(code any, message string) bool {
	return fmt.Sprint(code) == "503" || strings.Contains(message, "engine core is not available") ||
		strings.Contains(message, "no engine core is available")
}

func statusClass(status int, bad bool) Class {
	switch {
	case status == http.StatusTooManyRequests:
		return ClassOverload429
	case status == http.StatusServiceUnavailable:
		return ClassUnavailable503
	case status >= 500:
		return ClassServer5xx
	case status >= 400 && bad:
		return ClassRejected
	case status >= 400:
		return ClassUnexpected4xx
	case bad:
		return ClassBadAccepted
	}
	return ClassOK
}

func transportClass(ctx context.Context, err error) Class {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return ClassTimeout
	}
	return ClassTransport
}

func usageTokens(body []byte) int {
	var v struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	_ = json.Unmarshal(body, &v)
	return v.Usage.CompletionTokens
}
