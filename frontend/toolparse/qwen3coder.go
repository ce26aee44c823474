package toolparse

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// The qwen3_coder format (vLLM's qwen3_coder and qwen3_xml parsers;
// Qwen3-Coder and Qwen3-Coder-30B-A3B, whose chat template asks for it):
// calls in XML-like tags, each parameter's value as raw text,
//
//	<tool_call>
//	<function=get_weather>
//	<parameter=city>
//	Paris
//	</parameter>
//	<parameter=days>
//	3
//	</parameter>
//	</function>
//	</tool_call>
//
// as vLLM reads it: a <function=…> block counts with or without the
// <tool_call> around it, and a <tool_call> may hold several; a value is
// the text up to </parameter> (or the next <parameter=, or </function>),
// less one leading and one trailing newline. Values are untyped text, so
// each becomes JSON by its parameter's type in the tool's schema
// (ParamTypes), as vLLM's _convert_param_value does: "null" is null;
// string types stay strings; integer types are integers and number types
// numbers (integral ones as integers) when they parse; booleans are
// value == "true" (any case); other types (object, array) are the value
// as JSON, else as a Python literal, else a string; a parameter the
// schema does not name stays a string. A call's arguments stream one
// parameter at a time, each once its value is complete.

const (
	qcToolOpen  = "<tool_call>"
	qcToolClose = "</tool_call>"
	qcFunc      = "<function="
	qcFuncClose = "</function>"
	qcParam     = "<parameter="
	qcParamEnd  = "</parameter>"
	// qcMaxName bounds a function or parameter name: a longer one is not
	// a tag.
	qcMaxName = 256
)

type qcState uint8

const (
	qcText      qcState = iota
	qcOpen              // after <tool_call>: whitespace, then <function=
	qcFuncName          // inside <function=…>
	qcBody              // inside a function: whitespace, then <parameter= or </function>
	qcParamName         // inside <parameter=…>
	qcValue             // inside a parameter's value
	qcAfterFunc         // after </function>: </tool_call>, another <function=, or text
)

type qwen3Coder struct {
	reader
	types  ParamTypes
	st     qcState
	m      matcher
	inTool bool   // inside <tool_call>
	tag    []byte // the tag being matched in qcOpen, qcBody and qcAfterFunc
	name   []byte // the function or parameter name being read
	fn     string // the committed function's name
	param  string // the parameter whose value is being read
	value  []byte
	params int // parameters written in the current call
}

func newQwen3Coder(tools map[string]bool, types ParamTypes) Parser {
	p := &qwen3Coder{reader: reader{tools: tools}, types: types, m: matcher{markers: []string{qcToolOpen, qcFunc}}}
	p.m.out = &p.em
	return p
}

func (p *qwen3Coder) Push(text string) Delta {
	for i := 0; i < len(text); i++ {
		p.step(text[i])
	}
	return p.em.take()
}

func (p *qwen3Coder) Finish() Delta {
	switch p.st {
	case qcText:
		p.m.flush()
	case qcOpen, qcFuncName:
		p.abandon() // not a call yet: content again
	case qcBody, qcParamName:
		p.closeCall()
	case qcValue:
		p.endParam()
		p.closeCall()
	case qcAfterFunc:
		if !strings.HasPrefix(qcToolClose, string(p.tag)) {
			p.em.text(p.tag)
		}
		p.em.dropSpace() // a cut </tool_call> is not content
	}
	p.em.finish()
	return p.em.take()
}

// step reads b.
func (p *qwen3Coder) step(b byte) {
	switch p.st {
	case qcText:
		i, found := p.m.step(b)
		switch {
		case found && i == 0:
			p.st, p.inTool, p.tag = qcOpen, true, p.tag[:0]
			p.hold([]byte(qcToolOpen)...)
		case found:
			p.st, p.inTool, p.name = qcFuncName, false, p.name[:0]
			p.hold([]byte(qcFunc)...)
		}
	case qcOpen:
		p.hold(b)
		if len(p.tag) == 0 && isSpace(b) {
			return
		}
		p.tag = append(p.tag, b)
		switch {
		case string(p.tag) == qcFunc:
			p.st, p.name = qcFuncName, p.name[:0]
		case !strings.HasPrefix(qcFunc, string(p.tag)):
			// <tool_call> not followed by a function: content, and the tag
			// read again as text (it may open a call).
			tag := append([]byte(nil), p.tag...)
			p.raw = p.raw[:len(p.raw)-len(tag)]
			p.abandon()
			p.st, p.inTool, p.tag = qcText, false, p.tag[:0]
			for _, c := range tag {
				p.step(c)
			}
		}
	case qcFuncName:
		if b == '>' {
			p.startCall()
			return
		}
		p.hold(b)
		if b == '\n' || len(p.name) >= qcMaxName {
			p.abandon()
			p.st = qcText
			return
		}
		p.name = append(p.name, b)
	case qcBody:
		p.stepTags(b, []string{qcParam, qcFuncClose}, func(i int) {
			if i == 0 {
				p.st, p.name = qcParamName, p.name[:0]
				return
			}
			p.endCall()
		})
	case qcParamName:
		switch {
		case b == '>':
			p.st, p.param, p.value = qcValue, string(p.name), p.value[:0]
		case b == '\n' || len(p.name) >= qcMaxName:
			p.st = qcBody // not a parameter tag: ignored, as vLLM's regex would
		default:
			p.name = append(p.name, b)
		}
	case qcValue:
		p.value = append(p.value, b)
		for _, end := range []string{qcParamEnd, qcParam, qcFuncClose} {
			if !bytes.HasSuffix(p.value, []byte(end)) {
				continue
			}
			p.value = p.value[:len(p.value)-len(end)]
			p.endParam()
			switch end {
			case qcParamEnd:
				p.st, p.tag = qcBody, p.tag[:0]
			case qcParam:
				p.st, p.name = qcParamName, p.name[:0]
			default:
				p.endCall()
			}
			return
		}
	case qcAfterFunc:
		if len(p.tag) == 0 && isSpace(b) {
			p.em.text([]byte{b})
			return
		}
		p.tag = append(p.tag, b)
		switch {
		case string(p.tag) == qcToolClose: // closes the block, or stray after a bare function
			p.em.dropSpace()
			p.st, p.inTool = qcText, false
		case string(p.tag) == qcFunc:
			p.st, p.name = qcFuncName, p.name[:0]
			p.hold([]byte(qcFunc)...)
		case strings.HasPrefix(qcToolClose, string(p.tag)), strings.HasPrefix(qcFunc, string(p.tag)):
		default:
			// Text: read again as such (it may open the next call).
			tag := append([]byte(nil), p.tag...)
			p.st, p.inTool, p.tag = qcText, false, p.tag[:0]
			for _, c := range tag {
				p.step(c)
			}
		}
	}
}

