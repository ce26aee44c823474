package safetensors_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/model/safetensors"
)

type entry struct {
	name, dtype string
	shape       []uint64
	data        []byte
}

func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 1)
	}
	return b
}

var entries = []entry{
	{"model.embed_tokens.weight", "BF16", []uint64{4, 3}, seq(24)},
	{"model.norm.weight", "F32", []uint64{3}, seq(12)},
	{"lm_head.weight", "F16", []uint64{4, 3}, seq(24)},
	{"scalar", "F32", []uint64{}, seq(4)},
	{"position_ids", "I64", []uint64{2}, seq(16)},
}

func encode(t testing.TB, es []entry, meta map[string]string) []byte {
	t.Helper()
	w := safetensors.NewWriter()
	w.Metadata = meta
	for _, e := range es {
		if err := w.Add(e.name, e.dtype, e.shape, e.data); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	data := encode(t, entries, map[string]string{"format": "pt"})
	if hl := binary.LittleEndian.Uint64(data); (8+hl)%8 != 0 {
		t.Errorf("data section at %d, not 8-byte aligned", 8+hl)
	}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if diff := cmp.Diff(map[string]string{"format": "pt"}, f.Metadata); diff != "" {
		t.Errorf("Metadata (-want +got):\n%s", diff)
	}
	tests := []struct {
		name string
		want *model.Tensor
	}{
		{"model.embed_tokens.weight", &model.Tensor{Name: "model.embed_tokens.weight", Type: model.BF16, Shape: []int{3, 4}, Data: seq(24)}},
		{"model.norm.weight", &model.Tensor{Name: "model.norm.weight", Type: model.F32, Shape: []int{3}, Data: seq(12)}},
		{"lm_head.weight", &model.Tensor{Name: "lm_head.weight", Type: model.F16, Shape: []int{3, 4}, Data: seq(24)}},
		{"scalar", &model.Tensor{Name: "scalar", Type: model.F32, Shape: []int{}, Data: seq(4)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.Tensor(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := f.Tensor("position_ids"); !errors.Is(err, safetensors.ErrDType) || !strings.Contains(err.Error(), "I64") {
		t.Errorf("I64 tensor: %v, want ErrDType naming I64", err)
	}
	if ti, ok := f.Info("position_ids"); !ok || ti.DType != "I64" || !cmp.Equal(ti.Shape, []uint64{2}) {
		t.Errorf("Info(position_ids) = %+v, %v", ti, ok)
	}
	if _, err := f.Tensor("missing"); err == nil {
		t.Error("missing tensor found")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Tensor("scalar"); !errors.Is(err, safetensors.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// header builds a file from a raw JSON header and n data bytes.
func header(js string, n int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	return append(append(b, js...), make([]byte, n)...)
}

func TestHostile(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"short", []byte{1, 2, 3}, "too short"},
		{"huge header", binary.LittleEndian.AppendUint64(nil, 1<<62), "header length"},
		{"header past end", append(binary.LittleEndian.AppendUint64(nil, 100), '{', '}'), "header length"},
		{"not an object", header(`[1,2]`, 0), "not a JSON object"},
		{"bad json", header(`{"a":`, 0), "header"},
		{"bad entry", header(`{"a":{"dtype":3}}`, 0), `tensor "a"`},
		{"no offsets", header(`{"a":{"dtype":"F32","shape":[1]}}`, 4), "data_offsets"},
		{"three offsets", header(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}`, 8), "data_offsets"},
		{"negative shape", header(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4), `tensor "a"`},
		{"reversed offsets", header(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}}`, 4), "outside"},
		{"past end", header(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 4), "outside"},
		{"size mismatch", header(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4), "does not fill"},
		{"shape overflow", header(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}`, 4), "does not fill"},
		{"overlap", header(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "overlaps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := safetensors.Parse(tt.data)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, safetensors.ErrFormat) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q: want ErrFormat mentioning %q", err, tt.want)
			}
		})
	}
}

func TestUnknownDTypeReadable(t *testing.T) {
	f, err := safetensors.Parse(header(`{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}`, 2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Tensor("a"); !errors.Is(err, safetensors.ErrDType) {
		t.Errorf("F4 tensor: %v", err)
	}
}

func writeFile(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeIndex(t *testing.T, dir string, weightMap map[string]string) {
	t.Helper()
	js, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 1}, "weight_map": weightMap})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, safetensors.IndexFile, js)
}

func TestOpenDir(t *testing.T) {
	shard1 := encode(t, entries[:2], nil)
	shard2 := encode(t, entries[2:4], nil)
	names := []string{"lm_head.weight", "model.embed_tokens.weight", "model.norm.weight", "scalar"}

	t.Run("sharded", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "model-00001-of-00002.safetensors", shard1)
		writeFile(t, dir, "model-00002-of-00002.safetensors", shard2)
		writeIndex(t, dir, map[string]string{
			"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
			"model.norm.weight":         "model-00001-of-00002.safetensors",
			"lm_head.weight":            "model-00002-of-00002.safetensors",
			"scalar":                    "model-00002-of-00002.safetensors",
		})
		s, err := safetensors.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if diff := cmp.Diff(names, s.Names()); diff != "" {
			t.Errorf("Names (-want +got):\n%s", diff)
		}
		got, err := s.Tensor("lm_head.weight")
		if err != nil || !bytes.Equal(got.Data, seq(24)) {
			t.Errorf("lm_head: %v %v", got, err)
		}
	})
	t.Run("single", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "model.safetensors", encode(t, entries[:4], nil))
		s, err := safetensors.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if diff := cmp.Diff(names, s.Names()); diff != "" {
			t.Errorf("Names (-want +got):\n%s", diff)
		}
	})

	bad := []struct {
		name  string
		setup func(dir string)
		want  string
	}{
		{"empty dir", func(string) {}, "no model.safetensors.index.json"},
		{"index names missing tensor", func(dir string) {
			writeFile(t, dir, "a.safetensors", shard1)
			writeIndex(t, dir, map[string]string{"model.norm.weight": "a.safetensors", "ghost": "a.safetensors"})
		}, `"ghost"`},
		{"index escapes dir", func(dir string) {
			writeIndex(t, dir, map[string]string{"x": "../a.safetensors"})
		}, "not a file name"},
		{"index bad json", func(dir string) { writeFile(t, dir, safetensors.IndexFile, []byte("{")) }, safetensors.IndexFile},
		{"duplicate across files", func(dir string) {
			writeFile(t, dir, "a.safetensors", shard1)
			writeFile(t, dir, "b.safetensors", shard1)
		}, "more than one file"},
		{"missing shard", func(dir string) {
			writeIndex(t, dir, map[string]string{"x": "nope.safetensors"})
		}, "nope.safetensors"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(dir)
			s, err := safetensors.OpenDir(dir)
			if err == nil {
				s.Close()
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

// FuzzParse: arbitrary bytes never panic, fail only with ErrFormat, and
// every accepted tensor's data lies inside the input.
func FuzzParse(f *testing.F) {
	f.Add(encode(f, entries, map[string]string{"format": "pt"}))
	f.Add(encode(f, entries[:1], nil))
	f.Add(header(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := safetensors.Parse(data)
		if err != nil {
			if !errors.Is(err, safetensors.ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		for _, ti := range file.Infos() {
			tn, err := file.Tensor(ti.Name)
			if err != nil {
				if !errors.Is(err, safetensors.ErrDType) {
					t.Fatalf("tensor %q: %v", ti.Name, err)
				}
				continue
			}
			if uint64(len(tn.Data)) != ti.End-ti.Begin || tn.Type.RowBytes(tn.NumElements()) != len(tn.Data) {
				t.Fatalf("tensor %q: %d bytes for %v %v", ti.Name, len(tn.Data), tn.Type, tn.Shape)
			}
		}
	})
}
