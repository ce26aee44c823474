package reasoning

import "strings"

// OpenAI's harmony format (gpt-oss): the answer is a run of messages,
// each a header, <|message|>, a body and an end marker,
//
//	<|channel|>analysis<|message|>Need the weather.<|end|>
//	<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>
//	<|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>
//
// (the prompt ends with <|start|>assistant, so the first header has no
// role). The analysis channel is the reasoning; the final channel, and
// commentary without a recipient (a preamble to tool calls), the
// content. A message to a function (a recipient functions.NAME, in the
// header before or after the channel) is a tool call: it goes into the
// content in the form the gpt-oss chat template writes a call, which the
// toolparse package's openai format reads,
//
//	<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>ARGS<|call|>
//
// with the arguments as the model writes them, streamed. Text that never
// reaches a <|message|> within harmonyMaxHeader bytes is not harmony: it
// is content, as is all that follows.

// The harmony markers (special tokens of the o200k_harmony vocabulary).
const (
	harmonyStart   = "<|start|>"
	harmonyChannel = "<|channel|>"
	harmonyMessage = "<|message|>"
	harmonyEnd     = "<|end|>"
	harmonyCall    = "<|call|>"
	harmonyReturn  = "<|return|>"
	// HarmonyCallPrefix begins a tool call as the splitter writes it
	// into the content, the function's name next.
	HarmonyCallPrefix = harmonyStart + "assistant to=functions."
	// harmonyMaxHeader bounds a header, bytes.
	harmonyMaxHeader = 512
)

// harmonyEnds are the markers that end a message's body: <|end|>, the
// stop tokens <|call|> and <|return|> (when the text keeps them), and a
// new message's <|start|>.
var harmonyEnds = []string{harmonyEnd, harmonyCall, harmonyReturn, harmonyStart}

type harmonyState uint8

const (
	hHeader harmonyState = iota // reading a header, up to <|message|>
	hBody                       // reading a message's body
	hRaw                        // not harmony: all content
)

// bodyKind is where a message's body goes.
type bodyKind uint8

const (
	toContent bodyKind = iota
	toReasoning
	toCall
)

// harmony splits one answer in the harmony format.
type harmony struct {
	state harmonyState
	kind  bodyKind
	buf   string // hHeader: the header so far; hBody: a tail that may begin an end marker
}

// push reads text into r and c.
func (h *harmony) push(text string, r, c *strings.Builder) {
	rest := h.buf + text
	h.buf = ""
	for rest != "" {
		switch h.state {
		case hRaw:
			c.WriteString(rest)
			return
		case hHeader:
			i := strings.Index(rest, harmonyMessage)
			switch {
			case i > harmonyMaxHeader, i < 0 && len(rest) > harmonyMaxHeader+len(harmonyMessage):
				h.state = hRaw
				continue
			case i < 0:
				h.buf = rest
				return
			}
			h.begin(rest[:i], c)
			rest = rest[i+len(harmonyMessage):]
		case hBody:
			at, n := -1, 0
			for _, m := range harmonyEnds {
				if i := strings.Index(rest, m); i >= 0 && (at < 0 || i < at) {
					at, n = i, len(m)
				}
			}
			if at < 0 {
				keep := markerTail(rest)
				h.write(rest[:len(rest)-len(keep)], r, c)
				h.buf = keep
				return
			}
			h.write(rest[:at], r, c)
			h.end(c)
			if rest[at:at+n] == harmonyStart {
				n = 0 // the next header begins with it
			}
			rest = rest[at+n:]
		}
	}
}

// finish ends the answer: a header cut short is content; a body cut
// short ends its message (a call gets its end marker).
func (h *harmony) finish(r, c *strings.Builder) {
	held := h.buf
	h.buf = ""
	switch h.state {
	case hHeader: // text cut before its <|message|>: a header's markers are not content
		if !strings.HasPrefix(strings.TrimSpace(held), "<|") {
			c.WriteString(held)
		}
	case hBody:
		h.write(held, r, c)
		h.end(c)
	}
}

// begin starts the message whose header is hdr: its kind from the
// channel and recipient, and a call's header in the template's form.
func (h *harmony) begin(hdr string, c *strings.Builder) {
	h.state, h.kind = hBody, toContent
	channel, recipient := harmonyHeader(hdr)
	switch {
	case strings.HasPrefix(recipient, "functions.") && len(recipient) > len("functions."):
		h.kind = toCall
		c.WriteString(HarmonyCallPrefix + recipient[len("functions."):] + harmonyChannel + "commentary json" + harmonyMessage)
	case channel == "analysis":
		h.kind = toReasoning
	}
}

// end ends the current message; the next header follows.
func (h *harmony) end(c *strings.Builder) {
	if h.kind == toCall {
		c.WriteString(harmonyCall)
	}
	h.state, h.kind = hHeader, toContent
}

func (h *harmony) write(text string, r, c *strings.Builder) {
	if h.kind == toReasoning {
		r.WriteString(text)
		return
	}
	c.WriteString(text)
}

// harmonyHeader reads a header's channel (the word after <|channel|>)
// and recipient (the word after " to="), either may be "".
func harmonyHeader(hdr string) (channel, recipient string) {
	word := func(s string) string {
		end := strings.IndexAny(s, " \t\n<")
		if end < 0 {
			end = len(s)
		}
		return s[:end]
	}
	if i := strings.Index(hdr, harmonyChannel); i >= 0 {
		channel = word(hdr[i+len(harmonyChannel):])
	}
	if i := strings.Index(hdr, "to="); i >= 0 && (i == 0 || strings.ContainsRune(" \t\n>", rune(hdr[i-1]))) {
		recipient = word(hdr[i+len("to="):])
	}
	return channel, recipient
}

// markerTail is the end of text that may begin one of harmonyEnds.
func markerTail(text string) string {
	longest := 0
	for _, m := range harmonyEnds {
		for n := min(len(m)-1, len(text)); n > longest; n-- {
			if strings.HasSuffix(text, m[:n]) {
				longest = n
				break
			}
		}
	}
	return text[len(text)-longest:]
}
