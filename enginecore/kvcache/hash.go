package kvcache

import (
	"crypto/sha256"
	"encoding/binary"
)

// BlockHash identifies the content of one full block together with
// everything before it: SHA-256 over (parent hash, the block's token ids,
// extra keys), truncated to its first 16 bytes. See the package doc for the
// exact byte layout.
type BlockHash [16]byte

// Uint64 is the 64-bit form used in KV events (vLLM/Dynamo consumers want
// an integer): the first 8 bytes of h, big-endian.
func (h BlockHash) Uint64() uint64 { return binary.BigEndian.Uint64(h[:8]) }

// HashBlockTokens returns the chained hash of one full block. parent is the
// previous block's hash (the zero BlockHash for the first block); tokens are
// the block's token ids (BlockSize of them); extra is the block's extra key
// bytes (the cache salt for the first block, empty otherwise).
//
// Layout hashed (all integers little-endian, fixed width):
//
//	parent[16] | u32 len(tokens) | len(tokens) × i32 token | u32 len(extra) | extra
//
// It allocates nothing when buf has room: buf is scratch space and the
// (possibly grown) buffer is returned for reuse.
func HashBlockTokens(buf []byte, parent BlockHash, tokens []int32, extra []byte) (BlockHash, []byte) {
	n := 16 + 4 + 4*len(tokens) + 4 + len(extra)
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	b := buf[:n]
	copy(b, parent[:])
	binary.LittleEndian.PutUint32(b[16:], uint32(len(tokens)))
	off := 20
	for _, t := range tokens {
		binary.LittleEndian.PutUint32(b[off:], uint32(t))
		off += 4
	}
	binary.LittleEndian.PutUint32(b[off:], uint32(len(extra)))
	copy(b[off+4:], extra)
	sum := sha256.Sum256(b)
	var h BlockHash
	copy(h[:], sum[:16])
	return h, buf
}
