package wire_test

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/wire"
)

var update = flag.Bool("update", false, "rewrite the testdata/*.golden files")

// goldenCase is one golden vector. A message (typ set) is stored as its two
// frames; a bare value (typ unset, e.g. a PUB payload) as one frame.
type goldenCase struct {
	name    string
	comment string
	typ     *wire.MsgType
	value   any // what Encode/Marshal is given and Decode/Unmarshal must return
}

func msgType(t wire.MsgType) *wire.MsgType { return &t }

func goldenCases(t testing.TB) []goldenCase {
	return []goldenCase{
		{"add", "ADD: EngineCoreRequest with session_id, cache_salt and non-default sampling params",
			msgType(wire.MsgAdd), sampleAdd()},
		{"abort", "ABORT: two internal request ids",
			msgType(wire.MsgAbort), &wire.Abort{RequestIDs: []string{"cmpl-abc123-0-9f8e7d6c", "cmpl-def456-0-0a1b2c3d"}}},
		{"utility", `UTILITY: get_session("conv-42")`,
			msgType(wire.MsgUtility), &wire.Utility{CallID: 0x9e3779b97f4a7c15, Method: "get_session", Args: []any{"conv-42"}}},
		{"hello", "HELLO from a frontend",
			msgType(wire.MsgHello), &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: "fe-7c1d", PID: 1234}},
		{"heartbeat", "HEARTBEAT from an engine",
			msgType(wire.MsgHeartbeat), &wire.Heartbeat{Timestamp: 1754000000.75, NumRunning: 3, NumWaiting: 1, SchedulerStats: &wire.SchedulerStats{NumRunningReqs: 3, NumWaitingReqs: 1, KVCacheUsage: 0.25, NumFreeBlocks: 96, NumTotalBlocks: 128, StepCounter: 42, PrefixCacheQueries: 1000, PrefixCacheHits: 960, NumPreemptions: 2}}},
		{"ready", "READY accepting the HELLO (error nil)",
			msgType(wire.MsgReady), sampleReady()},
		{"ready_speculative", "READY of an engine drafting with a draft model (speculative [n_max, n_min, p_min, type])",
			msgType(wire.MsgReady), func() *wire.Ready {
				r := sampleReady()
				r.Speculative = &wire.SpecInfo{NMax: 16, NMin: 2, PMin: 0.75, Type: "draft-simple"}
				return r
			}()},
		{"ready_refused", "READY refusing a HELLO of another protocol version",
			msgType(wire.MsgReady), &wire.Ready{ProtocolVersion: wire.ProtocolVersion, Error: "protocol version 2 not supported (engine speaks 1)", EngineID: "e-5f2c", PID: 4242}},
		{"outputs", "OUTPUTS: one running output (queued and scheduled events), one finished (stop, stop_reason 2, logprobs), scheduler stats",
			msgType(wire.MsgOutputs), sampleOutputs()},
		{"utility_result", "UTILITY_RESULT: call id and a SessionInfo map as result",
			msgType(wire.MsgUtilityResult), sampleUtilityResult(t)},
		{"engine_dead", "ENGINE_DEAD",
			msgType(wire.MsgEngineDead), &wire.EngineDead{Reason: "CUDA error: out of memory"}},
		{"load_report", "LoadReport: PUB payload under topic \"load\" (one frame: the msgpack value)",
			nil, sampleLoadReport()},
	}
}

func (c goldenCase) encode() ([][]byte, error) {
	if c.typ != nil {
		return wire.Encode(*c.typ, c.value)
	}
	b, err := wire.Marshal(c.value)
	return [][]byte{b}, err
}

func (c goldenCase) decode(frames [][]byte) (any, error) {
	if c.typ != nil {
		typ, v, err := wire.Decode(frames)
		if err == nil && typ != *c.typ {
			err = fmt.Errorf("decoded type %s, want %s", typ, *c.typ)
		}
		return v, err
	}
	if len(frames) != 1 {
		return nil, fmt.Errorf("%d frames, want 1", len(frames))
	}
	v := new(wire.LoadReport)
	return v, wire.Unmarshal(frames[0], v)
}

func TestGolden(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join("testdata", c.name+".golden")
			got, err := c.encode()
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if *update {
				if err := os.WriteFile(path, formatGolden(c.comment, got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := readGolden(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Encode differs from %s (-golden +got):\n%s\nrun go test ./wire -update if the change is intended", path, diff)
			}
			v, err := c.decode(want)
			if err != nil {
				t.Fatalf("decode %s: %v", path, err)
			}
			if diff := cmp.Diff(c.value, v); diff != "" {
				t.Errorf("decode %s (-want +got):\n%s", path, diff)
			}
		})
	}
}

// The golden format is text: '#' lines are comments, "frame N" starts a
// frame, and every other line holds that frame's bytes in hex, 16 per line.
func formatGolden(comment string, frames [][]byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n", comment)
	b.WriteString("# Hex bytes of each ZMQ frame; regenerate with: go test ./wire -update\n")
	for i, f := range frames {
		fmt.Fprintf(&b, "frame %d\n", i)
		for len(f) > 0 {
			n := min(len(f), 16)
			parts := make([]string, n)
			for j := range n {
				parts[j] = hex.EncodeToString(f[j : j+1])
			}
			b.WriteString(strings.Join(parts, " ") + "\n")
			f = f[n:]
		}
	}
	return b.Bytes()
}

func readGolden(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseGolden(string(data))
}

func parseGolden(s string) ([][]byte, error) {
	var frames [][]byte
	for n, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "frame "):
			frames = append(frames, []byte{})
		default:
			if len(frames) == 0 {
				return nil, fmt.Errorf("line %d: bytes before the first frame line", n+1)
			}
			b, err := hex.DecodeString(strings.ReplaceAll(line, " ", ""))
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n+1, err)
			}
			frames[len(frames)-1] = append(frames[len(frames)-1], b...)
		}
	}
	return frames, nil
}

// TestDocsExample keeps the worked ADD example in docs/wire.md equal to
// the golden payload.
func TestDocsExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "wire.md"))
	if err != nil {
		t.Skipf("docs/wire.md not readable: %v", err)
	}
	_, block, ok := strings.Cut(string(doc), "Raw payload, as in the golden file:\n\n```\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("docs/wire.md has no raw ADD payload block")
	}
	got, err := parseGolden("frame 1\n" + block)
	if err != nil {
		t.Fatal(err)
	}
	want, err := readGolden(filepath.Join("testdata", "add.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[0], want[1]) {
		t.Errorf("docs/wire.md ADD example differs from testdata/add.golden:\ndocs:   % x\ngolden: % x", got[0], want[1])
	}
}
