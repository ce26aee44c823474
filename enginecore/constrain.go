package enginecore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/enginecore/batch"
	"github.com/tandem-llm/tandem/enginecore/structured"
	"github.com/tandem-llm/tandem/wire"
)

// Structured outputs: a request's structured_outputs is compiled into a
// matcher (enginecore/structured): at ADD from the compile cache, else
// off the step loop (compile.go); every step that samples it
// fills the matcher's allowed-token mask into the batch item, which the
// runner applies before sampling, and the sampled token then advances
// the matcher. Once the constraint is complete only EOS is allowed, so
// the request ends with finish_reason stop.

// compiledConstraints is how many compiled constraints an engine keeps
// for reuse: a request repeating one (an agent's tools, a client's
// schema) starts at once from a copy (~24 µs) instead of waiting for a
// compile (ms to hundreds of ms on a worker).
const compiledConstraints = 256

// constraint is one request's matcher and its mask buffer.
type constraint struct {
	m    *structured.Matcher
	mask []uint32 // [ceil(V/32)] bit t: token t allowed
}

// constraintFor is the constraint so asks for, checked against what the
// engine can compile.
func (e *Engine) constraintFor(so *wire.StructuredOutputs) (structured.Constraint, error) {
	c, err := ConstraintOf(so)
	if err != nil {
		return structured.Constraint{}, err
	}
	if e.vocab == nil {
		return structured.Constraint{}, fmt.Errorf("structured outputs need the model's vocabulary, which %s does not give", e.cfg.Model)
	}
	return c, nil
}

// newConstraint is a request's constraint over the fresh matcher m.
func (e *Engine) newConstraint(m *structured.Matcher) *constraint {
	return &constraint{m: m, mask: make([]uint32, e.vocab.MaskWords())}
}

// forward runs b's forward pass. When requests are constrained, their
// masks are filled meanwhile through e.overlap (the shell's goroutine,
// joined before forward returns; without one, first and in line): a
// backend that leaves the CPU idle during Forward (a GPU) pays no step
// time for them, and results do not depend on the timing. The fill
// touches only the matchers, e.failed and the items' sampling fields,
// none of which Forward reads (runner.Runner.Forward).
func (e *Engine) forward(ctx context.Context, b *batch.Batch) error {
	if len(e.constraints) == 0 {
		e.forceClosing(b) // cheap: in line
		return e.run.Forward(ctx, b)
	}
	if e.overlap == nil {
		e.constrain(b)
		return e.run.Forward(ctx, b)
	}
	wait := e.overlap(func() { e.constrain(b) })
	err := e.run.Forward(ctx, b)
	wait()
	return err
}

// constrain fills the masks of the constrained items that sample this
// step (not inside a think block: think.go), and the masks that close a
// think block whose budget is spent. A matcher that fails fails its
// request (after the step).
func (e *Engine) constrain(b *batch.Batch) {
	e.forceClosing(b)
	if len(e.constraints) == 0 {
		return // the common step: nothing constrained, no per-item lookups
	}
	for i := range b.Items {
		it := &b.Items[i]
		c := e.constraints[it.RequestID]
		if c == nil || !it.Sample || it.Allowed != nil {
			continue
		}
		th := e.thinking[it.RequestID]
		if th != nil && !th.masks() {
			continue
		}
		if err := c.m.FillMask(c.mask); err != nil {
			e.failed[it.RequestID] = err
			it.Allowed = eosOnly(c.mask, e.eos)
			continue
		}
		if th != nil {
			th.allowStart(c.mask)
		}
		it.Allowed = c.mask
		if c.m.Done() {
			it.MaskStop = false // complete: EOS must be allowed, whatever min_tokens says
		}
	}
}

// forceClosing sets the masks of the items that close a think block
// (their budget spent) to the one token that spells its next bytes.
func (e *Engine) forceClosing(b *batch.Batch) {
	if len(e.thinking) == 0 {
		return
	}
	for i := range b.Items {
		it := &b.Items[i]
		th := e.thinking[it.RequestID]
		if th == nil || !it.Sample || th.phase != thinkClosing {
			continue
		}
		tok := th.nextForced(e.firstBytes(), e.cfg.Vocab.Pieces)
		if tok < 0 {
			continue // nothing spells the forced bytes: the block is given up
		}
		if th.closeMask == nil {
			th.closeMask = make([]uint32, e.vocab.MaskWords())
		}
		clear(th.closeMask)
		th.closeMask[tok/32] |= 1 << (tok % 32)
		it.Allowed, it.MaskStop = th.closeMask, false
	}
}

