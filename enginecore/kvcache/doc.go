// Package kvcache does the block accounting of the paged KV cache (vLLM v1's
// BlockPool and KVCacheManager): one pool of NumBlocks blocks of BlockSize
// tokens, a block table per request, reference counts, prefix caching by
// chained block hashes, an O(1) free queue and a session-aware eviction
// policy. It hands out block ids only; the runner owns the memory.
//
// It is pure and deterministic: no goroutines, no logging, no ctx, the clock
// injected (Config.Now). It imports nothing from this repository, and must
// not import frontend/*, wire or gpu/*.
//
// # Requests
//
// Lookup registers a request id (with its cache salt and session) and pins
// the longest cached prefix of full blocks, never covering the last token:
// with n tokens at most floor((n-1)/BlockSize) blocks hit. Allocate grows
// the table (all-or-nothing), Commit hashes and indexes the full blocks
// that are computed, Free releases the table and forgets the id.
//
// # Hashes
//
// Block i's hash is SHA-256 over the bytes below, truncated to its first 16
// bytes (integers little-endian, fixed width):
//
//	parent     [16]byte         hash of block i-1; 16 zero bytes for block 0
//	n          u32              number of tokens (BlockSize)
//	tokens     n × i32          the block's token ids
//	len(extra) u32              length of the extra key
//	extra      len(extra) bytes the cache_salt for block 0, empty for later blocks
//
// The salt reaches later blocks through the chain, so different salts never
// share a block. The hash is the same in every process (no random seed), so
// a router can recompute it from token ids: it is wire.HashBlockTokens,
// which the frontend's router uses too (wire.BlockHashes). The index compares all 128
// bits; KV events carry the 64-bit BlockHash.Uint64 (first 8 bytes,
// big-endian). When Commit finds a block's hash already indexed by another
// block, the block stays unhashed (a duplicate) and is recycled as such.
//
// # Eviction order
//
// A free block is on exactly one free list. Allocate takes from the first
// non-empty tier:
//
//  0. blocks without a hash (never cached, duplicates, evicted): most
//     recently freed first;
//  1. cached blocks of ended sessions (EndSession), the session ended (or,
//     with requests still live, last active) longest ago first;
//  2. cached blocks of idle sessions (no live request, no hold), the
//     session idle longest first;
//  3. cached blocks last released by sessionless requests, LRU;
//  4. cached blocks of active sessions (≥1 live request or hold), the
//     least recently active session first.
//
// Within a session, blocks go least recently released first; Free releases
// a table last block first, so a request's tail is evicted before its
// prefix. A cached block belongs to the session of the request that
// released it last (the latest user); a hit by another session's request
// takes it over when that request frees it. A sessionless request only
// borrows it: freed, it goes back to its session (at that session's place
// in its tier), so a prefix shared with sessionless traffic (a common
// system prompt) keeps its session's protection, and the session stays
// known while its blocks are lent. Session order is the order of
// the sessions' last activity (Lookup, Allocate, Commit, Free of one of
// their requests, Hold, Release; EndSession for tier 1); with a clock that
// never goes back it is the order of Config.Now. Lookup, Allocate, Commit
// and Free cost O(1) per block, plus hashing.
//
// # Sessions
//
// A session is active while one of its requests is registered (Lookup,
// until Free) or it has a Hold not yet Released; idle otherwise; ended
// from EndSession until a later Lookup or Hold re-opens it. Lookup/Free
// alone lose track of a request that waits without blocks (its admission
// failed and it was freed, or it was preempted): a scheduler that frees
// such requests should Hold the session when the request is added and
// Release it when the request finishes, so the blocks it will need are not
// evicted first. A session is forgotten once it has no request, no hold
// and no cached block of its own, free or lent.
//
// # Events and counters
//
// With Config.EnableEvents the manager records BlockStored (Commit),
// BlockRemoved (eviction by Allocate) and AllBlocksCleared
// (ResetPrefixCache) for the KV-event publisher to DrainEvents. Stats
// gives pool usage, prefix-cache queries and hits in tokens, evictions.
//
// # Usage
//
//	m, err := kvcache.New(kvcache.Config{NumBlocks: 1024, BlockSize: 16, EnablePrefixCaching: true})
//	m.Hold(sessionID) // request added
//	numCached := m.Lookup("req-1", prompt, salt, sessionID, kvcache.Adapter{})
//	if !m.Allocate("req-1", numCached+chunk) {
//		m.Free("req-1") // wait, Lookup again later
//	}
//	table := m.BlockTable("req-1") // for the runner
//	m.Commit("req-1", tokens, numComputed) // after the step
//	m.Free("req-1")                        // finished, aborted or preempted
//	m.Release(sessionID)                   // finished or aborted
//	m.EndSession(sessionID)                // DELETE /v1/sessions/{id}
package kvcache
