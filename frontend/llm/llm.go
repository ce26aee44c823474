package llm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/frontend/chattemplate"
	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// Config says where the model's tokenizer and the engines are.
type Config struct {
	// Model is the model the engines serve, for its tokenizer and chat
	// template: a GGUF file, a Hugging Face directory, or "dummy" (the
	// byte tokenizer with ChatML).
	Model        string
	ChatTemplate string   // a Jinja file replacing the model's chat template
	Engines      []string // engine endpoints (tcp://, ipc://, dns+tcp://)
	// Client holds the other engineclient settings (CURVE keys, routing,
	// heartbeats); its Endpoints are replaced by Engines.
	Client engineclient.Config
	// ReadyTimeout bounds the wait for a ready engine in Open; default 5 min
	// (an engine loads and warms up its model first).
	ReadyTimeout time.Duration
}

// LLM generates text over engine cores. Safe for concurrent use.
type LLM struct {
	client *engineclient.Client
	tok    tokenizer.Tokenizer
	own    bool // Close closes client
}

// Open loads the tokenizer, dials the engines and waits until one is
// ready.
func Open(ctx context.Context, cfg Config) (*LLM, error) {
	tok, err := LoadTokenizer(cfg.Model, cfg.ChatTemplate)
	if err != nil {
		return nil, err
	}
	cc := cfg.Client
	cc.Endpoints = cfg.Engines
	client, err := engineclient.Dial(cc)
	if err != nil {
		return nil, fmt.Errorf("llm: %w", err)
	}
	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := client.WaitReady(wctx); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("llm: waiting for an engine: %w", err)
	}
	l := New(client, tok)
	l.own = true
	return l, nil
}

// New is an LLM over a client the caller owns (Close leaves it open).
func New(client *engineclient.Client, tok tokenizer.Tokenizer) *LLM {
	return &LLM{client: client, tok: tok}
}

// Close closes the engine client Open dialled.
func (l *LLM) Close() error {
	if l.own {
		return l.client.Close()
	}
	return nil
}

// Client is the engine client, for sessions and engine state.
func (l *LLM) Client() *engineclient.Client { return l.client }

// Tokenizer is the model's tokenizer.
func (l *LLM) Tokenizer() tokenizer.Tokenizer { return l.tok }

// LoadTokenizer loads the tokenizer and chat template of model (a GGUF
// file or a Hugging Face directory; the byte tokenizer for "dummy").
// templatePath, if set, replaces the model's chat template: a file, a
// built-in template's name (llama.cpp's: chattemplate.BuiltinNames), or
// the template itself (as vLLM's --chat-template takes it).
func LoadTokenizer(model, templatePath string) (tokenizer.Tokenizer, error) {
	if model == "dummy" {
		return tokenizer.NewByte(), nil
	}
	tok, err := tokenizer.Load(model)
	if err != nil {
		return nil, fmt.Errorf("llm: %w", err)
	}
	src := tok.ChatTemplateSource()
	if templatePath != "" {
		if src, err = templateSource(templatePath); err != nil {
			return nil, err
		}
	}
	if src != "" {
		tmpl, err := chattemplate.New(src, chattemplate.Options{BOSToken: tok.BOSText(), EOSToken: tok.EOSText()})
		if err != nil {
			return nil, fmt.Errorf("llm: chat template of %s: %w", model, err)
		}
		tok.SetChatTemplate(tmpl)
	}
	return tok, nil
}

// Params are one request's parameters: the engine's sampling parameters
// plus what the text side applies. Start from DefaultParams (vLLM's
// SamplingParams defaults: temperature 1, top_p 1, 16 tokens).
type Params struct {
	wire.SamplingParams // N is the number of samples returned
	// BestOf samples this many and returns the N with the highest mean
	// logprob per token (Complete and Batch only; 0 or ≤ N: N).
	BestOf      int
	Stop        []string // stop strings (cut from the text unless IncludeStop)
	IncludeStop bool     // keep the matched stop string, and the EOS token's text
	KeepSpecial bool     // keep special tokens in the text (skip_special_tokens false)
}

// DefaultParams are vLLM's SamplingParams defaults.
func DefaultParams() Params { return Params{SamplingParams: wire.DefaultSamplingParams()} }

// Option sets a request's session, cache salt, priority, rank or id
// (engineclient.WithSessionID, WithCacheSalt, ...).
type Option = engineclient.Option

// ErrRejected wraps an engine's refusal of a request (a prompt over the
// context length, a bad parameter).
var ErrRejected = errors.New("llm: the engine rejected the request")

func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "llm-" + hex.EncodeToString(b)
}

// Encode tokenizes a prompt as the completions API does (with BOS when the
// model adds one).
func (l *LLM) Encode(prompt string) []int32 { return l.tok.Encode(prompt, true) }

// RenderChat renders messages with the chat template, ending with the
// assistant turn's header, and tokenizes the result as the chat API does.
// kwargs are template variables (chat_template_kwargs).
func (l *LLM) RenderChat(msgs []tokenizer.Message, kwargs map[string]any) ([]int32, error) {
	text, err := l.tok.ChatTemplate().Render(msgs, true, kwargs)
	if err != nil {
		return nil, fmt.Errorf("llm: chat template: %w", err)
	}
	return l.tok.Encode(text, false), nil
}

// templateSource reads --chat-template: a file, a built-in name, or a
// template given inline.
func templateSource(v string) (string, error) {
	b, err := os.ReadFile(v)
	switch {
	case err == nil:
		return string(b), nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("llm: chat template: %w", err)
	}
	if src, ok := chattemplate.Builtin(v); ok {
		return src, nil
	}
	if strings.Contains(v, "{{") || strings.Contains(v, "{%") {
		return v, nil
	}
	return "", fmt.Errorf("llm: chat template %q: no such file, and not a built-in template (%s) or a template", v, strings.Join(chattemplate.BuiltinNames(), ", "))
}
