// Package gguf reads and writes GGUF files (versions 2 and 3, little
// endian), the llama.cpp format that holds a model's hyper-parameters,
// tokenizer and weights. The engine reads weights through [Open]; the
// frontend reads only tokenizer metadata through [ParseMetadata].
//
// Layout: "GGUF", u32 version, u64 tensor count, u64 metadata count; the
// metadata pairs (u64-length key, u32 value type, value); the tensor infos
// (name, u32 n_dims ≤ 4, u64 dims in ggml order, u32 ggml type, u64 offset);
// padding to general.alignment (default 32); the data section, where each
// tensor sits at its offset.
//
// Reading is safe on hostile input: declared counts and lengths are
// checked against the bytes left before anything is allocated (so parsing
// allocates at most a constant times the file size), arrays nest at most 8
// deep, tensors must lie inside the file, aligned and without overlap, and
// every format failure wraps [ErrFormat].
//
// It imports nothing from this repository: the engine and the frontend
// both use it, and wire's rule (no repository imports) applies.
//
// Usage:
//
//	f, err := gguf.Open("model.gguf") // mmapped, read-only
//	if err != nil { ... }
//	defer f.Close()
//	arch, _ := f.String("general.architecture")
//	for _, ti := range f.Tensors() {
//		data, err := f.TensorData(ti) // zero-copy, valid until Close
//		...
//	}
//
// Tokenizer metadata only:
//
//	fd, _ := os.Open(path)
//	st, _ := fd.Stat()
//	md, err := gguf.ParseMetadata(fd, st.Size())
//	tokens, _ := md.Strings("tokenizer.ggml.tokens")
//
// Writing (tests and test-model generators):
//
//	w := gguf.NewWriter()
//	_ = w.AddKV("general.architecture", "llama")
//	_ = w.AddTensor("output_norm.weight", 0, []uint64{64}, f32bytes)
//	_, err = w.WriteTo(file)
package gguf
