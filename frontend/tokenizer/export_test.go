package tokenizer

// ResetCache empties the word cache, for benchmarks of text never seen before.
func (t *BPE) ResetCache() {
	t.cache.mu.Lock()
	t.cache.m = nil
	t.cache.mu.Unlock()
}

// IsSentencePiece reports whether t writes a space as ▁.
func (t *BPE) IsSentencePiece() bool { return t.style == styleSentencePiece }

// IsAdded reports whether id is split out before BPE (control, unknown or
// user-defined).
func (t *BPE) IsAdded(id int32) bool {
	k := t.kinds[id]
	return k == kindControl || k == kindUnknown || k == kindUserDefined
}
