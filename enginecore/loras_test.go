package enginecore

import (
	"io"
	"log/slog"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/wire"
)

// wrapped is a shell's wrapper around a backend, as cmd/tandem's closer.
type wrapped struct{ runner.Backend }

func (w wrapped) Unwrap() runner.Backend { return w.Backend }

// TestLoRAThroughWrappers: the engine finds the backend's LoadLoRA under
// the wrappers a shell puts around it, and refuses adapters on a backend
// without one.
func TestLoRAThroughWrappers(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	req := []wire.LoRARequest{{Name: "a", ID: 1, Path: "a.gguf", Scale: 1}}
	be := &countingBackend{vocab: 8}
	uses, err := newLoras(Config{}, wrapped{wrapped{be}}, log).resolve(req)
	if err != nil || len(uses) != 1 || len(be.loraLoads) != 1 {
		t.Fatalf("through two wrappers: %v, %d uses, loads %v", err, len(uses), be.loraLoads)
	}
	type plain struct{ runner.Backend } // hides LoadLoRA, no Unwrap
	if _, err := newLoras(Config{}, plain{be}, log).resolve(req); err == nil {
		t.Fatal("a backend without LoadLoRA applied an adapter")
	}
}
