package vllm_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/vllm"
)

// TestOracle has msgspec decode Go's bytes with vLLM's structs
// (scripts/vllmwire/structs.py) and re-encode them: the bytes must be
// identical to Go's.
func TestOracle(t *testing.T) {
	python := oraclePython(t)
	add, _ := vllm.EncodeAdd(sampleAdd())
	outs, _ := vllm.EncodeOutputs(sampleOutputs())
	abort, _ := vllm.EncodeAbort([]string{"a", "b"})
	ready, _ := vllm.EncodeReadyResponse(&vllm.EngineCoreReadyResponse{MaxModelLen: 2048, DType: "bfloat16", VLLMVersion: "0.33.0"})
	meta, _ := vllm.EncodeHandshakeMetadata(&vllm.EngineHandshakeMetadata{Addresses: vllm.EngineZmqAddresses{
		Inputs: []string{"tcp://10.0.0.1:29550"}, Outputs: []string{"tcp://10.0.0.1:29551"}}})
	// An update's counts from two of Tandem's cumulative reports, with
	// speculative decoding: vLLM's SpecDecodingStats dataclass decodes them.
	step := &vllm.EngineCoreOutputs{SchedulerStats: &vllm.SchedulerStats{NumRunningReqs: 1}}
	step.SchedulerStats.SetStep(&wire.SchedulerStats{PrefixCacheQueries: 64, PrefixCacheHits: 32,
		SpecDecoding: &wire.SpecDecodingStats{NumSpecTokens: 2, NumDrafts: 5, NumDraftTokens: 9, NumAcceptedTokens: 6,
			NumAcceptedTokensPerPos: []int64{4, 2}}}, nil, 1)
	stepOuts, err := vllm.EncodeOutputs(step)
	if err != nil {
		t.Fatal(err)
	}
	cases := []oracleCase{
		{"EngineCoreRequest", hexes(add[1:])},
		{"EngineCoreOutputs", hexes(outs)},
		{"EngineCoreOutputs", hexes(stepOuts)},
		{"Any", hexes(abort[1:])},
		{"EngineCoreReadyResponse", hexes([][]byte{ready})},
		{"EngineHandshakeMetadata", hexes([][]byte{meta})},
	}
	for i, r := range runOracle(t, python, cases) {
		if r.Error != "" {
			t.Errorf("%s: msgspec: %s", cases[i].Type, r.Error)
			continue
		}
		if got, want := r.Frames, cases[i].Frames; len(got) != len(want) || !equal(got, want) {
			t.Errorf("%s: msgspec re-encoded\n%v\nGo wrote\n%v", cases[i].Type, got, want)
		}
	}
}

type oracleCase struct {
	Type   string   `json:"type"`
	Frames []string `json:"frames"`
}

type oracleResult struct {
	Frames []string `json:"frames"`
	Error  string   `json:"error"`
}

func oraclePython(t *testing.T) string {
	python := filepath.Join("..", "..", ".cache", "kvevents-venv", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		t.Skip("no .cache/kvevents-venv (scripts/kvevents/setup.sh makes it): msgspec oracle not run")
	}
	return python
}

// runOracle has scripts/vllmwire/oracle.py decode and re-encode each case.
func runOracle(t *testing.T, python string, cases []oracleCase) []oracleResult {
	t.Helper()
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, filepath.Join("..", "..", "scripts", "vllmwire", "oracle.py"))
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var res []oracleResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != len(cases) {
		t.Fatalf("oracle answered %d cases of %d", len(res), len(cases))
	}
	return res
}

// TestOracleGolden feeds every golden file (testdata/golden, without a
// request's type byte) to msgspec with vLLM's structs: its re-encoding
// must be byte-identical to the file.
func TestOracleGolden(t *testing.T) {
	python := oraclePython(t)
	gs := goldens(t)
	cases := make([]oracleCase, len(gs))
	for i, g := range gs {
		fs := readGolden(t, g.name)
		if g.typeByte {
			fs = fs[1:]
		}
		cases[i] = oracleCase{g.oracleType, hexes(fs)}
	}
	for i, r := range runOracle(t, python, cases) {
		name := goldenPath(gs[i].name)
		if r.Error != "" {
			t.Errorf("%s: msgspec: %s", name, r.Error)
			continue
		}
		if got, want := r.Frames, cases[i].Frames; len(got) != len(want) || !equal(got, want) {
			t.Errorf("%s: msgspec re-encoded\n%v\nthe file holds\n%v", name, got, want)
		}
	}
}

func hexes(fs [][]byte) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = hex.EncodeToString(f)
	}
	return out
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
