package toolparse

// reader holds what the JSON formats share: the emitter, the tools, and
// the call block being read.
type reader struct {
	em    emitter
	tools map[string]bool
	// raw is the block's text so far (its marker included) while none of
	// it is committed: content again if it turns out not to be a call.
	raw []byte
	obj callObject
	// committed: the block's call was accepted and its first delta sent.
	committed bool
}

// objStatus is what a byte did to a call object being read.
type objStatus uint8

const (
	objMore     objStatus = iota
	objDone               // the call is complete
	objBad                // the byte is not part of a call: read it as text
	objRejected           // the byte was read, but the block is not a call: go on as text
)

// hold adds p to the uncommitted block.
func (r *reader) hold(p ...byte) { r.raw = append(r.raw, p...) }

// startObject begins a call object whose first byte is b.
func (r *reader) startObject(b byte) objStatus {
	r.obj.reset()
	return r.stepObject(b)
}

// stepObject reads b into the call object. The call is committed (its
// first delta sent) once its name is read and is a declared tool's.
func (r *reader) stepObject(b byte) objStatus {
	st := r.obj.step(b)
	if st == bad {
		r.abandon()
		return objBad
	}
	if !r.committed {
		r.hold(b)
		if r.obj.hasName {
			if !r.tools[r.obj.name] {
				r.abandon()
				return objRejected
			}
			r.commit(r.obj.name)
		}
	}
	if st == done {
		if !r.committed { // an object without a name
			r.abandon()
			return objRejected
		}
		r.em.args(r.obj.takeArgs())
		r.endCall()
		return objDone
	}
	return objMore
}

// commit starts the call of name: its first delta goes out, the held
// block is no longer content.
func (r *reader) commit(name string) {
	r.committed = true
	r.raw = r.raw[:0]
	r.em.begin(name)
}

func (r *reader) endCall() {
	r.committed = false
	r.em.end()
}

// drain sends the arguments read so far of a committed call.
func (r *reader) drain() {
	if r.committed {
		r.em.args(r.obj.takeArgs())
	}
}

// abandon ends the block that stopped being a call: a committed call ends
// with the arguments it has; an uncommitted block is content again.
func (r *reader) abandon() {
	if r.committed {
		r.drain()
		r.endCall()
		return
	}
	r.em.text(r.raw)
	r.raw = r.raw[:0]
}

// take returns the Delta built so far, arguments read included.
func (r *reader) take() Delta {
	r.drain()
	return r.em.take()
}

// finish ends the text inside a block (inBlock) or not.
func (r *reader) finish(inBlock bool) Delta {
	if inBlock {
		r.abandon()
	}
	r.em.finish()
	return r.em.take()
}
