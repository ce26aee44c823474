// Package safetensors reads Hugging Face *.safetensors files, single or
// sharded through model.safetensors.index.json, as zero-copy slices of a
// read-only mapping, and writes them (for tests and test models).
//
// A file is a u64 little-endian header length N, N bytes of JSON mapping
// each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets relative to the byte after the header; "__metadata__" is a
// free-form string map, kept but unused), then the data. Shapes are
// row-major (Shape[0] outermost); [File.Tensor] returns them in ggml order
// (reversed) as a [model.Tensor]. F32, F16 and BF16 map to model DTypes;
// other dtypes are readable as raw info but refused by Tensor.
//
// Reading is safe on hostile input: the header is at most 100 MB and
// within the file, every tensor's byte range lies inside the data, matches
// its dtype and shape, and overlaps no other; failures wrap [ErrFormat].
//
// It imports only enginecore/model from this repository.
//
// Usage:
//
//	set, err := safetensors.OpenDir("/models/Qwen2.5-0.5B") // model.safetensors or the index
//	if err != nil { ... }
//	defer set.Close()
//	for _, name := range set.Names() {
//		t, err := set.Tensor(name) // *model.Tensor, ggml shape order, data mmapped
//		...
//	}
package safetensors