// advance moves each followed answer past its sampled token: its think
// block (think.go), then its constraint's matcher, which takes the token
// unless the answer is in its think block or just closed it.
func (e *Engine) advance(b *batch.Batch, res *batch.Result) {
	if len(e.constraints) == 0 && len(e.thinking) == 0 {
		return
	}
	for i := range b.Items {
		it := &b.Items[i]
		if !it.Sample || e.failed[it.RequestID] != nil {
			continue
		}
		tok := res.Sampled[i]
		if th := e.thinking[it.RequestID]; th != nil {
			accept := th.step(tok, e.cfg.Vocab.Pieces[tok])
			if th.phase == thinkDone {
				delete(e.thinking, it.RequestID)
			}
			if !accept {
				continue
			}
		}
		c := e.constraints[it.RequestID]
		if c == nil {
			continue
		}
		if err := c.m.Accept(tok); err != nil {
			e.failed[it.RequestID] = err
		}
	}
}

// failConstrained ends the requests whose matcher failed this step with
// an error output, and returns those outputs.
func (e *Engine) failConstrained(now time.Time) []Out {
	if len(e.failed) == 0 {
		return nil
	}
	var outs []Out
	for key, err := range e.failed {
		delete(e.failed, key)
		r := e.sched.Get(key)
		if r == nil {
			continue // it finished in this step anyway
		}
		e.log.Error("structured output matcher failed; ending the request", "request_id", r.WireID, "err", err)
		client, id := r.Client, r.WireID
		e.abort(now, []string{key})
		outs = append(outs, e.outputsFor(now, client, []wire.EngineCoreOutput{{RequestID: id, FinishReason: wire.FinishError,
			StopReason: "structured output: " + err.Error(), ErrorCode: wire.CodeInvalidRequest}}, []string{id}))
	}
	return outs
}

// dropConstraint frees a finished or aborted request's matcher and think
// block.
func (e *Engine) dropConstraint(key string) {
	delete(e.thinking, key)
	if c := e.constraints[key]; c != nil {
		c.m.Close()
		delete(e.constraints, key)
	}
}

// eosOnly sets mask to allow only the EOS ids.
func eosOnly(mask []uint32, eos []int32) []uint32 {
	clear(mask)
	for _, t := range eos {
		if int(t)/32 < len(mask) {
			mask[t/32] |= 1 << (t % 32)
		}
	}
	return mask
}

// ConstraintOf is the constraint the engine compiles for so: the one
// constraint so sets, with vLLM's JSON options (disable_any_whitespace,
// whitespace_pattern, disable_additional_properties) as LLGuidance's
// schema options and Tandem's JSON defaults (bounded whitespace and
// integers). Benchmarks use it to measure the engine's own matchers.
func ConstraintOf(so *wire.StructuredOutputs) (structured.Constraint, error) {
	var set []structured.Constraint
	if so.JSON != "" {
		set = append(set, structured.Constraint{Kind: structured.JSONSchema, Data: so.JSON})
	}
	if so.JSONObject {
		set = append(set, structured.Constraint{Kind: structured.JSONSchema, Data: `{"type":"object"}`})
	}
	if so.Regex != "" {
		set = append(set, structured.Constraint{Kind: structured.Regex, Data: so.Regex})
	}
	if len(so.Choice) > 0 {
		b, _ := json.Marshal(so.Choice)
		set = append(set, structured.Constraint{Kind: structured.Choice, Data: string(b)})
	}
	if so.Grammar != "" {
		set = append(set, structured.Constraint{Kind: structured.Grammar, Data: so.Grammar})
	}
	if so.StructuralTag != "" {
		set = append(set, structured.Constraint{Kind: structured.StructuralTag, Data: so.StructuralTag})
	}
	switch len(set) {
	case 0:
		return structured.Constraint{}, fmt.Errorf("%w: structured_outputs sets no constraint (json, json_object, regex, choice, grammar or structural_tag)", structured.ErrInvalid)
	case 1:
	default:
		return structured.Constraint{}, fmt.Errorf("%w: structured_outputs sets %d constraints; set exactly one of json, json_object, regex, choice, grammar, structural_tag", structured.ErrInvalid, len(set))
	}
	c := set[0]
	if c.Kind == structured.JSONSchema {
		data, err := jsonOptions(c.Data, so)
		if err != nil {
			return structured.Constraint{}, err
		}
		c.Data = data
	}
	return c, nil
}

// defaultWhitespace is the whitespace a JSON constraint allows between
// tokens unless the request says otherwise: none, one space, or a newline
// and up to 20 spaces or tabs of indentation, as llama.cpp's
// json-schema-to-grammar allows. Unbounded whitespace lets a small model
// spend its whole budget on blanks.
const defaultWhitespace = `(?: |\n[ \t]{0,20})?`

