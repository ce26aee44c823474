package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Request is the body of POST /v1/messages, and without max_tokens of
// POST /v1/messages/count_tokens. Decode it with DecodeMessages or
// DecodeCountTokens, which check it and fill the parsed fields (json:"-").
// Fields Tandem has no use for (service_tier, container, mcp_servers,
// cache_control on blocks, citations) are ignored, as unknown fields are.
type Request struct {
	Model         string          `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	System        json.RawMessage `json:"system"` // a string or text blocks
	Messages      []Message       `json:"messages"`
	StopSequences []string        `json:"stop_sequences"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	Stream        bool            `json:"stream"`
	Metadata      *Metadata       `json:"metadata"`
	Tools         []Tool          `json:"tools"`
	ToolChoice    *ToolChoice     `json:"tool_choice"`
	Thinking      *Thinking       `json:"thinking"`
	OutputConfig  *OutputConfig   `json:"output_config"`
	// Extensions of the API that Tandem's peers or Tandem itself add:
	// session_id routes the conversation (Tandem's session rules), and
	// chat_template_kwargs reach the chat template (vLLM, llama-server).
	SessionID          string         `json:"session_id"`
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs"`

	// SystemText is system as one text: its text blocks joined with "\n"
	// (Claude Code's x-anthropic-billing-header block left out), followed
	// by the text of system-role messages.
	SystemText string `json:"-"`
}

// Message is one element of messages. Role is "user" or "assistant" once
// decoded (vLLM's "system" messages are moved into SystemText; Claude
// Code's "ctx" and "msg" become "user", as vLLM reads them).
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or blocks
	Blocks  []Block         `json:"-"`       // the content; a string is one text block
}

// Block is one content block of a message: text, tool_use (assistant),
// tool_result (user), thinking or redacted_thinking (assistant). Image and
// document blocks are refused: the models Tandem serves read text only.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`          // tool_use
	Name      string          `json:"name"`        // tool_use
	Input     json.RawMessage `json:"input"`       // tool_use: an object
	ToolUseID string          `json:"tool_use_id"` // tool_result
	Content   json.RawMessage `json:"content"`     // tool_result: a string or text blocks
	IsError   bool            `json:"is_error"`    // tool_result
	Thinking  string          `json:"thinking"`    // thinking
	// ResultText is a tool_result's content as one text (its text blocks
	// joined with "\n").
	ResultText string `json:"-"`
}

// Metadata is the request's metadata. user_id is accepted and not used:
// neither vLLM nor llama-server routes by it, and Tandem's session is
// session_id or X-Session-ID.
type Metadata struct {
	UserID string `json:"user_id"`
}

// Tool is a client tool: a name, a description and the JSON schema of its
// input. Anthropic's own tool types (web_search_…, bash_…, computer_…) run
// on Anthropic's side and are refused.
type Tool struct {
	Type        string          `json:"type"` // "", "custom"
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// ToolChoice is tool_choice: auto, any (some tool), tool (the one named)
// or none; disable_parallel_tool_use allows one call.
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
}

// Thinking is extended thinking's setting: enabled (with a budget),
// adaptive or disabled. It becomes the chat template's enable_thinking;
// an enabled one's budget bounds the think block (thinking_token_budget).
type Thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

// OutputConfig is output_config: format, a JSON schema the answer must
// follow (structured outputs); effort, the chat template's
// reasoning_effort.
type OutputConfig struct {
	Format *struct {
		Type   string          `json:"type"` // "json_schema"
		Schema json.RawMessage `json:"schema"`
	} `json:"format"`
	Effort string `json:"effort"`
}

// FieldError is a request that does not check: the path of the field in
// Anthropic's dotted form ("messages.0.content.1.type", "" for the body)
// and what is wrong with it. It is a 400 invalid_request_error.
type FieldError struct {
	Path    string
	Message string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

func fieldError(path, format string, args ...any) *FieldError {
	return &FieldError{Path: path, Message: fmt.Sprintf(format, args...)}
}

// billingHeader starts the system block Claude Code sends with a hash
// that changes on every request; vLLM leaves it out of the prompt, which
// keeps the prefix cache.
const billingHeader = "x-anthropic-billing-header"

// DecodeMessages decodes and checks a POST /v1/messages body:
// max_tokens (at least 1), model and messages are required. The error is
// a *FieldError.
func DecodeMessages(body []byte) (*Request, error) {
	r, err := decode(body)
	if err != nil {
		return nil, err
	}
	if r.MaxTokens == nil {
		return nil, fieldError("max_tokens", "Field required")
	}
	if *r.MaxTokens < 1 {
		return nil, fieldError("max_tokens", "Input should be greater than or equal to 1")
	}
	return r, nil
}

// DecodeCountTokens decodes and checks a POST /v1/messages/count_tokens
// body: as DecodeMessages, without max_tokens.
func DecodeCountTokens(body []byte) (*Request, error) { return decode(body) }

func decode(body []byte) (*Request, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, fieldError("", "The request body is empty; expected a JSON object.")
	}
	var r Request
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, jsonError(err)
	}
	if r.Model == "" {
		return nil, fieldError("model", "Field required")
	}
	if r.Messages == nil { // absent or null; [] is an empty conversation, as vLLM and llama-server take it
		return nil, fieldError("messages", "Field required")
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return &r, nil
}

