package enginecore

import (
	"testing"
	"time"

	"github.com/tandem-llm/tandem/wire"
)

// TestStamp: the shell stamps a step's OUTPUTS with the time Step
// returned; other messages are left alone.
func TestStamp(t *testing.T) {
	outs := []Out{
		{Type: wire.MsgOutputs, Payload: &wire.EngineCoreOutputs{Timestamp: 1}},
		{Type: wire.MsgUtilityResult, Payload: &wire.UtilityResult{}},
	}
	Stamp(outs, time.Unix(1000, 500_000_000))
	if got := outs[0].Payload.(*wire.EngineCoreOutputs).Timestamp; got != 1000.5 {
		t.Errorf("timestamp %v, want 1000.5", got)
	}
}
