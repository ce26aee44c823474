package wire

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/vmihailenco/msgpack/v5"
)

// ErrMalformed is wrapped by every decode failure (and by encode failures:
// a payload that does not match its type, a value of an unsupported type).
var ErrMalformed = errors.New("wire: malformed message")

// String names the type as docs/wire.md does ("ADD", "READY", ...).
func (t MsgType) String() string {
	switch t {
	case MsgAdd:
		return "ADD"
	case MsgAbort:
		return "ABORT"
	case MsgUtility:
		return "UTILITY"
	case MsgHello:
		return "HELLO"
	case MsgHeartbeat:
		return "HEARTBEAT"
	case MsgReady:
		return "READY"
	case MsgOutputs:
		return "OUTPUTS"
	case MsgUtilityResult:
		return "UTILITY_RESULT"
	case MsgEngineDead:
		return "ENGINE_DEAD"
	}
	return fmt.Sprintf("MsgType(%#02x)", byte(t))
}

// newPayload returns an empty payload for t.
func newPayload(t MsgType) (value, bool) {
	switch t {
	case MsgAdd:
		return new(EngineCoreRequest), true
	case MsgAbort:
		return new(Abort), true
	case MsgUtility:
		return new(Utility), true
	case MsgHello:
		return new(Hello), true
	case MsgHeartbeat:
		return new(Heartbeat), true
	case MsgReady:
		return new(Ready), true
	case MsgOutputs:
		return new(EngineCoreOutputs), true
	case MsgUtilityResult:
		return new(UtilityResult), true
	case MsgEngineDead:
		return new(EngineDead), true
	}
	return nil, false
}

// typeOf returns the message type a payload is sent as.
func typeOf(v value) (MsgType, bool) {
	switch v.(type) {
	case *EngineCoreRequest:
		return MsgAdd, true
	case *Abort:
		return MsgAbort, true
	case *Utility:
		return MsgUtility, true
	case *Hello:
		return MsgHello, true
	case *Heartbeat:
		return MsgHeartbeat, true
	case *Ready:
		return MsgReady, true
	case *EngineCoreOutputs:
		return MsgOutputs, true
	case *UtilityResult:
		return MsgUtilityResult, true
	case *EngineDead:
		return MsgEngineDead, true
	}
	return 0, false
}

// asValue accepts a non-nil pointer to one of this package's structs, or
// the struct itself.
func asValue(v any) (value, bool) {
	if p, ok := v.(value); ok {
		return p, !reflect.ValueOf(p).IsNil()
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.Struct {
		return nil, false
	}
	p := reflect.New(rv.Type())
	p.Elem().Set(rv)
	pv, ok := p.Interface().(value)
	return pv, ok
}

// Encode returns the two frames [type byte][payload] of one message.
// payload is the struct for t (*EngineCoreRequest for MsgAdd, *Abort for
// MsgAbort, ...; the struct by value is accepted too). The frames are
// freshly allocated and owned by the caller.
func Encode(t MsgType, payload any) ([][]byte, error) {
	v, ok := asValue(payload)
	if !ok {
		return nil, fmt.Errorf("%w: cannot send %T as %s", ErrMalformed, payload, t)
	}
	if pt, ok := typeOf(v); !ok || pt != t {
		return nil, fmt.Errorf("%w: cannot send %T as %s", ErrMalformed, payload, t)
	}
	b, err := marshalWith(v.encode)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMalformed, t, err)
	}
	return [][]byte{{byte(t)}, b}, nil
}

// Decode parses the frames [type byte][payload] of one message (without
// the ROUTER identity frame) into the payload struct for its type:
// *EngineCoreRequest, *Abort, *Utility, *Hello, *Heartbeat, *Ready,
// *EngineCoreOutputs, *UtilityResult or *EngineDead. The result does not
// alias the frames. Every failure wraps ErrMalformed.
func Decode(frames [][]byte) (MsgType, any, error) {
	if len(frames) != 2 {
		return 0, nil, fmt.Errorf("%w: %d frames, want 2 ([type][payload])", ErrMalformed, len(frames))
	}
	if len(frames[0]) != 1 {
		return 0, nil, fmt.Errorf("%w: type frame is %d bytes, want 1", ErrMalformed, len(frames[0]))
	}
	t := MsgType(frames[0][0])
	v, ok := newPayload(t)
	if !ok {
		return 0, nil, fmt.Errorf("%w: unknown message type %#02x", ErrMalformed, byte(t))
	}
	err := unmarshalWith(frames[1], func(d *dec) error {
		if err := v.decode(d); err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return t, v, nil
}

// Marshal encodes one value with the rules of this package: its structs
// (pointer or value, e.g. *SessionInfo, LoadReport), slices of them (e.g.
// []SessionInfo), and free-form values (nil, bool, ints, floats, string,
// []byte, Raw, []any, map[string]any). Used for UtilityResult.Result and
// PUB payloads.
func Marshal(v any) ([]byte, error) {
	b, err := marshalWith(func(e *enc) { e.any(v) })
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return b, nil
}

// Unmarshal decodes b, which must hold exactly one value, into v: a
// pointer to one of this package's structs, to a slice of them (e.g.
// *[]SessionInfo), or to any, Raw, bool, string, int, int64, int32,
// uint64, float64, []any, map[string]any, []string or []int32. A nil value
// decodes to the zero value (DefaultSamplingParams() for SamplingParams).
// Every failure wraps ErrMalformed.
func Unmarshal(b []byte, v any) error {
	return unmarshalWith(b, func(d *dec) error { return d.into(v) })
}

func (d *dec) into(v any) error {
	var err error
	switch v := v.(type) {
	case value:
		if reflect.ValueOf(v).IsNil() {
			return fmt.Errorf("Unmarshal(nil %T)", v)
		}
		return v.decode(d)
	case *any:
		*v, err = d.any()
	case *Raw:
		*v, err = d.raw()
	case *bool:
		*v, err = d.bool()
	case *string:
		*v, err = d.str()
	case *int:
		*v, err = d.int()
	case *int64:
		*v, err = d.int64()
	case *int32:
		*v, err = d.int32()
	case *uint64:
		*v, err = d.uint64()
	case *float64:
		*v, err = d.float64()
	case *[]any:
		*v, err = d.anys()
	case *map[string]any:
		*v, err = d.anyMap()
	case *[]string:
		*v, err = d.strs()
	case *[]int32:
		*v, err = d.int32s()
	default:
		return d.intoSlice(v)
	}
	return err
}

// intoSlice decodes an array into a pointer to a slice of this package's
// structs.
func (d *dec) intoSlice(v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Slice {
		return fmt.Errorf("cannot decode into %T", v)
	}
	elem := rv.Elem().Type().Elem()
	if !reflect.PointerTo(elem).Implements(reflect.TypeFor[value]()) {
		return fmt.Errorf("cannot decode into %T", v)
	}
	n, err := d.arrayLen()
	if err != nil {
		return err
	}
	s := reflect.MakeSlice(rv.Elem().Type(), 0, d.capHint(n))
	for i := range n {
		s = reflect.Append(s, reflect.Zero(elem))
		if err := s.Index(i).Addr().Interface().(value).decode(d); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
	}
	if n == 0 {
		s = reflect.Zero(rv.Elem().Type())
	}
	rv.Elem().Set(s)
	return nil
}

func encodeTo(me *msgpack.Encoder, v value) error {
	e := enc{e: me}
	v.encode(&e)
	if e.err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, e.err)
	}
	return nil
}

func decodeFrom(md *msgpack.Decoder, v value) error {
	if err := v.decode(newDec(md)); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}
