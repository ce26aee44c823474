package benchclient

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

// Errors.
var (
	ErrDataset = errors.New("benchclient: unknown dataset")
	ErrServer  = errors.New("benchclient: server error")
)

// Target is the OpenAI-compatible server under test.
type Target struct {
	BaseURL string            // e.g. http://127.0.0.1:8000
	Model   string            // "" = the first of GET /v1/models
	APIKey  string            // sent as Authorization: Bearer
	Headers map[string]string // extra headers on every request
	HTTP    *http.Client      // default: no timeout beyond ctx
	// Sampling of every request.
	Temperature float64
	IgnoreEOS   bool // vLLM's extension: generate max_tokens tokens
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Sample is the measurement of one request.
type Sample struct {
	Conversation int       `json:"conversation"` // -1 for single-shot datasets
	Turn         int       `json:"turn"`         // 1-based; 1 for single-shot datasets
	Start        float64   `json:"start_s"`      // seconds since the run started
	TTFT         float64   `json:"ttft_s"`       // to the first content chunk
	E2E          float64   `json:"e2e_s"`
	ITL          []float64 `json:"itl_s"` // gaps between content chunks
	PromptTokens int       `json:"prompt_tokens"`
	Completion   int       `json:"completion_tokens"`
	CachedTokens int       `json:"cached_tokens"` // usage.prompt_tokens_details.cached_tokens
	// Cacheable is what a perfect cache could have served: the previous
	// turn's prompt and answer (multi-turn turns ≥ 2), in whole blocks.
	Cacheable int    `json:"cacheable_tokens"`
	Text      string `json:"-"`
	Error     string `json:"error,omitempty"`
}

func (t *Target) client() *http.Client {
	if t.HTTP != nil {
		return t.HTTP
	}
	return http.DefaultClient
}

// ResolveModel fills Model from GET /v1/models when empty.
func (t *Target) ResolveModel(ctx context.Context) error {
	if t.Model != "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(t.BaseURL, "/")+"/v1/models", nil)
	if err != nil {
		return err
	}
	t.auth(req)
	resp, err := t.client().Do(req)
	if err != nil {
		return fmt.Errorf("benchclient: GET /v1/models: %w", err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Data) == 0 {
		return fmt.Errorf("%w: GET /v1/models (status %d) lists no model: %v", ErrServer, resp.StatusCode, err)
	}
	t.Model = list.Data[0].ID
	return nil
}

func (t *Target) auth(req *http.Request) {
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
}

// Chat sends one streaming chat completion and measures it.
func (t *Target) Chat(ctx context.Context, messages []Message, maxTokens int, sessionID string) Sample {
	body := map[string]any{"messages": messages}
	return t.do(ctx, "/v1/chat/completions", body, maxTokens, sessionID)
}

// Complete sends one streaming completion and measures it.
func (t *Target) Complete(ctx context.Context, prompt string, maxTokens int, sessionID string) Sample {
	return t.do(ctx, "/v1/completions", map[string]any{"prompt": prompt}, maxTokens, sessionID)
}

// chunk is the part of a streamed chunk the benchmark reads (chat and
// completions alike).
type chunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (t *Target) do(ctx context.Context, path string, body map[string]any, maxTokens int, sessionID string) Sample {
	s := Sample{Conversation: -1, Turn: 1}
	body["model"] = t.Model
	body["max_tokens"] = maxTokens
	body["stream"] = true
	body["stream_options"] = map[string]any{"include_usage": true}
	body["temperature"] = t.Temperature
	if t.IgnoreEOS {
		body["ignore_eos"] = true
	}
	b, err := json.Marshal(body)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(t.BaseURL, "/")+path, bytes.NewReader(b))
	if err != nil {
		s.Error = err.Error()
		return s
	}
	req.Header.Set("Content-Type", "application/json")
	if sessionID != "" {
		req.Header.Set("X-Session-ID", sessionID)
	}
	t.auth(req)
	start := time.Now()
	resp, err := t.client().Do(req)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		s.Error = fmt.Sprintf("status %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
		return s
	}
	var text strings.Builder
	last := start
	chunks := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue // blank separators, SSE comments, event: lines
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			s.Error = fmt.Sprintf("bad chunk %q: %v", data, err)
			return s
		}
		if c.Error != nil {
			s.Error = c.Error.Message
			return s
		}
		if c.Usage != nil {
			s.PromptTokens, s.Completion = c.Usage.PromptTokens, c.Usage.CompletionTokens
			if d := c.Usage.PromptTokensDetails; d != nil {
				s.CachedTokens = d.CachedTokens
			}
		}
		for _, ch := range c.Choices {
			piece := ch.Delta.Content + ch.Text
			if piece == "" {
				continue
			}
			now := time.Now()
			if chunks == 0 {
				s.TTFT = now.Sub(start).Seconds()
			} else {
				s.ITL = append(s.ITL, now.Sub(last).Seconds())
			}
			last = now
			chunks++
			text.WriteString(piece)
		}
	}
	if err := sc.Err(); err != nil {
		s.Error = err.Error()
		return s
	}
	s.E2E = time.Since(start).Seconds()
	if chunks == 0 {
		s.TTFT = s.E2E
	}
	if s.Completion == 0 {
		s.Completion = chunks // a server that sends no usage: one token per chunk
	}
	s.Text = text.String()
	return s
}
