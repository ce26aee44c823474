package toolparse

// The granite format (IBM Granite 3.x): the calls are a JSON list of call
// objects after <|tool_call|>, as Granite 3.3's template asks ("respond
// only with <|tool_call|> followed by a JSON list of tools used"):
//
//	<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}]
//
// As vLLM's granite parser reads it, the list may also follow <tool_call>
// (Granite 3.1 writes the string), or <|tool_call|> then <tool_call>, or
// nothing at all: a list at the start of the answer (only whitespace
// before it) is calls too. That is how Granite 3.0 writes them, and how
// the text reads when <|tool_call|>, a special token, is skipped. Unlike
// vLLM, which reads a list only at the start of the answer and makes the
// whole answer content if anything follows it, a marker later in the text
// opens a list too (content before it stays content), and text after the
// list is content.
//
// The list must hold call objects: "[]" or a list of anything else is
// content. A call object is read as Hermes' is (callObject): "arguments"
// (or "parameters") an object or a string holding one, absent for {}.

const (
	graniteToken  = "<|tool_call|>" // Granite 3.0, 3.2 and 3.3 (a special token)
	graniteString = "<tool_call>"   // Granite 3.1
)

func newGranite(tools map[string]bool) Parser {
	return newCallList(tools, listSyntax{
		markers: []string{graniteToken, graniteString},
		then:    graniteString,
		bare:    true,
	})
}

// listSyntax says where a callList's list of call objects may begin.
type listSyntax struct {
	// markers open a list anywhere in the text: after a marker come
	// whitespace and '[', or, when the marker ends with '[', the list's
	// contents right away.
	markers []string
	// then may come once between markers[0] and the list ("" for none).
	then string
	// bare: a list at the start of the text, with only whitespace before
	// it, needs no marker.
	bare bool
}

type listState uint8

const (
	jText  listState = iota
	jOpen            // after a marker: whitespace, then '[' (or then)
	jThen            // inside then
	jList            // after '[': whitespace, then a call object
	jCall            // inside a call object
	jNext            // after a call: ',' or ']'
	jComma           // after ',': whitespace, then the next call object
)

// callList reads the formats whose calls are a JSON list of call objects
// after a marker: granite and phi4_mini_json.
type callList struct {
	reader
	syntax listSyntax
	st     listState
	m      matcher
	// thenOK: then may come next (markers[0] was read, then was not).
	thenOK bool
	then   []byte // the part of then read so far
}

func newCallList(tools map[string]bool, s listSyntax) Parser {
	p := &callList{reader: reader{tools: tools}, syntax: s, m: matcher{markers: s.markers}}
	p.m.out = &p.em
	return p
}

func (p *callList) Push(text string) Delta {
	for i := 0; i < len(text); i++ {
		p.step(text[i])
	}
	return p.take()
}

func (p *callList) Finish() Delta {
	if p.st == jText {
		p.m.flush()
	}
	// A list cut after a complete call (jNext) holds nothing back.
	return p.finish(p.st != jText && p.st != jNext)
}

func (p *callList) step(b byte) {
	switch p.st {
	case jText:
		// At the start (only whitespace before), '[' may begin a list
		// without a marker.
		if p.syntax.bare && b == '[' && !p.em.wrote && p.em.numCalls == 0 && len(p.m.held) == 0 {
			p.st = jList
			p.hold(b)
			return
		}
		i, found := p.m.step(b)
		if !found {
			return
		}
		mk := p.syntax.markers[i]
		p.hold([]byte(mk)...)
		p.st, p.thenOK = jOpen, i == 0 && p.syntax.then != ""
		if mk[len(mk)-1] == '[' {
			p.st = jList
		}
	case jOpen:
		switch {
		case isSpace(b):
			p.hold(b)
		case b == '[':
			p.st = jList
			p.hold(b)
		case p.thenOK && b == p.syntax.then[0]:
			p.st, p.then = jThen, append(p.then[:0], b)
			p.hold(b)
		default:
			p.abandon()
			p.text(b)
		}
	case jThen:
		p.then = append(p.then, b)
		switch t := string(p.then); {
		case t == p.syntax.then:
			p.hold(b)
			p.st, p.thenOK = jOpen, false
		case isPrefix(t, p.syntax.then):
			p.hold(b)
		default:
			// Not then: the block up to it is content, and its bytes are
			// text again (they may open a list).
			p.raw = p.raw[:len(p.raw)-(len(p.then)-1)]
			p.abandon()
			p.st = jText
			for _, c := range append([]byte(nil), p.then...) {
				p.step(c)
			}
		}
	case jList, jComma:
		switch {
		case isSpace(b):
			p.hold(b)
		case b == '{':
			p.st = jCall
			p.call(p.startObject(b), b)
		default:
			p.abandon()
			p.text(b)
		}
	case jCall:
		p.call(p.stepObject(b), b)
	case jNext:
		switch {
		case isSpace(b):
			p.em.text([]byte{b})
		case b == ',':
			p.st = jComma
			p.hold(b)
		case b == ']':
			p.em.dropSpace() // whitespace inside the list is not content
			p.st = jText
		default:
			p.text(b)
		}
	}
}

// call goes on after a byte of a call object.
func (p *callList) call(st objStatus, b byte) {
	switch st {
	case objDone:
		p.st = jNext
	case objBad:
		p.text(b)
	case objRejected:
		p.st = jText
	}
}

// text reads b as text.
func (p *callList) text(b byte) {
	p.st = jText
	p.step(b)
}
