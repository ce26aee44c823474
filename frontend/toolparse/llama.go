package toolparse

// The llama3_json format (Llama 3.1, 3.2, 3.3 and 4 with JSON tool
// calling): the answer is calls, optionally after <|python_tag|>, each a
// JSON object with "parameters" (or "arguments"), several separated by
// ";" or whitespace:
//
//	<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": …}
//
// As vLLM streams it, a call is read only at the start of the answer or
// after <|python_tag|>: a JSON object later in prose stays content.
// <|python_tag|> is a special token, so it is in the text only with
// skip_special_tokens false; without it the answer starts with '{'.

const llamaTag = "<|python_tag|>"

type llamaState uint8

const (
	lText  llamaState = iota
	lTag              // after <|python_tag|>: whitespace, then '{'
	lCall             // inside a call object
	lAfter            // after a call: whitespace, ';' or the next '{'
	lSemi             // after ';': whitespace, then '{'
)

type llama struct {
	reader
	st llamaState
	m  matcher
}

func newLlama(tools map[string]bool) Parser {
	l := &llama{reader: reader{tools: tools}, m: matcher{markers: []string{llamaTag}}}
	l.m.out = &l.em
	return l
}

func (l *llama) Push(text string) Delta {
	for i := 0; i < len(text); i++ {
		l.step(text[i])
	}
	return l.take()
}

func (l *llama) Finish() Delta {
	if l.st == lText {
		l.m.flush()
	}
	return l.finish(l.st == lTag || l.st == lCall || l.st == lSemi)
}

func (l *llama) step(b byte) {
	switch l.st {
	case lText:
		// At the start (only whitespace before), '{' begins a call;
		// later only <|python_tag|> does.
		if b == '{' && !l.em.wrote && l.em.numCalls == 0 && len(l.m.held) == 0 {
			l.call(b)
			return
		}
		if _, found := l.m.step(b); found {
			l.st = lTag
			l.hold([]byte(llamaTag)...)
		}
	case lTag, lSemi:
		switch {
		case isSpace(b):
			l.hold(b)
		case b == '{':
			l.call(b)
		default:
			l.abandon()
			l.text(b)
		}
	case lCall:
		switch l.stepObject(b) {
		case objDone:
			l.st = lAfter
		case objBad:
			l.text(b)
		case objRejected:
			l.st = lText
		}
	case lAfter:
		switch {
		case isSpace(b):
			l.em.text([]byte{b})
		case b == ';':
			l.st = lSemi
			l.hold(b)
		case b == '{':
			l.call(b)
		default:
			l.text(b)
		}
	}
}

// call starts a call object at b.
func (l *llama) call(b byte) {
	l.st = lCall
	l.startObject(b)
}

// text reads b as text, after a call or a block that was not one.
func (l *llama) text(b byte) {
	l.st = lText
	l.step(b)
}
