package vllm

import (
	"bytes"
	"errors"
	"fmt"
)

// EngineCoreDead is the single frame an engine sends on its output
// sockets as it dies (EngineCoreProc.ENGINE_CORE_DEAD).
var EngineCoreDead = []byte("ENGINE_CORE_DEAD")

// ErrEngineCoreDead is what DecodeOutputs returns for the EngineCoreDead
// frame.
var ErrEngineCoreDead = errors.New("vllm: ENGINE_CORE_DEAD")

// IsEngineCoreDead reports whether frames are the ENGINE_CORE_DEAD message.
func IsEngineCoreDead(frames [][]byte) bool {
	return len(frames) == 1 && bytes.Equal(frames[0], EngineCoreDead)
}

// Request is one decoded input-socket message: Type and the one field it
// names.
type Request struct {
	Type        RequestType
	Add         *EngineCoreRequest // RequestAdd
	Abort       []string           // RequestAbort
	StartDPWave *StartDPWave       // RequestStartDPWave
	Utility     *UtilityRequest    // RequestUtility
}

func withType(t RequestType, e *enc) ([][]byte, error) {
	f, err := e.frames()
	if err != nil {
		return nil, err
	}
	return append([][]byte{{byte(t)}}, f...), nil
}

// EncodeAdd returns an ADD's frames: [0x00][payload][aux...], aux holding
// arrays of ZeroCopyThreshold bytes or more (prompt_embeds,
// prompt_logprob_token_ids).
func EncodeAdd(r *EngineCoreRequest) ([][]byte, error) {
	e := newEnc()
	r.encode(e)
	return withType(RequestAdd, e)
}

// EncodeAbort returns an ABORT's frames: [0x01][[request_id, ...]].
func EncodeAbort(requestIDs []string) ([][]byte, error) {
	e := newEnc()
	e.strs(requestIDs)
	return withType(RequestAbort, e)
}

// EncodeUtility returns a UTILITY's frames: [0x03][payload].
func EncodeUtility(u *UtilityRequest) ([][]byte, error) {
	e := newEnc()
	u.encode(e)
	return withType(RequestUtility, e)
}

// EncodeStartDPWave returns a START_DP_WAVE's frames: [0x02][payload].
func EncodeStartDPWave(w *StartDPWave) ([][]byte, error) {
	e := newEnc()
	w.encode(e)
	return withType(RequestStartDPWave, e)
}

// DecodeRequest decodes [type][payload][aux...] as an engine's input
// socket receives it (after the DEALER, so without identity). Errors wrap
// ErrMalformed.
func DecodeRequest(frames [][]byte) (*Request, error) {
	if len(frames) < 2 || len(frames[0]) != 1 {
		return nil, malformed("request", fmt.Errorf("%d frames, want [type][payload][aux...]", len(frames)))
	}
	t := RequestType(frames[0][0])
	n, err := parse(frames[1])
	if err != nil {
		return nil, malformed("request payload", err)
	}
	aux := frames[1:]
	req := &Request{Type: t}
	switch t {
	case RequestAdd:
		req.Add, err = requestFrom(n, aux)
	case RequestAbort:
		req.Abort, err = listOf(n, node.asStr)
		if req.Abort == nil && err == nil {
			req.Abort = []string{}
		}
	case RequestStartDPWave:
		req.StartDPWave, err = startDPWaveFrom(n)
	case RequestUtility:
		req.Utility, err = utilityRequestFrom(n)
	default:
		err = fmt.Errorf("request type 0x%02x not sent on a socket", byte(t))
	}
	if err != nil {
		return nil, malformed("request", err)
	}
	return req, nil
}

// EncodeOutputs returns an output message's frames: [payload][aux...]
// (no type byte), as vLLM's MsgpackEncoder writes them.
func EncodeOutputs(o *EngineCoreOutputs) ([][]byte, error) {
	e := newEnc()
	o.encode(e)
	return e.frames()
}

// DecodeOutputs decodes [payload][aux...] from an output socket. The
// ENGINE_CORE_DEAD frame returns ErrEngineCoreDead; other errors wrap
// ErrMalformed.
func DecodeOutputs(frames [][]byte) (*EngineCoreOutputs, error) {
	if IsEngineCoreDead(frames) {
		return nil, ErrEngineCoreDead
	}
	if len(frames) == 0 {
		return nil, malformed("outputs", errors.New("no frames"))
	}
	n, err := parse(frames[0])
	if err != nil {
		return nil, malformed("outputs payload", err)
	}
	o, err := outputsFrom(n, frames)
	if err != nil {
		return nil, malformed("outputs", err)
	}
	return o, nil
}
