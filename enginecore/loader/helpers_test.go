package loader_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// kvs is an editable, ordered copy of a GGUF file's metadata.
type kvs struct {
	keys   []string
	values map[string]any
}

func (k *kvs) set(key string, v any) {
	if _, ok := k.values[key]; !ok {
		k.keys = append(k.keys, key)
	}
	k.values[key] = v
}

func (k *kvs) drop(key string) {
	k.keys = slices.DeleteFunc(k.keys, func(s string) bool { return s == key })
	delete(k.values, key)
}

type rawTensor struct {
	name  string
	typ   uint32
	shape []uint64
	data  []byte
}

// tensors is an editable copy of a GGUF file's tensors.
type tensors struct{ list []rawTensor }

func (ts *tensors) drop(name string) {
	ts.list = slices.DeleteFunc(ts.list, func(r rawTensor) bool { return r.name == name })
}

// retype changes a tensor's type, its data zeroed to the new size.
func (ts *tensors) retype(name string, typ uint32) {
	for i := range ts.list {
		if r := &ts.list[i]; r.name == name {
			size, err := gguf.TensorSize(typ, r.shape)
			if err != nil {
				panic(err)
			}
			r.typ, r.data = typ, make([]byte, size)
		}
	}
}

// add appends an F32 vector of n zeros.
func (ts *tensors) add(name string, n int) {
	ts.list = append(ts.list, rawTensor{name, 0, []uint64{uint64(n)}, make([]byte, 4*n)})
}

// rewrite writes spec as GGUF, lets edit change its metadata and tensors,
// and writes the result to dir/model.gguf.
func rewrite(t *testing.T, dir string, spec testmodel.Spec, edit func(*kvs, *tensors)) string {
	t.Helper()
	orig := filepath.Join(dir, "orig.gguf")
	if err := testmodel.WriteGGUF(orig, spec); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(orig)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	k := &kvs{values: map[string]any{}}
	for _, key := range f.Keys() {
		v, _ := f.KV(key)
		k.set(key, v)
	}
	ts := &tensors{}
	for _, ti := range f.Tensors() {
		data, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		ts.list = append(ts.list, rawTensor{ti.Name, ti.Type, ti.Shape, bytes.Clone(data)})
	}
	edit(k, ts)
	w := gguf.NewWriter()
	for _, key := range k.keys {
		if err := w.AddKV(key, k.values[key]); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range ts.list {
		if err := w.AddTensor(r.name, r.typ, r.shape, r.data); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "model.gguf")
	writeFile(t, path, buf.Bytes())
	return path
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
