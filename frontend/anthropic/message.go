package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Stop reasons, as Anthropic names them.
const (
	StopEndTurn      = "end_turn"      // the model ended its turn (EOS)
	StopMaxTokens    = "max_tokens"    // max_tokens, or the end of the context
	StopSequence     = "stop_sequence" // one of stop_sequences matched
	StopToolUse      = "tool_use"      // the answer calls tools
	responseType     = "message"
	roleAssistant    = "assistant"
	blockText        = "text"
	blockThinking    = "thinking"
	blockToolUse     = "tool_use"
	finishLength     = "length"
	emptyInputObject = "{}"
)

// StopReasonOf maps how a generation ended to a stop reason and
// stop_sequence: finish is the chat pipeline's finish reason ("stop",
// "length", …), stop the stop sequence that matched (nil for none), toolUse
// whether the answer has tool_use blocks.
func StopReasonOf(finish string, stop *string, toolUse bool) (string, *string) {
	switch {
	case finish == finishLength:
		return StopMaxTokens, nil
	case toolUse:
		return StopToolUse, nil
	case stop != nil:
		return StopSequence, stop
	}
	return StopEndTurn, nil
}

// Usage is a message's token counts. Anthropic counts the prompt in three
// parts: input_tokens (not from the cache), cache_read_input_tokens (from
// the prefix cache) and cache_creation_input_tokens (written to it on
// request; Tandem caches every prompt by itself, so always 0).
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// UsageOf splits a prompt of numPrompt tokens, numCached of them from the
// prefix cache, as Anthropic counts it, with numOutput generated tokens.
func UsageOf(numPrompt, numCached, numOutput int) Usage {
	numCached = min(max(numCached, 0), numPrompt)
	return Usage{InputTokens: numPrompt - numCached, CacheReadInputTokens: numCached, OutputTokens: numOutput}
}

// ContentBlock is one block of an answer: text, thinking (Text is the
// thinking), or a tool_use with its id, name and input (a JSON object).
type ContentBlock struct {
	Type  string
	Text  string
	ID    string
	Name  string
	Input json.RawMessage
}

// MarshalJSON writes a text block as {"type":"text","text":…}, a thinking
// block as {"type":"thinking","thinking":…,"signature":""} (no signature:
// the thinking is the model's own, not Anthropic's) and a tool_use block
// as {"type":"tool_use","id","name","input"}, with every field present (a
// stream's content_block_start has text "" and input {}).
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	if b.Type == blockThinking {
		return json.Marshal(struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
		}{b.Type, b.Text, ""})
	}
	if b.Type == blockToolUse {
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage(emptyInputObject)
		}
		return json.Marshal(struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}{b.Type, b.ID, b.Name, input})
	}
	return json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{b.Type, b.Text})
}

// Response is a Messages response (type "message").
type Response struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []ContentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        Usage          `json:"usage"`
}

// NewResponse is the response with id, model and usage, no content yet
// and no stop reason: what a stream's message_start carries.
func NewResponse(id, model string, u Usage) Response {
	return Response{ID: id, Type: responseType, Role: roleAssistant, Model: model, Content: []ContentBlock{}, Usage: u}
}

// Finished is r with its content, stop reason and stop sequence.
func (r Response) Finished(content []ContentBlock, stopReason string, stop *string) Response {
	r.Content, r.StopReason, r.StopSequence = content, &stopReason, stop
	if r.Content == nil {
		r.Content = []ContentBlock{}
	}
	return r
}

// Builder gathers an answer's content as it is written: text and tool_use
// blocks in order, each tool's input from its JSON fragments. Its methods
// are those of Stream, so one writer feeds either.
type Builder struct {
	blocks []ContentBlock
	inputs []*strings.Builder // per block: a tool_use's input so far
}

// Text adds text: to the last block when it is text, else as a new one.
func (b *Builder) Text(s string) { b.addText(blockText, s) }

// Thinking adds reasoning: to the last block when it is thinking, else as
// a new one.
func (b *Builder) Thinking(s string) { b.addText(blockThinking, s) }

// addText adds s to the last block when it is of type typ (text or
// thinking), else as a new one.
func (b *Builder) addText(typ, s string) {
	if s == "" {
		return
	}
	if n := len(b.blocks); n > 0 && b.blocks[n-1].Type == typ {
		b.blocks[n-1].Text += s
		return
	}
	b.blocks = append(b.blocks, ContentBlock{Type: typ, Text: s})
	b.inputs = append(b.inputs, nil)
}

// ToolUse starts a tool_use block.
func (b *Builder) ToolUse(id, name string) {
	b.blocks = append(b.blocks, ContentBlock{Type: blockToolUse, ID: id, Name: name})
	b.inputs = append(b.inputs, &strings.Builder{})
}

// InputJSON adds a fragment of the last tool_use block's input (nothing
// when the last block is not a tool_use).
func (b *Builder) InputJSON(partial string) {
	if n := len(b.inputs); n > 0 && b.inputs[n-1] != nil {
		b.inputs[n-1].WriteString(partial)
	}
}

// ToolUsed reports whether the answer has a tool_use block.
func (b *Builder) ToolUsed() bool {
	for _, bl := range b.blocks {
		if bl.Type == blockToolUse {
			return true
		}
	}
	return false
}

// Blocks is the content: each tool_use's input its fragments joined,
// {} when they are not a JSON object (a call cut by max_tokens), as
// llama-server answers it.
func (b *Builder) Blocks() []ContentBlock {
	out := make([]ContentBlock, len(b.blocks))
	copy(out, b.blocks)
	for i, in := range b.inputs {
		if in != nil {
			out[i].Input = InputObject(in.String())
		}
	}
	return out
}

// InputObject is a call's arguments as a tool_use input: the compact JSON
// object, or {} when they are not one.
func InputObject(args string) json.RawMessage {
	var buf bytes.Buffer
	if !isObject(json.RawMessage(args)) || json.Compact(&buf, []byte(args)) != nil {
		return json.RawMessage(emptyInputObject)
	}
	return buf.Bytes()
}
