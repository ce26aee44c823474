package toolparse

// The openai format (vLLM's openai parser; gpt-oss): a call is a harmony
// message to a function, in the form the gpt-oss chat template writes it
// and the reasoning package's harmony splitter puts it into the content,
//
//	<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Paris"}<|call|>
//
// the function's name after "to=functions.", the header up to
// <|message|>, then the arguments as a JSON object (streamed), then
// <|call|> (which may be missing at the end of the text). The markers
// are special tokens: the text keeps them (Format.KeepSpecial).

const (
	openaiOpen    = "<|start|>assistant to=functions."
	openaiMessage = "<|message|>"
	openaiCall    = "<|call|>"
	// openaiMaxHeader bounds the header between the name and <|message|>.
	openaiMaxHeader = 128
)

type openaiState uint8

const (
	oText     openaiState = iota
	oName                 // the function's name
	oHeader               // the rest of the header, up to <|message|>
	oArgsOpen             // whitespace, then '{'
	oArgs                 // the arguments
	oClose                // <|call|>
)

type openaiCalls struct {
	reader
	st   openaiState
	m    matcher
	name []byte
	tag  []byte // the header after the name, or the part of <|call|> read
	args value
}

func newOpenAI(tools map[string]bool) Parser {
	p := &openaiCalls{reader: reader{tools: tools}, m: matcher{markers: []string{openaiOpen}}}
	p.m.out = &p.em
	return p
}

func (p *openaiCalls) Push(text string) Delta {
	for i := 0; i < len(text); i++ {
		p.step(text[i])
	}
	return p.take()
}

func (p *openaiCalls) Finish() Delta {
	switch p.st {
	case oText:
		p.m.flush()
	case oArgs: // cut in its arguments: the call keeps what it has
		p.endCall()
		return p.finish(false)
	case oClose: // a cut <|call|> is not content
		return p.finish(false)
	}
	return p.finish(p.st != oText)
}

func (p *openaiCalls) step(b byte) {
	switch p.st {
	case oText:
		if _, found := p.m.step(b); found {
			p.st, p.name = oName, p.name[:0]
			p.hold([]byte(openaiOpen)...)
		}
	case oName:
		switch {
		case isNameByte(b) && b != '.' || b == '.' && len(p.name) > 0:
			p.name = append(p.name, b)
			p.hold(b)
		case b == '<' || b == ' ':
			if len(p.name) == 0 || !p.tools[string(p.name)] {
				p.abandon()
				p.text(b)
				return
			}
			p.st, p.tag = oHeader, append(p.tag[:0], b)
			p.hold(b)
		default:
			p.abandon()
			p.text(b)
		}
	case oHeader:
		p.tag = append(p.tag, b)
		p.hold(b)
		switch {
		case len(p.tag) >= len(openaiMessage) && string(p.tag[len(p.tag)-len(openaiMessage):]) == openaiMessage:
			p.st = oArgsOpen
		case len(p.tag) > openaiMaxHeader:
			p.abandon()
			p.st = oText
		}
	case oArgsOpen:
		switch {
		case isSpace(b):
			p.hold(b)
		case b == '{':
			p.commit(string(p.name))
			p.args = value{stack: p.args.stack[:0]}
			p.args.step(b)
			p.em.args([]byte{b})
			p.st = oArgs
		default:
			p.abandon()
			p.text(b)
		}
	case oArgs:
		st, keep := p.args.step(b)
		if st == bad { // the call ends with the arguments it has
			p.endCall()
			p.text(b)
			return
		}
		if keep {
			p.em.args([]byte{b})
		}
		if st == done {
			p.endCall()
			p.st, p.tag = oClose, p.tag[:0]
		}
	case oClose:
		t := append(p.tag, b)
		switch {
		case string(t) == openaiCall:
			p.st = oText
		case isPrefix(string(t), openaiCall):
			p.tag = t
		case len(p.tag) == 0 && isSpace(b):
			p.em.text([]byte{b})
		default: // no <|call|>: what was read of it is content
			p.st = oText
			p.em.text(p.tag)
			p.step(b)
		}
	}
}

// text reads b as text.
func (p *openaiCalls) text(b byte) {
	p.st = oText
	p.step(b)
}