// stepTags matches b against tags in a function's body, where anything
// else is dropped (vLLM's regular expressions skip it); found is called
// with the index of a completed tag.
func (p *qwen3Coder) stepTags(b byte, tags []string, found func(i int)) {
	if len(p.tag) == 0 && b != '<' {
		return
	}
	p.tag = append(p.tag, b)
	for i, t := range tags {
		if string(p.tag) == t {
			p.tag = p.tag[:0]
			found(i)
			return
		}
	}
	for _, t := range tags {
		if strings.HasPrefix(t, string(p.tag)) {
			return
		}
	}
	p.tag = p.tag[:0]
	if b == '<' {
		p.tag = append(p.tag, b)
	}
}

// startCall reads the function name just closed by '>': a declared
// tool's starts a call, anything else is content.
func (p *qwen3Coder) startCall() {
	name := string(p.name)
	if !p.tools[name] {
		p.hold('>')
		p.abandon()
		p.st = qcText
		return
	}
	p.commit(name)
	p.fn, p.params, p.tag = name, 0, p.tag[:0]
	p.em.args([]byte{'{'})
	p.st = qcBody
}

// endParam writes the parameter just read as a member of the arguments.
func (p *qwen3Coder) endParam() {
	v := p.value
	v = bytes.TrimPrefix(v, []byte{'\n'})
	v = bytes.TrimSuffix(v, []byte{'\n'})
	var out bytes.Buffer
	if p.params > 0 {
		out.WriteByte(',')
	}
	writeString(&out, p.param)
	out.WriteByte(':')
	convertParam(&out, string(v), p.types[p.fn], p.param)
	p.params++
	p.em.args(out.Bytes())
}

// endCall closes the arguments at </function>.
func (p *qwen3Coder) endCall() {
	p.closeCall()
	p.st, p.tag = qcAfterFunc, p.tag[:0]
}

// closeCall writes the arguments' closing brace and ends the call.
func (p *qwen3Coder) closeCall() {
	p.em.args([]byte{'}'})
	p.reader.endCall()
}

// convertParam writes value as JSON by the type types gives param, as
// vLLM's Qwen3-Coder parser converts it.
func convertParam(out *bytes.Buffer, value string, types map[string]string, param string) {
	if strings.EqualFold(value, "null") {
		out.WriteString("null")
		return
	}
	typ, known := types[param]
	typ = strings.ToLower(strings.TrimSpace(typ))
	switch {
	case !known, typ == "string", typ == "str", typ == "text", typ == "varchar", typ == "char", typ == "enum":
		writeString(out, value)
	case hasAnyPrefix(typ, "int", "uint", "long", "short", "unsigned"):
		if n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64); err == nil {
			out.WriteString(strconv.FormatInt(n, 10))
			return
		}
		writeString(out, value)
	case hasAnyPrefix(typ, "num", "float"):
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			writeString(out, value)
			return
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			out.WriteString(strconv.FormatInt(int64(f), 10))
			return
		}
		out.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case typ == "boolean", typ == "bool", typ == "binary":
		out.WriteString(strconv.FormatBool(strings.ToLower(value) == "true"))
	default: // object, array, …: JSON, else a Python literal, else a string
		var buf bytes.Buffer
		if json.Valid([]byte(value)) && json.Compact(&buf, []byte(value)) == nil {
			out.Write(buf.Bytes())
			return
		}
		buf.Reset()
		lit := &pyParser{src: []byte(value)}
		if lit.value(&buf) == nil && strings.TrimSpace(value[lit.i:]) == "" {
			out.Write(buf.Bytes())
			return
		}
		writeString(out, value)
	}
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
