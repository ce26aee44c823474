package gguf_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/wire/gguf"
)

// TestAddTensorFunc checks that data made while writing gives the same
// file as data given up front, one call per tensor in order, and that a
// failing or wrong-sized maker fails WriteTo.
func TestAddTensorFunc(t *testing.T) {
	eager, lazy := gguf.NewWriter(), gguf.NewWriter()
	var order []string
	for _, tt := range tinyTensors {
		if err := eager.AddTensor(tt.name, tt.typ, tt.shape, tt.data); err != nil {
			t.Fatal(err)
		}
		if err := lazy.AddTensorFunc(tt.name, tt.typ, tt.shape, func() ([]byte, error) {
			order = append(order, tt.name)
			return tt.data, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	var a, b bytes.Buffer
	if _, err := eager.WriteTo(&a); err != nil {
		t.Fatal(err)
	}
	if _, err := lazy.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("AddTensorFunc wrote a different file than AddTensor")
	}
	if len(order) != len(tinyTensors) || order[0] != tinyTensors[0].name {
		t.Errorf("makers called %v, want each tensor once in order", order)
	}

	boom := errors.New("boom")
	for name, data := range map[string]func() ([]byte, error){
		"fails":      func() ([]byte, error) { return nil, boom },
		"wrong size": func() ([]byte, error) { return []byte{1}, nil },
	} {
		w := gguf.NewWriter()
		tt := tinyTensors[0]
		if err := w.AddTensorFunc(tt.name, tt.typ, tt.shape, data); err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteTo(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tt.name) {
			t.Errorf("%s: WriteTo = %v, want an error naming %s", name, err, tt.name)
		}
	}
}
