package batch

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// URLs are the endpoints a batch line may call.
var URLs = map[string]bool{"/v1/chat/completions": true, "/v1/completions": true, "/v1/responses": true, "/v1/embeddings": true}

// maxLineBytes is the longest accepted input line.
const maxLineBytes = 64 << 20

// Request is one input line.
type Request struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// Result is one output line.
type Result struct {
	ID       string    `json:"id"` // batch_req_…
	CustomID string    `json:"custom_id"`
	Response *Response `json:"response"`
	Error    *Error    `json:"error"`
}

// Response is the HTTP answer to one line.
type Response struct {
	StatusCode int             `json:"status_code"`
	RequestID  string          `json:"request_id"` // the X-Request-Id the server answered with
	Body       json.RawMessage `json:"body"`
}

// Error says why a line could not be sent.
type Error struct {
	Code    string `json:"code"` // "invalid_json", "invalid_request"
	Message string `json:"message"`
}

// Options configure Run.
type Options struct {
	Concurrency int       // lines in flight at once; default 32
	Progress    io.Writer // where the progress bar goes; nil = none
	Interactive bool      // Progress is a terminal: redraw one line
}

// Summary counts a batch's lines.
type Summary struct {
	NumLines     int // results written
	NumSucceeded int // 2xx answers
	NumFailed    int // invalid lines and non-2xx answers
}

// Run sends every line of in to h and writes one result line per input
// line to out, in input order. It returns early only when ctx ends or
// reading or writing fails.
func Run(ctx context.Context, h http.Handler, in io.Reader, out io.Writer, opt Options) (Summary, error) {
	lines, err := readLines(in)
	if err != nil {
		return Summary{}, err
	}
	if opt.Concurrency <= 0 {
		opt.Concurrency = 32
	}
	bar := newProgress(opt.Progress, opt.Interactive, len(lines))
	results := make([]*Result, len(lines))
	ready := make([]chan struct{}, len(lines))
	for i := range ready {
		ready[i] = make(chan struct{})
	}
	sem := make(chan struct{}, opt.Concurrency)
	// The dispatcher is in wg itself, so its wg.Go calls never race with
	// the deferred Wait.
	var wg sync.WaitGroup
	wg.Go(func() {
		for i, line := range lines {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Go(func() {
				defer func() { <-sem }()
				results[i] = runLine(ctx, h, line)
				close(ready[i])
			})
		}
	})
	defer wg.Wait()
	w := bufio.NewWriter(out)
	var sum Summary
	for i := range lines {
		select {
		case <-ready[i]:
		case <-ctx.Done():
			return sum, ctx.Err()
		}
		r := results[i]
		b, err := json.Marshal(r)
		if err != nil {
			return sum, fmt.Errorf("batch: line %d: %w", i+1, err)
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return sum, fmt.Errorf("batch: writing results: %w", err)
		}
		sum.NumLines++
		if r.Error == nil && r.Response.StatusCode/100 == 2 {
			sum.NumSucceeded++
		} else {
			sum.NumFailed++
		}
		bar.update(sum)
	}
	bar.finish(sum)
	if err := w.Flush(); err != nil {
		return sum, fmt.Errorf("batch: writing results: %w", err)
	}
	return sum, nil
}

// readLines returns the non-blank lines of in.
func readLines(in io.Reader) ([][]byte, error) {
	r := bufio.NewReaderSize(in, 1<<20)
	var lines [][]byte
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > maxLineBytes {
			return nil, fmt.Errorf("batch: line %d is longer than %d bytes", len(lines)+1, maxLineBytes)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			lines = append(lines, t)
		}
		if errors.Is(err, io.EOF) {
			return lines, nil
		}
		if err != nil {
			return nil, fmt.Errorf("batch: reading input: %w", err)
		}
	}
}

// runLine checks one line and sends it to h.
func runLine(ctx context.Context, h http.Handler, line []byte) *Result {
	res := &Result{ID: "batch_req_" + randomHex(12)}
	fail := func(code, format string, args ...any) *Result {
		res.Error = &Error{Code: code, Message: fmt.Sprintf(format, args...)}
		return res
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		// Keep the custom_id when the line is an object with one.
		var id struct {
			CustomID string `json:"custom_id"`
		}
		_ = json.Unmarshal(line, &id)
		res.CustomID = id.CustomID
		return fail("invalid_json", "the line is not a valid batch request: %v", err)
	}
	res.CustomID = req.CustomID
	var body map[string]json.RawMessage
	switch {
	case req.CustomID == "":
		return fail("invalid_request", "custom_id is required")
	case req.Method != http.MethodPost:
		return fail("invalid_request", "method must be POST, got %q", req.Method)
	case !URLs[req.URL]:
		return fail("invalid_request", "url %q is not supported (use /v1/chat/completions, /v1/completions, /v1/responses or /v1/embeddings)", req.URL)
	case json.Unmarshal(req.Body, &body) != nil || body == nil:
		return fail("invalid_request", "body must be a JSON object")
	case string(body["stream"]) == "true":
		return fail("invalid_request", "stream is not supported in a batch")
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return fail("invalid_request", "%v", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	rec := newRecorder()
	h.ServeHTTP(rec, hreq)
	out := rec.body.Bytes()
	if !json.Valid(out) {
		out, _ = json.Marshal(string(out))
	}
	res.Response = &Response{StatusCode: rec.status, RequestID: rec.header.Get("X-Request-Id"), Body: out}
	return res
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// recorder is an in-memory http.ResponseWriter.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// Flush is a no-op; it lets streaming handlers run.
func (r *recorder) Flush() {}