// jsonOptions adds LLGuidance's "x-guidance" options to a schema (unless it
// has its own), and additionalProperties: false to the object schemas
// that leave it unsaid: every one with disable_additional_properties
// (vLLM's guidance option), else those that list properties, as vLLM's
// default backend (XGrammar's strict mode) and llama.cpp's
// json-schema-to-grammar read them: a small model offered any extra key
// fills the answer with them (an {"answer": …} schema got
// "helpstring": "…" for a thousand tokens).
func jsonOptions(schema string, so *wire.StructuredOutputs) (string, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(schema))
	dec.UseNumber() // numbers stay as written (bounds, enums, consts)
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("%w: the JSON schema is not valid JSON: %v", structured.ErrInvalid, err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return schema, nil // true/false schemas take no options
	}
	if so.DisableAdditionalProperties {
		closeObjects(root)
	} else if !composesObjects(root) {
		closeListed(root)
	}
	boundIntegers(root)
	opts := map[string]any{}
	switch {
	case so.DisableAnyWhitespace:
		opts["whitespace_flexible"] = false
	case so.WhitespacePattern != "":
		opts["whitespace_pattern"] = so.WhitespacePattern
	default:
		opts["whitespace_pattern"] = defaultWhitespace
	}
	if _, set := root["x-guidance"]; !set {
		root["x-guidance"] = opts
	}
	b, err := json.Marshal(root)
	return string(b), err
}

// boundIntegers gives every integer schema without a bound the range of
// 18 digits (±999,999,999,999,999,999, inside int64; LLGuidance builds no
// regex for the whole int64 range): JSON integers are unbounded, and a
// small model at temperature 0 can then write digits until max_tokens
// ("1111…"); common consumers parse integers as 64 bits anyway.
func boundIntegers(v any) {
	eachObject(v, func(x map[string]any) bool {
		if isIntegerSchema(x["type"]) {
			_, lo := x["minimum"]
			_, xlo := x["exclusiveMinimum"]
			if !lo && !xlo {
				x["minimum"] = json.Number("-999999999999999999")
			}
			_, hi := x["maximum"]
			_, xhi := x["exclusiveMaximum"]
			if !hi && !xhi {
				x["maximum"] = json.Number("999999999999999999")
			}
		}
		return false
	})
}

func isIntegerSchema(t any) bool {
	if t == "integer" {
		return true
	}
	if list, ok := t.([]any); ok {
		return len(list) == 1 && list[0] == "integer"
	}
	return false
}

// eachObject calls f on every JSON object (map) in v, a parent before
// its children, to a depth of 64; it stops as soon as f returns true and
// reports whether one did.
func eachObject(v any, f func(map[string]any) bool) bool {
	var walk func(v any, depth int) bool
	walk = func(v any, depth int) bool {
		if depth > 64 {
			return false
		}
		switch x := v.(type) {
		case map[string]any:
			if f(x) {
				return true
			}
			for _, child := range x {
				if walk(child, depth+1) {
					return true
				}
			}
		case []any:
			for _, child := range x {
				if walk(child, depth+1) {
					return true
				}
			}
		}
		return false
	}
	return walk(v, 0)
}

// closeListed sets additionalProperties: false in every object schema of
// v that lists properties and says nothing of others (no
// additionalProperties, patternProperties or unevaluatedProperties).
func closeListed(v any) {
	eachObject(v, func(x map[string]any) bool {
		if _, has := x["properties"]; has {
			_, a := x["additionalProperties"]
			_, p := x["patternProperties"]
			_, u := x["unevaluatedProperties"]
			if !a && !p && !u {
				x["additionalProperties"] = false
			}
		}
		return false
	})
}

// composesObjects reports whether v has an allOf of two or more schemas:
// closing each of them would leave no object valid (each forbids the
// others' properties), so such a schema keeps JSON Schema's open objects.
func composesObjects(v any) bool {
	return eachObject(v, func(x map[string]any) bool {
		all, ok := x["allOf"].([]any)
		return ok && len(all) > 1
	})
}

// closeObjects sets additionalProperties: false on every object schema
// that leaves it unset, as vLLM's disable_additional_properties does.
func closeObjects(v any) {
	eachObject(v, func(x map[string]any) bool {
		if _, has := x["properties"]; has || x["type"] == "object" {
			if _, set := x["additionalProperties"]; !set {
				x["additionalProperties"] = false
			}
		}
		return false
	})
}
