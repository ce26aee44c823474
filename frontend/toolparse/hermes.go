package toolparse

// The hermes format (Hermes 2 Pro and 3, Qwen2.5 and Qwen3, SmolLM3):
// calls anywhere in the text, each a JSON object between tags,
//
//	<tool_call>
//	{"name": "get_weather", "arguments": {"city": "Paris"}}
//	</tool_call>
//
// The closing tag may be missing at the end of the text (vLLM accepts
// that too). Unlike vLLM, text between and after calls is content, not
// dropped.

const (
	hermesOpen  = "<tool_call>"
	hermesClose = "</tool_call>"
)

type hermesState uint8

const (
	hText  hermesState = iota
	hOpen              // after <tool_call>: whitespace, then '{'
	hCall              // inside the call object
	hClose             // after the object: whitespace, then </tool_call>
)

type hermes struct {
	reader
	st   hermesState
	m    matcher
	tail []byte // the part of </tool_call> read so far
}

func newHermes(tools map[string]bool) Parser {
	h := &hermes{reader: reader{tools: tools}, m: matcher{markers: []string{hermesOpen}}}
	h.m.out = &h.em
	return h
}

func (h *hermes) Push(text string) Delta {
	for i := 0; i < len(text); i++ {
		h.step(text[i])
	}
	return h.take()
}

func (h *hermes) Finish() Delta {
	switch h.st {
	case hText:
		h.m.flush()
	case hClose:
		h.em.dropSpace() // a cut </tool_call> is not content
	}
	return h.finish(h.st == hOpen || h.st == hCall)
}

func (h *hermes) step(b byte) {
	switch h.st {
	case hText:
		_, found := h.m.step(b)
		if found {
			h.st = hOpen
			h.hold([]byte(hermesOpen)...)
		}
	case hOpen:
		switch {
		case isSpace(b):
			h.hold(b)
		case b == '{':
			h.st = hCall
			h.startObject(b)
		default:
			h.abandon()
			h.text(b)
		}
	case hCall:
		switch h.stepObject(b) {
		case objDone:
			h.st, h.tail = hClose, h.tail[:0]
		case objBad:
			h.text(b)
		case objRejected:
			h.st = hText
		}
	case hClose:
		if len(h.tail) == 0 && isSpace(b) {
			h.em.text([]byte{b})
			return
		}
		h.tail = append(h.tail, b)
		switch {
		case string(h.tail) == hermesClose:
			h.em.dropSpace()
			h.st = hText
		case hermesClose[:len(h.tail)] != string(h.tail):
			// Not the closing tag: text (which may open the next call).
			h.st = hText
			for _, c := range append([]byte(nil), h.tail...) {
				h.step(c)
			}
		}
	}
}

// text reads b as text.
func (h *hermes) text(b byte) {
	h.st = hText
	h.step(b)
}
