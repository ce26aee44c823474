package gguf

// ParseBytes parses a whole GGUF image held in memory (Open without the
// file and the mapping).
func ParseBytes(data []byte) (*File, error) { return parse(data) }
