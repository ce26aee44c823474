package slotfile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/tandem-llm/tandem/wire"
)

const (
	seqMagic     = 0x67677371 // 'ggsq', LLAMA_STATE_SEQ_MAGIC
	seqVersion   = 3          // LLAMA_STATE_SEQ_VERSION
	tokenNull    = -1         // LLAMA_TOKEN_NULL: marks packed server tokens
	tokensFormat = 1          // SERVER_TOKENS_STATE_VERSION
	kvMagic      = 0x766b6474 // 'tdkv'
	kvVersion    = 1
	maxMeta      = 1 << 20 // bytes of the KV section's metadata
)

// Errors of Read, checked with errors.Is: each is a 400 for the client.
var (
	ErrFormat = errors.New("invalid slot save file")
	//lint:ignore ST1005 llama-server's message, verbatim
	ErrMedia = errors.New("Cannot restore media tokens without an mmproj")
)

// KV is a file's KV section without its data.
type KV struct {
	Layout    map[string]any // the engine's kv_export layout
	CacheSalt string
	// NumBlocks is the blocks of the data: what Read found, or what Write
	// wrote.
	NumBlocks int
}

// BytesPerBlock is the layout's block size in bytes (0 if absent).
func (k *KV) BytesPerBlock() int {
	switch n := k.Layout["bytes_per_block"].(type) {
	case int64:
		return int(n)
	case uint64:
		return int(min(n, math.MaxInt32))
	}
	return 0
}

