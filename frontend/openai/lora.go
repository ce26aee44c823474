package openai

import (
	"encoding/json"
	"math"
)

// LoRAScale is one entry of llama-server's lora list (a request's, or
// POST /lora-adapters' body): an adapter id and its scale.
type LoRAScale struct {
	ID    int     `json:"id"`
	Scale float64 `json:"scale"`
}

// UnmarshalJSON reads an entry as llama-server does: a missing id is
// -1 (refused), a missing scale 0.
func (l *LoRAScale) UnmarshalJSON(b []byte) error {
	type plain LoRAScale
	v := plain{ID: -1}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*l = LoRAScale(v)
	return nil
}

// Validate refuses a negative id and a scale that is not finite.
func (l LoRAScale) Validate() *Error {
	if l.ID < 0 {
		return BadRequest("lora", "each LoRA entry needs an adapter \"id\" (GET /lora-adapters), got %d", l.ID)
	}
	if math.IsNaN(l.Scale) || math.IsInf(l.Scale, 0) || math.Abs(l.Scale) > 1e6 {
		return BadRequest("lora", "LoRA adapter %d: scale %v", l.ID, l.Scale)
	}
	return nil
}