// jsonError is a decoding failure as a FieldError.
func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fieldError("", "Invalid JSON in request body at byte %d: %v.", syn.Offset, syn)
	case errors.As(err, &typ) && typ.Field == "":
		return fieldError("", "The request body must be a JSON object, got %s.", typ.Value)
	case errors.As(err, &typ):
		return fieldError(typ.Field, "Input should be %s, got %s", expected(typ.Type.Kind().String()), typ.Value)
	}
	return fieldError("", "Invalid JSON in request body: %v.", err)
}

func expected(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "a valid integer"
	case strings.HasPrefix(kind, "float"):
		return "a valid number"
	case kind == "string":
		return "a valid string"
	case kind == "bool":
		return "a valid boolean"
	case kind == "slice", kind == "array":
		return "a valid list"
	}
	return "a valid dictionary"
}

// check checks what JSON types alone do not and fills the parsed fields.
func (r *Request) check() error {
	system, err := systemText(r.System)
	if err != nil {
		return err
	}
	parts := []string{}
	if system != "" {
		parts = append(parts, system)
	}
	msgs := r.Messages[:0:0]
	for i := range r.Messages {
		m := r.Messages[i]
		path := fmt.Sprintf("messages.%d", i)
		if len(m.Content) == 0 || string(m.Content) == "null" {
			return fieldError(path+".content", "Field required")
		}
		switch m.Role {
		case "user", "assistant":
		case "ctx", "msg": // Claude Code's, read as user turns (vLLM)
			m.Role = "user"
		case "system": // vLLM's: joined to the system prompt
			text, err := textOf(m.Content, path+".content")
			if err != nil {
				return err
			}
			parts = append(parts, text)
			continue
		case "":
			return fieldError(path+".role", "Field required")
		default:
			return fieldError(path+".role", "Input should be 'user' or 'assistant', got %q", m.Role)
		}
		if m.Blocks, err = blocksOf(m.Content, path+".content"); err != nil {
			return err
		}
		for j := range m.Blocks {
			if err := m.Blocks[j].check(m.Role, fmt.Sprintf("%s.content.%d", path, j)); err != nil {
				return err
			}
		}
		msgs = append(msgs, m)
	}
	r.Messages, r.SystemText = msgs, strings.Join(parts, "\n")
	for i, t := range r.Tools {
		if err := t.check(fmt.Sprintf("tools.%d", i)); err != nil {
			return err
		}
	}
	if err := r.ToolChoice.check(); err != nil {
		return err
	}
	if t := r.Thinking; t != nil && t.Type != "enabled" && t.Type != "disabled" && t.Type != "adaptive" {
		return fieldError("thinking.type", "Input should be 'enabled', 'adaptive' or 'disabled', got %q", t.Type)
	}
	if f := r.outputFormat(); f != nil && f.Type != "json_schema" {
		return fieldError("output_config.format.type", "Input should be 'json_schema', got %q", f.Type)
	}
	if f := r.outputFormat(); f != nil && !isObject(f.Schema) {
		return fieldError("output_config.format.schema", "Input should be a valid dictionary")
	}
	return nil
}

func (r *Request) outputFormat() *struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
} {
	if r.OutputConfig == nil {
		return nil
	}
	return r.OutputConfig.Format
}

// systemText is system as one text: a string, or text blocks joined with
// "\n" without Claude Code's billing header block.
func systemText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	return textOf(raw, "system")
}

