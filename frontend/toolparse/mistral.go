package toolparse

// The mistral format: content, then [TOOL_CALLS] and the calls, in one of
// two forms. Mistral 7B v0.3 and Nemo (tokenizers before v11) write a JSON
// list of call objects (Nemo's carry an "id", ignored):
//
//	[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]
//
// Newer models (Mistral Small 3.2, Devstral, Ministral 3) write each call
// after its own [TOOL_CALLS]: the name, an optional [CALL_ID] and id, then
// [ARGS] and the arguments (vLLM's text without special tokens has no
// [ARGS]: the name ends at '{'):
//
//	[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}
//
// [TOOL_CALLS] is a special token: it is in the text only with
// skip_special_tokens false (Format.KeepSpecial).

const (
	mistralOpen   = "[TOOL_CALLS]"
	mistralArgs   = "[ARGS]"
	mistralCallID = "[CALL_ID]"
)

type mistralState uint8

const (
	mText      mistralState = iota
	mOpen                   // after [TOOL_CALLS]: '[' or a name
	mList                   // after '[': a call object
	mListCall               // inside a call object of the list
	mListNext               // after a call of the list: ',' or ']'
	mListComma              // after ',': the next call object
	mName                   // inside a name
	mTag                    // inside [ARGS] or [CALL_ID]
	mID                     // inside a call id
	mArgsOpen               // after [ARGS]: whitespace, then '{'
	mArgs                   // inside the arguments
)

type mistral struct {
	reader
	st   mistralState
	m    matcher
	name []byte
	tag  []byte
	args value
}

func newMistral(tools map[string]bool) Parser {
	p := &mistral{reader: reader{tools: tools}, m: matcher{markers: []string{mistralOpen}}}
	p.m.out = &p.em
	return p
}

func (p *mistral) Push(text string) Delta {
	for i := 0; i < len(text); i++ {
		p.step(text[i])
	}
	return p.take()
}

func (p *mistral) Finish() Delta {
	switch p.st {
	case mText:
		p.m.flush()
	case mListNext: // a list cut after a complete call
		return p.finish(false)
	case mArgs: // a call cut in its arguments
		p.endCall()
		return p.finish(false)
	}
	return p.finish(p.st != mText)
}

func (p *mistral) step(b byte) {
	switch p.st {
	case mText:
		_, found := p.m.step(b)
		if found {
			p.st = mOpen
			p.hold([]byte(mistralOpen)...)
		}
	case mOpen:
		switch {
		case isSpace(b):
			p.hold(b)
		case b == '[':
			p.st = mList
			p.hold(b)
		case isNameByte(b):
			p.st, p.name = mName, append(p.name[:0], b)
			p.hold(b)
		default:
			p.abandon()
			p.text(b)
		}
	case mList, mListComma:
		switch {
		case isSpace(b):
			p.hold(b)
		case b == '{':
			p.st = mListCall
			p.listCall(p.startObject(b), b)
		default:
			p.abandon()
			p.text(b)
		}
	case mListCall:
		p.listCall(p.stepObject(b), b)
	case mListNext:
		switch {
		case isSpace(b):
			p.em.text([]byte{b})
		case b == ',':
			p.st = mListComma
			p.hold(b)
		case b == ']':
			p.st = mText
		default:
			p.text(b)
		}
	case mName:
		switch {
		case isNameByte(b):
			p.name = append(p.name, b)
			p.hold(b)
		case b == '[':
			p.st, p.tag = mTag, append(p.tag[:0], b)
			p.hold(b)
		case b == '{':
			p.nameDone(b)
		default:
			p.abandon()
			p.text(b)
		}
	case mTag:
		t := string(append(p.tag, b))
		switch {
		case t == mistralArgs:
			p.hold(b)
			if !p.tools[string(p.name)] {
				p.reject()
				return
			}
			p.st = mArgsOpen
		case t == mistralCallID:
			p.hold(b)
			p.st = mID
		case isPrefix(t, mistralArgs) || isPrefix(t, mistralCallID):
			p.tag = append(p.tag, b)
			p.hold(b)
		default:
			p.abandon()
			p.text(b)
		}
	case mID:
		switch {
		case isNameByte(b):
			p.hold(b)
		case b == '[':
			p.st, p.tag = mTag, append(p.tag[:0], b)
			p.hold(b)
		default:
			p.abandon()
			p.text(b)
		}
	case mArgsOpen:
		switch {
		case isSpace(b):
			p.hold(b)
		case b == '{':
			p.nameDone(b)
		default:
			p.abandon()
			p.text(b)
		}
	case mArgs:
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
			p.st = mText
		}
	}
}

// listCall goes on after a byte of a call object in the list form.
func (p *mistral) listCall(st objStatus, b byte) {
	switch st {
	case objDone:
		p.st = mListNext
	case objBad:
		p.text(b)
	case objRejected:
		p.st = mText
	}
}

// nameDone starts the arguments of the call named so far, at their '{'.
func (p *mistral) nameDone(b byte) {
	if !p.tools[string(p.name)] {
		p.hold(b)
		p.reject()
		return
	}
	p.commit(string(p.name))
	p.args = value{stack: p.args.stack[:0]}
	p.args.step(b)
	p.em.args([]byte{b})
	p.st = mArgs
}

// reject gives the block back as content, read up to and with the last
// byte: it names no declared tool.
func (p *mistral) reject() {
	p.abandon()
	p.st = mText
}

// text reads b as text.
func (p *mistral) text(b byte) {
	p.st = mText
	p.step(b)
}

// isNameByte reports whether b may be in a function name or call id.
func isNameByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || isDigit(b) || b == '_' || b == '-' || b == '.'
}

func isPrefix(s, of string) bool { return len(s) <= len(of) && of[:len(s)] == s }
