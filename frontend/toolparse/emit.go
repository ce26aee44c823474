package toolparse

// emitter builds a parser's Deltas: content, with the whitespace next to
// calls held back, and the calls' deltas.
type emitter struct {
	content []byte
	calls   []CallDelta
	// ws is whitespace not yet sent: content if content follows it (or
	// the text ends with no call before it), nothing if a call does.
	ws []byte
	// afterCall: a call ended and no content came since.
	afterCall bool
	// wrote: content other than whitespace was written.
	wrote    bool
	numCalls int
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// text adds content.
func (e *emitter) text(p []byte) {
	for _, b := range p {
		if isSpace(b) {
			e.ws = append(e.ws, b)
			continue
		}
		e.content = append(append(e.content, e.ws...), b)
		e.ws, e.afterCall, e.wrote = e.ws[:0], false, true
	}
}

// begin starts a call of name; the whitespace before it goes.
func (e *emitter) begin(name string) {
	e.ws = e.ws[:0]
	e.calls = append(e.calls, CallDelta{Index: e.numCalls, Name: name})
	e.numCalls++
}

// args adds a fragment to the current call's arguments.
func (e *emitter) args(p []byte) {
	if len(p) == 0 {
		return
	}
	d := Delta{Calls: e.calls}
	d.add(CallDelta{Index: e.numCalls - 1, Arguments: string(p)})
	e.calls = d.Calls
}

// end ends the current call.
func (e *emitter) end() { e.afterCall = true }

// dropSpace drops the whitespace held since the last call (before a
// marker that closes it).
func (e *emitter) dropSpace() {
	if e.afterCall {
		e.ws = e.ws[:0]
	}
}

// finish ends the text: whitespace after content is content, after a
// call it goes.
func (e *emitter) finish() {
	if !e.afterCall {
		e.content = append(e.content, e.ws...)
	}
	e.ws = e.ws[:0]
}

// take returns what was built since the last take.
func (e *emitter) take() Delta {
	d := Delta{Content: string(e.content), Calls: e.calls}
	e.content, e.calls = e.content[:0], nil
	return d
}

// matcher finds markers in text that arrives in pieces: it holds back a
// tail that may begin one, and writes the rest to out as text.
type matcher struct {
	markers []string
	held    []byte
	out     *emitter
}

// step adds b and reports whether a marker is now complete (then which).
func (m *matcher) step(b byte) (marker int, found bool) {
	m.held = append(m.held, b)
	n := 0
	for ; n < len(m.held); n++ {
		rest, prefix := m.held[n:], false
		for i, mk := range m.markers {
			if len(rest) <= len(mk) && string(rest) == mk[:len(rest)] {
				if len(rest) == len(mk) {
					m.out.text(m.held[:n])
					m.held = m.held[:0]
					return i, true
				}
				prefix = true
			}
		}
		if prefix {
			break
		}
	}
	m.out.text(m.held[:n])
	m.held = append(m.held[:0], m.held[n:]...)
	return 0, false
}

// flush writes what is held as text.
func (m *matcher) flush() {
	m.out.text(m.held)
	m.held = m.held[:0]
}