// textOf is a string, or the text of text blocks joined with "\n" (other
// blocks refused), at path.
func textOf(raw json.RawMessage, path string) (string, error) {
	blocks, err := blocksOf(raw, path)
	if err != nil {
		return "", err
	}
	var texts []string
	for j, b := range blocks {
		if b.Type != "text" {
			return "", unsupported(b.Type, fmt.Sprintf("%s.%d", path, j), "only text blocks are")
		}
		if !strings.HasPrefix(b.Text, billingHeader) {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// blocksOf decodes content: a string (one text block) or a list of blocks.
func blocksOf(raw json.RawMessage, path string) ([]Block, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fieldError(path, "Input should be a valid string")
		}
		return []Block{{Type: "text", Text: s}}, nil
	case len(raw) > 0 && raw[0] == '[':
		var blocks []Block
		if err := json.Unmarshal(raw, &blocks); err != nil {
			return nil, blockListError(raw, path)
		}
		for j, b := range blocks {
			if b.Type == "" {
				return nil, fieldError(fmt.Sprintf("%s.%d.type", path, j), "Field required")
			}
		}
		return blocks, nil
	}
	return nil, fieldError(path, "Input should be a valid string or a list of content blocks")
}

// blockListError names the first block of a list that does not decode.
func blockListError(raw json.RawMessage, path string) error {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return fieldError(path, "Input should be a valid list")
	}
	for j, it := range items {
		var b Block
		if err := json.Unmarshal(it, &b); err != nil {
			var typ *json.UnmarshalTypeError
			if errors.As(err, &typ) && typ.Field != "" {
				return fieldError(fmt.Sprintf("%s.%d.%s", path, j, typ.Field), "Input should be %s", expected(typ.Type.Kind().String()))
			}
			return fieldError(fmt.Sprintf("%s.%d", path, j), "Input should be a valid dictionary")
		}
	}
	return fieldError(path, "Input should be a valid list")
}

// check checks one block of a message of role at path, and reads a
// tool_result's content.
func (b *Block) check(role, path string) error {
	switch b.Type {
	case "text":
		return nil
	case "image":
		return fieldError(path, "image input is not supported: the served model reads text only")
	case "document":
		return fieldError(path, "document input is not supported: the served model reads text only")
	case "tool_use", "thinking", "redacted_thinking":
		if role != "assistant" {
			return fieldError(path+".type", "%s blocks belong to assistant messages", b.Type)
		}
		if b.Type == "tool_use" {
			if b.Name == "" {
				return fieldError(path+".name", "Field required")
			}
			if len(b.Input) > 0 && string(b.Input) != "null" && !isObject(b.Input) {
				return fieldError(path+".input", "Input should be a valid dictionary")
			}
		}
		return nil
	case "tool_result":
		if role != "user" {
			return fieldError(path+".type", "tool_result blocks belong to user messages")
		}
		if b.ToolUseID == "" {
			return fieldError(path+".tool_use_id", "Field required")
		}
		if len(b.Content) == 0 || string(b.Content) == "null" {
			return nil
		}
		text, err := resultText(b.Content, path+".content")
		b.ResultText = text
		return err
	}
	return unsupported(b.Type, path+".type", "text, tool_use, tool_result and thinking blocks are")
}

// resultText is a tool_result's content as text: a string, or text
// blocks joined with "\n"; an image in it is refused as image input.
func resultText(raw json.RawMessage, path string) (string, error) {
	blocks, err := blocksOf(raw, path)
	if err != nil {
		return "", err
	}
	texts := make([]string, 0, len(blocks))
	for j, b := range blocks {
		p := fmt.Sprintf("%s.%d", path, j)
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "image", "document":
			return "", (&Block{Type: b.Type}).check("user", p)
		default:
			return "", unsupported(b.Type, p+".type", "only text blocks are")
		}
	}
	return strings.Join(texts, "\n"), nil
}

func unsupported(typ, path, which string) error {
	return fieldError(path, "content block type %q is not supported: %s", typ, which)
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	return json.Valid(raw)
}

// check checks a tool definition at path.
func (t Tool) check(path string) error {
	if t.Type != "" && t.Type != "custom" {
		return fieldError(path+".type", "tool type %q is not supported: only client tools (name, description, input_schema) are; Anthropic's own tools run on Anthropic's side", t.Type)
	}
	if t.Name == "" {
		return fieldError(path+".name", "Field required")
	}
	if len(t.InputSchema) == 0 || string(t.InputSchema) == "null" {
		return fieldError(path+".input_schema", "Field required")
	}
	if !isObject(t.InputSchema) {
		return fieldError(path+".input_schema", "Input should be a valid dictionary")
	}
	return nil
}

// check checks tool_choice (nil is none given).
func (c *ToolChoice) check() error {
	if c == nil {
		return nil
	}
	switch c.Type {
	case "auto", "any", "none":
		return nil
	case "tool":
		if c.Name == "" {
			return fieldError("tool_choice.name", "Field required")
		}
		return nil
	case "":
		return fieldError("tool_choice.type", "Field required")
	}
	return fieldError("tool_choice.type", "Input should be 'auto', 'any', 'tool' or 'none', got %q", c.Type)
}
