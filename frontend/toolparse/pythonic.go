package toolparse

// The pythonic format (Llama 3.2 and 4 with vLLM's pythonic templates,
// ToolACE): the answer is a Python list of calls with keyword arguments
// whose values are literals,
//
//	[get_weather(city="Paris"), get_time(zone='UTC', hours=[1, 2])]
//
// The arguments become JSON: strings, numbers, True/False/None, lists and
// dicts with string keys. As in vLLM, a call is read only when the answer
// starts with '[' and the list is whole: the calls go out when the list
// closes, all of them, or, if any part does not parse or names an
// undeclared tool, the list is content. Text after the list is content
// (vLLM makes the whole answer content then). Llama 4's
// <|python_start|> markers are special tokens, not in the text by
// default.

type pyState uint8

const (
	pyStart pyState = iota // only whitespace so far
	pyList                 // inside the list
	pyText                 // plain text to the end
)

type pythonic struct {
	em    emitter
	tools map[string]bool
	st    pyState
	list  []byte // the list so far
}

func newPythonic(tools map[string]bool) Parser { return &pythonic{tools: tools} }

func (p *pythonic) Push(text string) Delta {
	for i := 0; i < len(text) && p.st == pyStart; i++ {
		switch b := text[i]; {
		case isSpace(b):
			p.em.text([]byte{b})
		case b == '[':
			p.st = pyList
		default:
			p.st = pyText
		}
		if p.st != pyStart {
			text = text[i:]
		}
	}
	switch p.st {
	case pyList:
		p.list = append(p.list, text...)
		p.read()
	case pyText:
		p.em.text([]byte(text))
	}
	return p.em.take()
}

func (p *pythonic) Finish() Delta {
	if p.st == pyList { // never closed
		p.em.text(p.list)
	}
	p.em.finish()
	return p.em.take()
}

// read parses the list so far and, once it is whole, sends its calls (or
// gives it back as content) and what follows it as content.
func (p *pythonic) read() {
	calls, n, err := parseCalls(p.list)
	if err == errIncomplete {
		return
	}
	p.st = pyText
	if err != nil {
		p.em.text(p.list)
		return
	}
	for _, c := range calls {
		if !p.tools[c.Name] {
			p.em.text(p.list)
			return
		}
	}
	for _, c := range calls {
		p.em.begin(c.Name)
		p.em.args([]byte(c.Arguments))
		p.em.end()
	}
	p.em.text(p.list[n:])
}
