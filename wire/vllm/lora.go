package vllm

import (
	"fmt"

	"github.com/tandem-llm/tandem/wire"
)

// LoRARequest is vLLM's LoRARequest (vllm/lora/request.py, a msgspec
// array_like struct): [lora_name, lora_int_id, lora_path,
// base_model_name, load_inplace, is_3d_lora_weight], the defaults after
// lora_int_id omitted when trailing. Tandem's engine reads the first
// three; a load_inplace of true (reload the file under the same id) or
// is_3d_lora_weight (fused MoE weights) is refused.
type LoRARequest struct {
	Name  string
	IntID int64
	Path  string
}

// decodeLoRARequest reads r, nil when absent.
func decodeLoRARequest(r Raw) (*LoRARequest, error) {
	if r.IsNil() {
		return nil, nil
	}
	n, err := parse(r)
	if err != nil {
		return nil, malformed("lora_request", err)
	}
	f, err := n.asArr()
	if err != nil || len(f) < 2 {
		return nil, malformed("lora_request", fmt.Errorf("want [lora_name, lora_int_id, …], got %s of %d", n.kind, len(f)))
	}
	var l LoRARequest
	if l.Name, err = f[0].asStr(); err == nil {
		l.IntID, err = f[1].asInt()
	}
	if err == nil && len(f) > 2 {
		l.Path, err = f[2].asStr()
	}
	if err != nil {
		return nil, malformed("lora_request", err)
	}
	for i, name := range []string{4: "load_inplace", 5: "is_3d_lora_weight"} {
		if i < len(f) && name != "" {
			if b, err := f[i].asBool(); err == nil && b {
				return nil, untranslatable("LoRARequest." + name)
			}
		}
	}
	if l.IntID < 1 || l.Path == "" {
		return nil, malformed("lora_request", fmt.Errorf("lora_int_id %d and lora_path %q: want ≥ 1 and a path", l.IntID, l.Path))
	}
	return &l, nil
}

// encode writes l as vLLM's frontend does: the three fields, the
// defaults after them omitted.
func (l *LoRARequest) encode() Raw {
	e := newEnc()
	e.arrayLen(3)
	e.str(l.Name)
	e.int(l.IntID)
	e.str(l.Path)
	fr, err := e.frames()
	if err != nil {
		return nil
	}
	return Raw(fr[0])
}

// loraToVLLM is Tandem's adapters as vLLM's one LoRARequest: one adapter
// at scale 1, as vLLM applies them; more, or another scale, has no
// counterpart.
func loraToVLLM(ls []wire.LoRARequest) (Raw, error) {
	switch {
	case len(ls) == 0:
		return nil, nil
	case len(ls) > 1:
		return nil, untranslatable("lora_requests (vLLM applies one adapter per request)")
	case ls[0].Scale != 1:
		return nil, untranslatable("lora_requests scale (vLLM applies an adapter at scale 1)")
	}
	l := LoRARequest{Name: ls[0].Name, IntID: int64(ls[0].ID), Path: ls[0].Path}
	return l.encode(), nil
}
