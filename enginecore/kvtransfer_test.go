package enginecore

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/wire"
)

// kvUtility calls a KV-transfer utility on e and decodes its result map.
func kvUtility(t *testing.T, e *Engine, method string, args ...any) map[string]any {
	t.Helper()
	raw, err := wire.Marshal(args) // through the wire, as a frontend sends them
	if err != nil {
		t.Fatal(err)
	}
	var decoded []any
	if err := wire.Unmarshal(raw, &decoded); err != nil {
		t.Fatal(err)
	}
	outs := e.Handle(time.Unix(1000, 0), "fe", &wire.Utility{CallID: 1, Method: method, Args: decoded})
	res := outs[len(outs)-1].Payload.(*wire.UtilityResult)
	if res.FailureMessage != "" {
		t.Fatalf("%s: %s", method, res.FailureMessage)
	}
	var m map[string]any
	if err := wire.Unmarshal(res.Result, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func kvCode(m map[string]any) wire.KVTransferCode {
	n, _ := intArg(m["code"])
	return wire.KVTransferCode(n)
}

// TestKVTransfer moves a prompt's cached blocks from one engine to
// another in chunks (slot save and restore): the second engine then
// serves them as cached, holds the same bytes, and continues the prompt
// with the tokens the first one generates; kv_evict drops them again.
func TestKVTransfer(t *testing.T) {
	prompt := make([]int32, 22) // 5 full blocks of 4 and 2 tokens
	for i := range prompt {
		prompt[i] = int32(7 + 11*i%200)
	}
	req := func(id string, p []int32) *wire.EngineCoreRequest {
		sp := wire.DefaultSamplingParams()
		sp.Temperature, sp.MaxTokens = 0, 6
		return &wire.EngineCoreRequest{RequestID: id, PromptTokenIDs: p, SamplingParams: sp, ArrivalTime: 1000}
	}
	a, b := dummyEngine(t, 64), dummyEngine(t, 64)
	first := runToEnd(t, a, req("a1", prompt))
	var generated []int32
	for _, o := range first {
		generated = append(generated, o.NewTokenIDs...)
	}
	slot := append(append([]int32{}, prompt...), generated[:len(generated)-1]...) // what the KV holds: 27 tokens, 6 blocks

	var layout map[string]any
	var data []byte
	for next := 0; ; {
		res := kvUtility(t, a, "kv_export", slot, "", next, 4)
		if kvCode(res) != wire.KVTransferOK {
			t.Fatalf("kv_export: %v", res["message"])
		}
		n, _ := intArg(res["num_blocks"])
		if n != 6 {
			t.Fatalf("kv_export: num_blocks %d, want 6 (27 tokens in blocks of 4)", n)
		}
		layout = res["layout"].(map[string]any)
		chunk := res["data"].([]byte)
		per, _ := intArg(layout["bytes_per_block"])
		res = kvUtility(t, b, "kv_import", slot, "", "", next, layout, chunk)
		if kvCode(res) != wire.KVTransferOK {
			t.Fatalf("kv_import: %v", res["message"])
		}
		data = append(data, chunk...)
		next += len(chunk) / per
		if next >= n {
			break
		}
	}
	again := kvUtility(t, b, "kv_export", slot, "", 0, 100)
	if !bytes.Equal(again["data"].([]byte), data) {
		t.Error("the restored engine holds other bytes than were saved")
	}

	long := append(append([]int32{}, slot...), 3, 4, 5)
	wantOut := runToEnd(t, a, req("a2", long))
	gotOut := runToEnd(t, b, req("b1", long))
	if got := gotOut[0].NumCachedTokens; got != 24 {
		t.Errorf("restored engine: %d cached tokens, want 24", got)
	}
	for i := range wantOut {
		if i >= len(gotOut) || !slices.Equal(wantOut[i].NewTokenIDs, gotOut[i].NewTokenIDs) {
			t.Fatalf("restored engine generates %+v, the original %+v", gotOut, wantOut)
		}
	}

	// A layout of another model is refused.
	other := map[string]any{}
	for k, v := range layout {
		other[k] = v
	}
	other["num_layers"] = int64(99)
	if res := kvUtility(t, b, "kv_import", slot, "x", "", 0, other, data); kvCode(res) != wire.KVTransferLayout {
		t.Errorf("kv_import with another layout: code %v, want layout_mismatch", kvCode(res))
	}
	// A chunk whose start is gone is refused.
	if res := kvUtility(t, b, "kv_import", slot, "salt", "", 2, layout, data[:len(data)/6]); kvCode(res) != wire.KVTransferChain {
		t.Errorf("kv_import past an uncached start: code %v, want chain_evicted", kvCode(res))
	}

	res := kvUtility(t, b, "kv_evict", slot, "")
	if n, _ := intArg(res["num_tokens"]); n != 24 {
		t.Errorf("kv_evict: %d tokens, want 24", n)
	}
	if out := runToEnd(t, b, req("b2", long)); out[0].NumCachedTokens != 0 {
		t.Errorf("after kv_evict: %d cached tokens, want 0", out[0].NumCachedTokens)
	}
}
