package wire

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Pooling types, vLLM's PoolerConfig names: how a request's hidden states
// (after the model's final norm, [P][Dim] for a P-token prompt) become one
// embedding.
const (
	PoolingDefault = ""     // the engine's (--pooling, the model file's pooling_type, else LAST)
	PoolingLast    = "LAST" // the last prompt token's hidden state (decoder embedders: Qwen3-Embedding, e5-mistral, gte-Qwen2)
	PoolingMean    = "MEAN" // the mean over every prompt token's
	PoolingCLS     = "CLS"  // the first prompt token's
	// PoolingNone is no pooling (llama-server's --pooling none): every
	// prompt token's hidden state, [P][Dim] row after row, each
	// normalized and cut to Dimensions on its own.
	PoolingNone = "NONE"
	// PoolingRank (llama.cpp's rank pooling, vLLM's classify and score
	// tasks) runs the model's classification head over the last prompt
	// token's hidden state: the output is the head's raw logits, one per
	// class (READY's classifier_labels); Normalize and Dimensions do not
	// apply. Only a model with a head (a reranker) takes it.
	PoolingRank = "RANK"
)

// PoolingParams is vLLM's PoolingParams as far as an embedding goes: a
// request carrying it computes its prompt and finishes with one
// PoolingOutput instead of sampling tokens. A map with every key:
//
//	"pooling_type" str  ("" = the engine's default)
//	"normalize"    bool (L2-normalize the pooled vector)
//	"dimensions"   int  (0 = all; else keep the first n, before normalizing: Matryoshka)
type PoolingParams struct {
	PoolingType string
	Normalize   bool
	Dimensions  int
}

var poolingKeys = []string{"pooling_type", "normalize", "dimensions"}

func (p *PoolingParams) encode(e *enc) {
	e.mapLen(len(poolingKeys))
	e.str(poolingKeys[0])
	e.str(p.PoolingType)
	e.str(poolingKeys[1])
	e.bool(p.Normalize)
	e.str(poolingKeys[2])
	e.int(int64(p.Dimensions))
}

func (p *PoolingParams) decode(d *dec) error {
	*p = PoolingParams{}
	return d.fieldMap("PoolingParams", func(key string) (bool, error) {
		var err error
		switch key {
		case "pooling_type":
			p.PoolingType, err = d.str()
		case "normalize":
			p.Normalize, err = d.bool()
		case "dimensions":
			p.Dimensions, err = d.int()
		default:
			return false, nil
		}
		return true, err
	})
}

// float32s writes v as a bin of little-endian float32s (4 bytes each).
func (e *enc) float32s(v []float32) {
	if e.err != nil {
		return
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	e.check(e.e.EncodeBytes(b))
}

// float32s reads a bin of little-endian float32s; nil reads as nil.
func (d *dec) float32s() ([]float32, error) {
	if isNil, err := d.takeNil(); isNil || err != nil {
		return nil, err
	}
	b, err := d.bin()
	if err != nil {
		return nil, err
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("float32s: %d bytes, not a multiple of 4", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
