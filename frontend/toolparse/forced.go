package toolparse

// Forced answers: tool_choice "required" or a named function. There the
// answer is not free text in a model's syntax but JSON that a constraint
// shapes, as vLLM shapes it:
//
//	named:    {"city": "Paris"}                              the arguments of that function
//	required: [{"name": "get_weather", "parameters": {…}}, …] a list of calls
//
// Their Parsers stream the calls as the other formats' do (a call's name
// in its first delta, then its arguments, compact, as they come), so a
// forced answer streams call by call instead of at its end. The rules of
// the package hold: text that is not a call (the constraint never lets
// one through) is content, and a call cut short keeps the arguments it
// has.

// Named returns a Parser for the answer of tool_choice naming function
// name: the whole answer is the call's arguments, a JSON object. The call
// starts at the object's '{'; whitespace before and after it is dropped.
func Named(name string) Parser { return &named{name: name} }

type namedState uint8

const (
	nStart namedState = iota // before the object: whitespace, then '{'
	nCall                    // inside the object
	nText                    // after it, or the answer is not an object
)

type named struct {
	em   emitter
	name string
	st   namedState
	v    value
	args []byte // the arguments read since the last take, compact
}

func (n *named) Push(text string) Delta {
	for i := 0; i < len(text); i++ {
		n.step(text[i])
	}
	return n.take()
}

func (n *named) Finish() Delta {
	d := n.take()
	if n.st == nCall { // cut short: the call keeps the arguments it has
		n.em.end()
	}
	n.em.finish()
	d.Append(n.em.take())
	return d
}

func (n *named) step(b byte) {
	switch n.st {
	case nStart:
		if b != '{' {
			if !isSpace(b) {
				n.st = nText
			}
			n.em.text([]byte{b})
			return
		}
		n.st = nCall
		n.em.begin(n.name)
		n.step(b)
	case nCall:
		st, keep := n.v.step(b)
		switch {
		case st == bad: // the call ends with what it has; the rest is content
			n.em.args(n.args)
			n.args = n.args[:0]
			n.em.end()
			n.st = nText
			n.em.text([]byte{b})
			return
		case keep:
			n.args = append(n.args, b)
		}
		if st == done {
			n.em.args(n.args)
			n.args = n.args[:0]
			n.em.end()
			n.st = nText
		}
	case nText:
		n.em.text([]byte{b})
	}
}

// take returns what was built since the last take, arguments included.
func (n *named) take() Delta {
	n.em.args(n.args)
	n.args = n.args[:0]
	return n.em.take()
}

// Required returns a Parser for the answer of tool_choice "required": a
// JSON list of {"name": …, "parameters": {…}} objects (call objects as
// llama3_json reads them, "arguments" accepted too), each a call of one
// of tools. A call starts once its name is read; the list's brackets,
// commas and whitespace are dropped.
func Required(tools []string) Parser {
	set := make(map[string]bool, len(tools))
	for _, t := range tools {
		set[t] = true
	}
	return &required{reader: reader{tools: set}}
}

type requiredState uint8

const (
	qStart requiredState = iota // before '['
	qFirst                      // after '[': whitespace, then '{'
	qCall                       // inside a call object
	qAfter                      // after a call: ',' or ']'
	qNext                       // after ',': whitespace, then '{'
	qText                       // after ']', or the answer stopped being a list of calls
)

type required struct {
	reader
	st requiredState
}

func (q *required) Push(text string) Delta {
	for i := 0; i < len(text); i++ {
		q.step(text[i])
	}
	return q.take()
}

// Finish ends the answer. A list cut before its first call's name is
// content (the answer is not calls); a later call cut before its name is
// dropped, as the start of a call is no text.
func (q *required) Finish() Delta {
	if q.em.numCalls > 0 && !q.committed {
		q.raw = q.raw[:0]
	}
	return q.finish(q.st != qAfter && q.st != qText)
}

func (q *required) step(b byte) {
	switch q.st {
	case qStart, qFirst, qNext:
		switch {
		case isSpace(b):
			q.hold(b)
		case b == '[' && q.st == qStart:
			q.hold(b)
			q.st = qFirst
		case b == '{' && q.st != qStart:
			q.st = qCall
			q.startObject(b)
		default:
			q.abandon()
			q.text(b)
		}
	case qCall:
		switch q.stepObject(b) {
		case objDone:
			q.st = qAfter
		case objBad:
			q.text(b)
		case objRejected:
			q.st = qText
		}
	case qAfter:
		switch {
		case isSpace(b):
			q.em.text([]byte{b})
		case b == ',':
			q.hold(b)
			q.st = qNext
		case b == ']':
			q.st = qText
		default:
			q.text(b)
		}
	case qText:
		q.em.text([]byte{b})
	}
}

// text reads b, and all that follows, as content.
func (q *required) text(b byte) {
	q.st = qText
	q.em.text([]byte{b})
}
