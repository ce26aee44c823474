package wire

import (
	"fmt"
	"strconv"
	"strings"
)

// LoRARequest is one LoRA adapter a request applies, vLLM's LoRARequest
// (lora_name, lora_int_id, lora_path) with llama-server's per-request
// scale. A map with every key:
//
//	"lora_name"   str   (the name clients use: a --lora-modules name, or the file's)
//	"lora_int_id" int   (≥ 1, unique per adapter in the frontend)
//	"lora_path"   str   (the adapter file the engine loads: a GGUF LoRA)
//	"scale"       float (the user's scale; the engine multiplies it by alpha/rank)
type LoRARequest struct {
	Name  string
	ID    int
	Path  string
	Scale float64
}

var loraKeys = []string{"lora_name", "lora_int_id", "lora_path", "scale"}

func (l *LoRARequest) encode(e *enc) {
	e.mapLen(len(loraKeys))
	e.str(loraKeys[0])
	e.str(l.Name)
	e.str(loraKeys[1])
	e.int(int64(l.ID))
	e.str(loraKeys[2])
	e.str(l.Path)
	e.str(loraKeys[3])
	e.float(l.Scale)
}

func (l *LoRARequest) decode(d *dec) error {
	*l = LoRARequest{Scale: 1}
	return d.fieldMap("LoRARequest", func(key string) (bool, error) {
		var err error
		switch key {
		case "lora_name":
			l.Name, err = d.str()
		case "lora_int_id":
			l.ID, err = d.int()
		case "lora_path":
			l.Path, err = d.str()
		case "scale":
			l.Scale, err = d.float64()
		default:
			return false, nil
		}
		return true, err
	})
}

func encodeLoRAs(e *enc, ls []LoRARequest) {
	e.arrayLen(len(ls))
	for i := range ls {
		ls[i].encode(e)
	}
}

func decodeLoRAs(d *dec) ([]LoRARequest, error) {
	if isNil, err := d.takeNil(); isNil || err != nil {
		return nil, err
	}
	n, err := d.arrayLen()
	if err != nil {
		return nil, err
	}
	if n > MaxLoRAsPerRequest {
		return nil, fmt.Errorf("%d LoRA adapters, at most %d", n, MaxLoRAsPerRequest)
	}
	out := make([]LoRARequest, n)
	for i := range out {
		if err := out[i].decode(d); err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return out, nil
}

// MaxLoRAsPerRequest bounds the adapters one request applies at once.
const MaxLoRAsPerRequest = 64

// LoRASalt is the prefix-cache salt of a request with cache salt salt
// applying loras: a request's KV depends on its adapters and their
// scales, so those with other adapters must not share its blocks. The
// engine names its blocks with it and the frontend's router predicts
// them with it; without adapters it is salt itself.
func LoRASalt(salt string, loras []LoRARequest) string {
	var b strings.Builder
	b.WriteString(salt)
	for _, l := range loras {
		if l.Scale == 0 {
			continue // a zero scale changes nothing
		}
		b.WriteString("\x00lora:")
		b.WriteString(l.Path)
		b.WriteByte('@')
		b.WriteString(strconv.FormatFloat(l.Scale, 'g', -1, 64))
	}
	return b.String()
}
