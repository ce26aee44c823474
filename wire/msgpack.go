package wire

import "github.com/vmihailenco/msgpack/v5"

// The methods below let vmihailenco/msgpack users encode and decode these
// structs directly (msgpack.Marshal, msgpack.NewDecoder(...).Decode). They
// follow the same rules as Marshal and Unmarshal. The hostile-input length
// checks need a bytes-backed decoder (msgpack.Unmarshal and
// msgpack.NewDecoder(bytes.NewReader(b)) are); from a stream, lengths are
// trusted no further than the bytes that actually arrive.

var (
	_ msgpack.CustomEncoder = (*EngineCoreRequest)(nil)
	_ msgpack.CustomDecoder = (*EngineCoreRequest)(nil)
	_ msgpack.CustomEncoder = (*SamplingParams)(nil)
	_ msgpack.CustomDecoder = (*SamplingParams)(nil)
	_ msgpack.CustomEncoder = (*Abort)(nil)
	_ msgpack.CustomDecoder = (*Abort)(nil)
	_ msgpack.CustomEncoder = (*Utility)(nil)
	_ msgpack.CustomDecoder = (*Utility)(nil)
	_ msgpack.CustomEncoder = (*Hello)(nil)
	_ msgpack.CustomDecoder = (*Hello)(nil)
	_ msgpack.CustomEncoder = (*Heartbeat)(nil)
	_ msgpack.CustomDecoder = (*Heartbeat)(nil)
	_ msgpack.CustomEncoder = (*Ready)(nil)
	_ msgpack.CustomDecoder = (*Ready)(nil)
	_ msgpack.CustomEncoder = (*EngineCoreOutputs)(nil)
	_ msgpack.CustomDecoder = (*EngineCoreOutputs)(nil)
	_ msgpack.CustomEncoder = (*EngineCoreOutput)(nil)
	_ msgpack.CustomDecoder = (*EngineCoreOutput)(nil)
	_ msgpack.CustomEncoder = (*Logprobs)(nil)
	_ msgpack.CustomDecoder = (*Logprobs)(nil)
	_ msgpack.CustomEncoder = (*SchedulerStats)(nil)
	_ msgpack.CustomDecoder = (*SchedulerStats)(nil)
	_ msgpack.CustomEncoder = (*UtilityResult)(nil)
	_ msgpack.CustomDecoder = (*UtilityResult)(nil)
	_ msgpack.CustomEncoder = (*EngineDead)(nil)
	_ msgpack.CustomDecoder = (*EngineDead)(nil)
	_ msgpack.CustomEncoder = (*SessionInfo)(nil)
	_ msgpack.CustomDecoder = (*SessionInfo)(nil)
	_ msgpack.CustomEncoder = (*LoadReport)(nil)
	_ msgpack.CustomDecoder = (*LoadReport)(nil)
)

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *EngineCoreRequest) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *EngineCoreRequest) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *SamplingParams) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *SamplingParams) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *Abort) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *Abort) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *Utility) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *Utility) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *Hello) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *Hello) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *Heartbeat) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *Heartbeat) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *Ready) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *Ready) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *EngineCoreOutputs) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *EngineCoreOutputs) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *EngineCoreOutput) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *EngineCoreOutput) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *Logprobs) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *Logprobs) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *SchedulerStats) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *SchedulerStats) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *UtilityResult) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *UtilityResult) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *EngineDead) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *EngineDead) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *SessionInfo) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *SessionInfo) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *LoadReport) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *LoadReport) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }
