package anthropic

// Event is one server-sent event of a streamed message: its name (the
// `event:` line) and its data, which marshals to JSON with the same
// "type".
type Event struct {
	Name string
	Data any
}

// Event names, in the order a stream sends them.
const (
	EventMessageStart      = "message_start"
	EventContentBlockStart = "content_block_start"
	EventPing              = "ping"
	EventContentBlockDelta = "content_block_delta"
	EventContentBlockStop  = "content_block_stop"
	EventMessageDelta      = "message_delta"
	EventMessageStop       = "message_stop"
	EventError             = "error"
)

type messageStart struct {
	Type    string   `json:"type"`
	Message Response `json:"message"`
}

type blockStart struct {
	Type         string       `json:"type"`
	Index        int          `json:"index"`
	ContentBlock ContentBlock `json:"content_block"`
}

type typeOnly struct {
	Type string `json:"type"`
}

type blockDelta struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta delta  `json:"delta"`
}

// delta is a text_delta {text}, a thinking_delta {thinking} or an
// input_json_delta {partial_json}.
type delta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

type blockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

type messageDelta struct {
	Type  string `json:"type"`
	Delta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage Usage `json:"usage"`
}

// Stream writes a message as Anthropic streams it:
//
//	message_start, then per content block content_block_start (the first
//	one followed by a ping), its content_block_deltas (text_delta,
//	thinking_delta or input_json_delta) and content_block_stop, then
//	message_delta (stop reason, usage) and message_stop.
//
// Blocks are numbered from 0 in order; a text block opens at the first
// text and stays open until a tool_use starts or the message ends. Its
// methods gather events; Take returns them. The zero Stream is ready.
type Stream struct {
	events  []Event
	open    string // type of the open block; "" when none
	next    int    // index of the next block
	pinged  bool
	toolUse bool
}

// Take returns the events gathered since the last Take.
func (s *Stream) Take() []Event {
	ev := s.events
	s.events = nil
	return ev
}

func (s *Stream) add(name string, data any) {
	s.events = append(s.events, Event{Name: name, Data: data})
}

// Start sends message_start with r (its content empty, no stop reason).
func (s *Stream) Start(r Response) {
	r.Content, r.StopReason, r.StopSequence = []ContentBlock{}, nil, nil
	s.add(EventMessageStart, messageStart{Type: EventMessageStart, Message: r})
}

// Text sends text, opening a text block when none is open.
func (s *Stream) Text(text string) {
	s.textDelta(blockText, delta{Type: "text_delta", Text: &text}, text)
}

// Thinking sends reasoning, opening a thinking block when none is open.
func (s *Stream) Thinking(text string) {
	s.textDelta(blockThinking, delta{Type: "thinking_delta", Thinking: &text}, text)
}

// textDelta sends d, a delta of text, in a block of type typ, opening one
// when another is open; nothing for empty text.
func (s *Stream) textDelta(typ string, d delta, text string) {
	if text == "" {
		return
	}
	if s.open != typ {
		s.startBlock(ContentBlock{Type: typ})
	}
	s.add(EventContentBlockDelta, blockDelta{Type: EventContentBlockDelta, Index: s.next - 1, Delta: d})
}

// ToolUse closes the open block and opens a tool_use block.
func (s *Stream) ToolUse(id, name string) {
	s.startBlock(ContentBlock{Type: blockToolUse, ID: id, Name: name})
	s.toolUse = true
}

// InputJSON sends a fragment of the open tool_use block's input (nothing
// when no tool_use block is open).
func (s *Stream) InputJSON(partial string) {
	if partial == "" || s.open != blockToolUse {
		return
	}
	s.add(EventContentBlockDelta, blockDelta{Type: EventContentBlockDelta, Index: s.next - 1, Delta: delta{Type: "input_json_delta", PartialJSON: &partial}})
}

// ToolUsed reports whether the message has a tool_use block.
func (s *Stream) ToolUsed() bool { return s.toolUse }

// Finish closes the open block and sends message_delta with the stop
// reason, stop sequence and usage, then message_stop.
func (s *Stream) Finish(stopReason string, stop *string, u Usage) {
	s.closeBlock()
	s.ping()
	md := messageDelta{Type: EventMessageDelta, Usage: u}
	md.Delta.StopReason, md.Delta.StopSequence = stopReason, stop
	s.add(EventMessageDelta, md)
	s.add(EventMessageStop, typeOnly{Type: EventMessageStop})
}

func (s *Stream) startBlock(b ContentBlock) {
	s.closeBlock()
	s.add(EventContentBlockStart, blockStart{Type: EventContentBlockStart, Index: s.next, ContentBlock: b})
	s.open = b.Type
	s.next++
	s.ping()
}

func (s *Stream) closeBlock() {
	if s.open == "" {
		return
	}
	s.add(EventContentBlockStop, blockStop{Type: EventContentBlockStop, Index: s.next - 1})
	s.open = ""
}

// ping sends the stream's one ping, after its first content_block_start
// (or before message_delta when it has no block), where Anthropic sends it.
func (s *Stream) ping() {
	if !s.pinged {
		s.pinged = true
		s.add(EventPing, typeOnly{Type: EventPing})
	}
}

// ErrorEvent is the event of a failure after the stream started.
func ErrorEvent(e Error) Event { return Event{Name: EventError, Data: e} }
