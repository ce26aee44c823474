package wire

import (
	"crypto/sha256"
	"encoding/binary"
)

// The prefix cache's block hashes, in one place for the engine (which
// names its KV blocks with them, enginecore/kvcache) and the frontend's
// router (which predicts them from a prompt to find the engine holding
// its prefix): docs/wire.md §10.

// BlockHash identifies the content of one full block together with
// everything before it: SHA-256 over (parent hash, the block's token ids,
// extra keys), truncated to its first 16 bytes (HashBlockTokens has the
// exact byte layout).
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

// BlockHashes appends to dst the event form (BlockHash.Uint64) of the
// chained hashes of the full blocks of tokens, as an engine names them:
// the salt is block 0's extra key.
func BlockHashes(dst []uint64, tokens []int32, blockSize int, salt string) []uint64 {
	if blockSize <= 0 {
		return dst
	}
	var parent BlockHash
	buf := make([]byte, 0, 16+4+4*blockSize+4+len(salt))
	for start := 0; start+blockSize <= len(tokens); start += blockSize {
		var extra []byte
		if start == 0 {
			extra = []byte(salt)
		}
		parent, buf = HashBlockTokens(buf, parent, tokens[start:start+blockSize], extra)
		dst = append(dst, parent.Uint64())
	}
	return dst
}
