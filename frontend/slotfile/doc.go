// Package slotfile reads and writes the files of llama-server's slot save
// and restore (POST /slots/{id}?action=save|restore, --slot-save-path).
//
// The file starts as llama.cpp's sequence state file does, so llama.cpp's
// tools and tests read its token list (little-endian throughout):
//
//	magic    u32      0x67677371 ('ggsq', LLAMA_STATE_SEQ_MAGIC)
//	version  u32      3 (LLAMA_STATE_SEQ_VERSION)
//	n_words  u32      length of the token payload in 4-byte words
//	payload  n_words × 4 bytes: llama-server's packed server tokens —
//	         i32 -1 (LLAMA_TOKEN_NULL), u32 1 (its state version),
//	         u32 n, n × i32 token ids, u32 0 (no media chunks) —
//	         or, as older servers wrote it, the plain token list
//
// What follows is the KV state. llama.cpp writes its own there; Tandem
// writes a section of its own:
//
//	magic    u32      0x766b6474 ('tdkv')
//	version  u32      1
//	meta_len u32      length of meta
//	meta     msgpack map: layout (the engine's kv_export layout map),
//	         cache_salt (str)
//	data     to the end of the file, whole blocks of
//	         layout.bytes_per_block bytes: the first full blocks of the
//	         token list, as kv_export gave them (docs/wire.md)
//
// A file without that section (llama-server's, or one saved by an engine
// that cannot copy KV blocks) restores its tokens only; the frontend then
// recomputes their KV. Write and Read stream the data, so a save or a
// restore holds one chunk at a time, not the file.
package slotfile