// Write writes a file of tokens; with kv non-nil, the KV section follows,
// its data copied from data to its end (whole blocks of
// kv.BytesPerBlock(), read as they come: data may produce them lazily),
// and kv.NumBlocks set to how many. It returns the bytes written (0 with
// an error).
func Write(w io.Writer, tokens []int32, kv *KV, data io.Reader) (int64, error) {
	bw := bufio.NewWriter(w)
	words := []uint32{seqMagic, seqVersion, uint32(3 + len(tokens) + 1), uint32(0xFFFFFFFF), tokensFormat, uint32(len(tokens))}
	for _, t := range tokens {
		words = append(words, uint32(t))
	}
	words = append(words, 0) // no media chunks
	if err := binary.Write(bw, binary.LittleEndian, words); err != nil {
		return 0, err
	}
	size := 4 * int64(len(words))
	if kv != nil {
		per := int64(kv.BytesPerBlock())
		if per <= 0 {
			return 0, fmt.Errorf("slotfile: the KV layout has no bytes_per_block")
		}
		meta, err := wire.Marshal(map[string]any{"layout": kv.Layout, "cache_salt": kv.CacheSalt})
		if err != nil {
			return 0, err
		}
		if err := binary.Write(bw, binary.LittleEndian, []uint32{kvMagic, kvVersion, uint32(len(meta))}); err != nil {
			return 0, err
		}
		if _, err := bw.Write(meta); err != nil {
			return 0, err
		}
		n, err := io.Copy(bw, data)
		if err == nil && n%per != 0 {
			err = fmt.Errorf("slotfile: KV data of %d bytes is not whole blocks of %d", n, per)
		}
		if err != nil {
			return 0, err
		}
		kv.NumBlocks = int(n / per)
		size += 12 + int64(len(meta)) + n
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	return size, nil
}

// File is a file read up to its KV data.
type File struct {
	Tokens []int32
	KV     *KV // nil: no Tandem KV section
	// Data reads the KV data, KV.NumBlocks blocks (nil without KV).
	Data io.Reader
}

// Read reads a file's header, tokens and KV metadata from r; the KV data
// is then read from File.Data. size is the file's length, which bounds
// what the header may claim. maxTokens bounds the token list.
func Read(r io.Reader, size int64, maxTokens int) (*File, error) {
	br := bufio.NewReader(r)
	var head [3]uint32
	if err := binary.Read(br, binary.LittleEndian, &head); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if head[0] != seqMagic || head[1] != seqVersion {
		return nil, fmt.Errorf("%w: unknown (magic, version) %08x, %08x", ErrFormat, head[0], head[1])
	}
	n := int64(head[2])
	if 12+4*n > size {
		return nil, fmt.Errorf("%w: token count %d exceeds the file size", ErrFormat, n)
	}
	if n > int64(maxTokens)+5 {
		return nil, fmt.Errorf("%w: %d tokens exceed the slot context (%d)", ErrFormat, n, maxTokens)
	}
	payload := make([]int32, n)
	if err := binary.Read(br, binary.LittleEndian, payload); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	tokens, err := unpack(payload)
	if err != nil {
		return nil, err
	}
	f := &File{Tokens: tokens}
	var sec [3]uint32
	if err := binary.Read(br, binary.LittleEndian, &sec); err != nil || sec[0] != kvMagic {
		return f, nil // no KV section of ours: tokens only
	}
	if sec[1] != kvVersion || sec[2] > maxMeta {
		return nil, fmt.Errorf("%w: KV section version %d, metadata of %d bytes", ErrFormat, sec[1], sec[2])
	}
	meta := make([]byte, sec[2])
	if _, err := io.ReadFull(br, meta); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	var m map[string]any
	if err := wire.Unmarshal(meta, &m); err != nil {
		return nil, fmt.Errorf("%w: KV metadata: %w", ErrFormat, err)
	}
	kv := &KV{}
	kv.Layout, _ = m["layout"].(map[string]any)
	kv.CacheSalt, _ = m["cache_salt"].(string)
	per := int64(kv.BytesPerBlock())
	rest := size - (12 + 4*n + 12 + int64(len(meta)))
	if kv.Layout == nil || per <= 0 || rest < 0 || rest%per != 0 {
		return nil, fmt.Errorf("%w: KV data of %d bytes is not whole blocks of %d", ErrFormat, rest, per)
	}
	kv.NumBlocks = int(rest / per)
	f.KV, f.Data = kv, io.LimitReader(br, rest)
	return f, nil
}

// unpack reads the token payload: packed server tokens, or a plain list.
func unpack(p []int32) ([]int32, error) {
	if len(p) == 0 || p[0] != tokenNull {
		for _, t := range p {
			if t < 0 {
				return nil, fmt.Errorf("%w: token id %d", ErrFormat, t)
			}
		}
		return p, nil
	}
	if len(p) < 4 || p[1] != tokensFormat {
		return nil, fmt.Errorf("%w: unsupported server tokens state", ErrFormat)
	}
	n := int(uint32(p[2]))
	if n > len(p)-4 {
		return nil, fmt.Errorf("%w: %d tokens in a payload of %d words", ErrFormat, n, len(p))
	}
	tokens := p[3 : 3+n]
	if media := p[3+n]; media != 0 {
		return nil, ErrMedia
	}
	if 3+n+1 != len(p) {
		return nil, fmt.Errorf("%w: trailing data in the server tokens state", ErrFormat)
	}
	for _, t := range tokens {
		if t < 0 {
			return nil, fmt.Errorf("%w: token id %d", ErrFormat, t)
		}
	}
	return tokens, nil
}

// ValidFilename reports whether name may be a slot file's name, as
// llama-server's fs_validate_filename (no subdirectories) decides: 1–255
// bytes of valid UTF-8 without control characters, path separators or
// :*?"<>|, no "..", not "." and no leading or trailing space or trailing
// dot.
func ValidFilename(name string) bool {
	if name == "" || len(name) > 255 || !utf8.ValidString(name) {
		return false
	}
	for _, c := range name {
		switch {
		case c <= 0x1f, c == 0x7f, c >= 0x80 && c <= 0x9f, c == 0xff0e, c == 0x2215, c == 0x2216,
			c == 0xfffd, c == 0xfeff, strings.ContainsRune(`:*?"<>|/\`, c):
			return false
		}
	}
	return name[0] != ' ' && !strings.HasSuffix(name, " ") && !strings.HasSuffix(name, ".") &&
		!strings.Contains(name, "..") && name != "."
}
