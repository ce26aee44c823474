package toolparse

import (
	"bytes"
	"encoding/json"
)

type objState uint8

const (
	oStart      objState = iota // before '{'
	oKeyFirst                   // after '{': a key or '}'
	oKeyNext                    // after ',': a key
	oKey                        // inside a key
	oColon                      // after a key
	oValueBegin                 // after ':'
	oValue                      // inside a member's value
	oAfter                      // after a member: ',' or '}'
)

type field uint8

const (
	fOther      field = iota // a member the call does not use: read, then dropped
	fName                    // "name": a string
	fArgs                    // "arguments" or "parameters" as an object: streamed
	fArgsString              // the same as a string holding the object's JSON
)

// callObject reads one call written as a JSON object, {"name": …,
// "arguments": {…}} ("parameters" for Llama 3), members in any order,
// others ignored. The arguments' compact bytes collect in args for the
// caller to take as they come.
type callObject struct {
	st      objState
	v       value  // the key or member value being read
	raw     []byte // the key, name or string arguments being read, as written
	field   field
	name    string
	hasName bool
	hasArgs bool
	args    []byte
}

// reset readies c for a new object, keeping its buffers.
func (c *callObject) reset() {
	*c = callObject{v: value{stack: c.v.stack[:0]}, raw: c.raw[:0], args: c.args[:0]}
}

// step reads b: more, done (the object closed with b), or bad (b cannot
// be part of a call object; it is not consumed). A done object without a
// name is not a call (the caller checks hasName).
func (c *callObject) step(b byte) status {
	switch c.st {
	case oStart:
		if b != '{' {
			return bad
		}
		c.st = oKeyFirst
		return more
	case oKeyFirst, oKeyNext:
		switch {
		case isSpace(b):
			return more
		case b == '}' && c.st == oKeyFirst:
			return c.close()
		case b == '"':
			c.st, c.v = oKey, value{stack: c.v.stack[:0]}
			c.raw = append(c.raw[:0], b)
			c.v.step(b)
			return more
		}
		return bad
	case oKey:
		st, _ := c.v.step(b)
		if st == bad {
			return bad
		}
		c.raw = append(c.raw, b)
		if st == done {
			c.field = c.fieldOf(c.raw)
			c.st = oColon
		}
		return more
	case oColon:
		switch {
		case isSpace(b):
			return more
		case b == ':':
			c.st = oValueBegin
			return more
		}
		return bad
	case oValueBegin:
		if isSpace(b) {
			return more
		}
		switch {
		case c.field == fName && b != '"':
			return bad
		case c.field == fArgs && b == '"':
			c.field = fArgsString
		case c.field == fArgs && b != '{':
			return bad
		}
		c.st, c.v = oValue, value{stack: c.v.stack[:0]}
		c.raw = c.raw[:0]
		return c.value(b)
	case oValue:
		return c.value(b)
	case oAfter:
		switch {
		case isSpace(b):
			return more
		case b == ',':
			c.st = oKeyNext
			return more
		case b == '}':
			return c.close()
		}
		return bad
	}
	return bad
}

// fieldOf returns which field a member's key (a JSON string) names.
func (c *callObject) fieldOf(key []byte) field {
	var k string
	if json.Unmarshal(key, &k) != nil {
		return fOther
	}
	switch {
	case k == "name" && !c.hasName:
		return fName
	case (k == "arguments" || k == "parameters") && !c.hasArgs:
		return fArgs
	}
	return fOther
}

// value reads b as part of the current member's value.
func (c *callObject) value(b byte) status {
	st, keep := c.v.step(b)
	switch st {
	case bad:
		return bad
	case doneBefore: // a number: b comes after it
		c.st = oAfter
		return c.step(b)
	}
	switch c.field {
	case fArgs:
		if keep {
			c.args = append(c.args, b)
		}
	case fName, fArgsString:
		c.raw = append(c.raw, b)
	}
	if st != done {
		return more
	}
	c.st = oAfter
	switch c.field {
	case fName:
		if json.Unmarshal(c.raw, &c.name) != nil {
			return bad
		}
		c.hasName = true
	case fArgs:
		c.hasArgs = true
	case fArgsString:
		// Arguments sent as a string of JSON, as OpenAI sends them: the
		// string must hold an object.
		var s string
		var buf bytes.Buffer
		if json.Unmarshal(c.raw, &s) != nil || json.Compact(&buf, []byte(s)) != nil || !bytes.HasPrefix(buf.Bytes(), []byte("{")) {
			return bad
		}
		c.args = append(c.args, buf.Bytes()...)
		c.hasArgs = true
	}
	return more
}

// close ends the object; a call without arguments gets {}.
func (c *callObject) close() status {
	if !c.hasArgs {
		c.args = append(c.args, "{}"...)
		c.hasArgs = true
	}
	return done
}

// takeArgs returns the arguments' bytes read since the last take.
func (c *callObject) takeArgs() []byte {
	p := c.args
	c.args = c.args[len(c.args):]
	return p
}
