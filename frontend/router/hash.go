package router

import (
	"crypto/sha256"
	"encoding/binary"
	"hash/fnv"
)

// BlockHashes appends to dst the 64-bit hashes of the full blocks of
// tokens, exactly as an engine core's prefix cache names them in its KV
// events (enginecore/kvcache, docs/wire.md §10): block i's hash is SHA-256
// over
//
//	parent [16]byte  | u32 n | n × i32 tokens | u32 len(extra) | extra
//
// (little-endian; parent is the previous block's 16-byte hash, zero for
// block 0; extra is the cache salt for block 0 and empty after), truncated
// to 16 bytes; the event form is its first 8 bytes, big-endian. A cross-
// check test in enginecore keeps the two implementations identical.
func BlockHashes(dst []uint64, tokens []int32, blockSize int, salt string) []uint64 {
	if blockSize <= 0 {
		return dst
	}
	var parent [16]byte
	buf := make([]byte, 0, 16+4+4*blockSize+4+len(salt))
	for start := 0; start+blockSize <= len(tokens); start += blockSize {
		extra := ""
		if start == 0 {
			extra = salt
		}
		buf = buf[:0]
		buf = append(buf, parent[:]...)
		buf = binary.LittleEndian.AppendUint32(buf, uint32(blockSize))
		for _, t := range tokens[start : start+blockSize] {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(t))
		}
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(extra)))
		buf = append(buf, extra...)
		sum := sha256.Sum256(buf)
		copy(parent[:], sum[:16])
		dst = append(dst, binary.BigEndian.Uint64(sum[:8]))
	}
	return dst
}

// hrwScore is the rendezvous (highest random weight) score of key on the
// engine named name: every frontend computes the same number, so they all
// rank engines the same way for a key without talking to each other.
func hrwScore(key, name string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	k := h.Sum64()
	h.Reset()
	_, _ = h.Write([]byte(name))
	return mix64(k ^ mix64(h.Sum64()))
}

// mix64 is splitmix64's finalizer: FNV alone barely separates names that
// differ in one character (engine-0, engine-1).
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
