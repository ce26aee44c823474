package gguf

import "fmt"

// LoRAArch checks that m is a LoRA adapter's header in llama.cpp's
// format (general.type "adapter", adapter.type "lora") and returns the
// architecture it adapts (general.architecture); the error wraps
// ErrFormat. Frontends check a file with it before naming it to engines,
// which read the tensors (enginecore/lora).
func LoRAArch(m *Metadata) (string, error) {
	if t, _ := m.String("general.type"); t != "adapter" {
		return "", fmt.Errorf("%w: general.type is %q, not \"adapter\": not a LoRA adapter", ErrFormat, t)
	}
	if t, _ := m.String("adapter.type"); t != "lora" {
		return "", fmt.Errorf("%w: adapter.type is %q, not \"lora\"", ErrFormat, t)
	}
	arch, _ := m.String("general.architecture")
	return arch, nil
}
