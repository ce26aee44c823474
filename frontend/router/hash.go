package router

import "hash/fnv"

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
