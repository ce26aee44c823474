package kvcache

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tandem-llm/tandem/wire"
)

// BlockID names one block of the pool: 0 ≤ id < Config.NumBlocks.
type BlockID int32

// ErrInvalidConfig is returned by New for a config it cannot build.
var ErrInvalidConfig = errors.New("kvcache: invalid config")

// Config sizes the pool.
type Config struct {
	NumBlocks           int              // total blocks in the pool, all usable (no null block)
	BlockSize           int              // tokens per block
	EnablePrefixCaching bool             // hash full blocks and reuse them across requests
	EnableEvents        bool             // record BlockStored/BlockRemoved/AllBlocksCleared for DrainEvents
	ReportGoneSessions  bool             // record forgotten sessions for DrainGoneSessions (which must then be called)
	Now                 func() time.Time // clock for session activity; nil means time.Now
}

// block is one entry of the pool. A block is either in use (ref > 0, on no
// list) or free (ref == 0, on exactly one free list).
type block struct {
	id     BlockID
	ref    int32     // live requests whose table holds the block
	cached bool      // hash is valid and index[hash] is this block
	hash   BlockHash // valid iff cached
	// owner is, for a cached block, the session whose request released it
	// last (a free block is on its free list); nil if that request was
	// sessionless. A block in use keeps its owner, which counts it as lent:
	// freed by a sessionless request it goes back to that owner, freed by a
	// session's request it becomes that session's.
	owner *session

	prev, next *block     // free-list links
	list       *blockList // the free list holding the block; nil while in use

	mark uint64 // SessionCachedTokens scratch: generation that counted the block
}

// request is one registered request id.
type request struct {
	id      string
	salt    string   // cache_salt, extra key of the first block's hash
	adapter Adapter  // the LoRA adapter its BlockStored events name
	session *session // nil for a sessionless request
	table   []BlockID
	// hashes are the chained hashes of the request's first len(hashes) full
	// blocks, computed lazily from the tokens passed to Lookup and Commit.
	hashes             []BlockHash
	numCommittedBlocks int // leading table blocks already handled by Commit or hit by Lookup
	numComputedTokens  int // tokens known computed (Lookup hits, Commit), ≤ len(table)*BlockSize
}

// Manager owns the block pool. It is not safe for concurrent use: one
// goroutine (the engine loop) owns it.
type Manager struct {
	now           func() time.Time
	blockSize     int // tokens per block
	prefixCaching bool
	events        bool

	blocks  []block // [NumBlocks] by BlockID; never reallocated, lists point into it
	numFree int     // blocks with ref == 0, on the free lists below

	// Free lists, tiers 0-4 in eviction order (see doc.go). Tiers 1, 2
	// and 4 are lists of sessions, each session holding its own free list.
	hashless    blockList   // tier 0: free blocks without a hash; head reused first
	ended       sessionList // tier 1: ended sessions holding free cached blocks
	idle        sessionList // tier 2: idle sessions holding free cached blocks, idle longest first
	sessionless blockList   // tier 3: free cached blocks released by sessionless requests, LRU first
	active      sessionList // tier 4: active sessions holding free cached blocks, least recently active first

	index      map[BlockHash]*block // cached blocks by hash
	requests   map[string]*request  // registered request ids
	sessions   map[string]*session  // sessions with a live request, a hold or a cached block of their own
	gone       []string             // sessions forgotten since the last DrainGoneSessions, with reportGone
	reportGone bool

	numQueries   int64 // prefix-cache lookups, tokens, cumulative
	numHits      int64 // prefix-cache hits, tokens, cumulative
	numEvictions int64 // cached blocks whose hash was dropped to reuse them, cumulative

	spare   []*request // freed requests kept for reuse (their slices' capacity), ≤ maxSpare
	pending []Event    // events since the last DrainEvents
	buf     []byte     // hashing scratch
	markGen uint64     // SessionCachedTokens generation
	seq     uint64     // session activity counter (session.order)
}

// New returns a Manager with all blocks free.
func New(cfg Config) (*Manager, error) {
	if cfg.NumBlocks < 1 || cfg.NumBlocks > math.MaxInt32 {
		return nil, fmt.Errorf("%w: NumBlocks %d out of range [1, %d]", ErrInvalidConfig, cfg.NumBlocks, math.MaxInt32)
	}
	if cfg.BlockSize < 1 {
		return nil, fmt.Errorf("%w: BlockSize %d < 1", ErrInvalidConfig, cfg.BlockSize)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	m := &Manager{
		now:           now,
		blockSize:     cfg.BlockSize,
		prefixCaching: cfg.EnablePrefixCaching,
		events:        cfg.EnableEvents,
		reportGone:    cfg.ReportGoneSessions,
		blocks:        make([]block, cfg.NumBlocks),
		numFree:       cfg.NumBlocks,
		index:         make(map[BlockHash]*block),
		requests:      make(map[string]*request),
		sessions:      make(map[string]*session),
	}
	for i := range m.blocks {
		m.blocks[i].id = BlockID(i)
		m.hashless.pushBack(&m.blocks[i])
	}
	return m, nil
}

// Adapter is the LoRA adapter a request's BlockStored events name (vLLM's
// lora_name and its deprecated lora_id); the zero Adapter names none. It
// changes no hash: a request's adapters are in its cache salt
// (wire.LoRASalt).
type Adapter struct {
	Name string
	ID   int // 0 = none
}

// Lookup registers id and pins the longest cached prefix of tokens made of
// full blocks, never covering the last token (its logits must be computed).
// It returns the number of cached tokens, a multiple of BlockSize. salt
// feeds the first block's hash; session ("" for none) is the session of
// id; a names the adapter of the blocks it stores. For an id that already
// holds blocks it does nothing and returns 0; an id registered without
// blocks is registered afresh.
func (m *Manager) Lookup(id string, tokens []int32, salt, session string, a Adapter) (numCachedTokens int) {
	maxBlocks := 0
	if len(tokens) > 0 {
		maxBlocks = (len(tokens) - 1) / m.blockSize
	}
	return m.lookup(id, tokens, salt, session, a, maxBlocks, true)
}

// lookup is Lookup over at most maxBlocks blocks; count says whether the
// lookup counts as a prefix-cache query in Stats.
func (m *Manager) lookup(id string, tokens []int32, salt, session string, a Adapter, maxBlocks int, count bool) (numCachedTokens int) {
	if r, ok := m.requests[id]; ok {
		if len(r.table) > 0 {
			return 0
		}
		m.Free(id)
	}
	r := m.register(id, salt, session)
	r.adapter = a
	if m.prefixCaching {
		for i := range maxBlocks {
			b, ok := m.index[m.blockHash(r, tokens, i)]
			if !ok {
				break
			}
			m.pin(b)
			r.table = append(r.table, b.id)
		}
		numCachedTokens = len(r.table) * m.blockSize
		r.numCommittedBlocks = len(r.table)
		r.numComputedTokens = numCachedTokens
		if count {
			m.numQueries += int64(len(tokens))
			m.numHits += int64(numCachedTokens)
		}
	}
	if r.session != nil {
		m.touch(r.session)
	}
	return numCachedTokens
}

// maxSpare bounds the freed requests kept for reuse.
const maxSpare = 256

// register adds a request with no blocks.
func (m *Manager) register(id, salt, sessionID string) *request {
	var r *request
	if n := len(m.spare); n > 0 {
		r = m.spare[n-1]
		m.spare = m.spare[:n-1]
		*r = request{table: r.table[:0], hashes: r.hashes[:0]}
	} else {
		r = new(request)
	}
	r.id, r.salt = id, salt
	if sessionID != "" {
		s, ok := m.sessions[sessionID]
		if !ok {
			s = &session{id: sessionID}
			m.sessions[sessionID] = s
		}
		s.numRequests++
		s.ended = false
		r.session = s
	}
	m.requests[id] = r
	return r
}

// CanAllocate reports whether Allocate(id, numTokens) would succeed.
func (m *Manager) CanAllocate(id string, numTokens int) bool {
	var numHeld int
	if r, ok := m.requests[id]; ok {
		numHeld = len(r.table)
	}
	return m.numNewBlocks(numHeld, numTokens) <= m.numFree
}

// Allocate makes id hold blocks for its first numTokens tokens, taking new
// blocks from the free lists in eviction order. It is all-or-nothing: when
// there are not enough free blocks it returns false and changes nothing.
// An id never passed to Lookup is registered (as sessionless, without
// salt) when the allocation succeeds.
func (m *Manager) Allocate(id string, numTokens int) bool {
	r, ok := m.requests[id]
	var numHeld int
	if ok {
		numHeld = len(r.table)
	}
	n := m.numNewBlocks(numHeld, numTokens)
	if n > m.numFree {
		return false
	}
	if !ok {
		r = m.register(id, "", "")
	}
	if r.session != nil {
		m.touch(r.session) // before evicting: its own free blocks go last among active sessions
	}
	var removed []uint64 // hashes evicted by this call, for one BlockRemoved
	for range n {
		b := m.victim()
		m.takeFree(b)
		if b.cached {
			delete(m.index, b.hash)
			if m.events {
				removed = append(removed, b.hash.Uint64())
			}
			b.cached, b.hash = false, BlockHash{}
			m.numEvictions++
		}
		b.ref = 1
		r.table = append(r.table, b.id)
	}
	if len(removed) > 0 {
		m.pending = append(m.pending, BlockRemoved{Hashes: removed})
	}
	return true
}

// numNewBlocks is how many blocks a request holding numHeld blocks needs
// for numTokens tokens.
func (m *Manager) numNewBlocks(numHeld, numTokens int) int {
	return max(0, (numTokens+m.blockSize-1)/m.blockSize-numHeld)
}

// victim returns the next free block to reuse: the head of the first
// non-empty tier. Callers make sure a block is free.
func (m *Manager) victim() *block {
	switch {
	case m.hashless.n > 0:
		return m.hashless.head
	case m.ended.n > 0:
		return m.ended.head.free.head
	case m.idle.n > 0:
		return m.idle.head.free.head
	case m.sessionless.n > 0:
		return m.sessionless.head
	case m.active.n > 0:
		return m.active.head.free.head
	}
	panic("kvcache: no free block although numFree > 0")
}

// Commit hashes and indexes the full blocks covering tokens[:numComputed]
// of id so later requests can reuse them. tokens is the request's whole
// token list so far. Blocks already committed are skipped; a block whose
// hash another block already carries stays unhashed (a duplicate).
func (m *Manager) Commit(id string, tokens []int32, numComputed int) {
	r, ok := m.requests[id]
	if !ok {
		return
	}
	numComputed = min(numComputed, len(tokens), len(r.table)*m.blockSize)
	r.numComputedTokens = max(r.numComputedTokens, numComputed)
	if m.prefixCaching {
		numFull := numComputed / m.blockSize
		var ev *BlockStored // the run of consecutive blocks stored so far
		flush := func() {
			if ev != nil {
				m.pending = append(m.pending, *ev)
				ev = nil
			}
		}
		for i := r.numCommittedBlocks; i < numFull; i++ {
			h := m.blockHash(r, tokens, i)
			b := &m.blocks[r.table[i]]
			if _, dup := m.index[h]; dup || b.cached {
				flush()
				continue
			}
			b.cached, b.hash = true, h
			m.index[h] = b
			if !m.events {
				continue
			}
			if ev == nil {
				ev = &BlockStored{BlockSize: m.blockSize, LoRAName: r.adapter.Name, LoRAID: r.adapter.ID}
				if r.session != nil {
					ev.SessionID = r.session.id
				}
				if i > 0 {
					ev.ParentHash, ev.HasParent = r.hashes[i-1].Uint64(), true
				}
			}
			ev.Hashes = append(ev.Hashes, h.Uint64())
			ev.TokenIDs = append(ev.TokenIDs, tokens[i*m.blockSize:(i+1)*m.blockSize]...)
		}
		flush()
		r.numCommittedBlocks = max(r.numCommittedBlocks, numFull)
	}
	if r.session != nil {
		m.touch(r.session)
	}
}

// blockHash returns the chained hash of full block i of r's tokens,
// computing and remembering the hashes of blocks up to i.
func (m *Manager) blockHash(r *request, tokens []int32, i int) BlockHash {
	for len(r.hashes) <= i {
		j := len(r.hashes)
		var parent BlockHash
		var extra string
		if j == 0 {
			extra = r.salt
		} else {
			parent = r.hashes[j-1]
		}
		var h BlockHash
		h, m.buf = wire.HashBlockTokens(m.buf, parent, tokens[j*m.blockSize:(j+1)*m.blockSize], []byte(extra))
		r.hashes = append(r.hashes, h)
	}
	return r.hashes[i]
}

// BlockTable returns id's blocks in position order. The slice is a view,
// valid until the next call that changes id; nil for an unknown id.
func (m *Manager) BlockTable(id string) []BlockID {
	if r, ok := m.requests[id]; ok {
		return r.table
	}
	return nil
}

// Free releases id's blocks, last block first, and forgets id. Blocks no
// longer held by anyone become free: hashless ones at the front of tier 0
// (reused first), cached ones at the back of their owner's list, so a
// request's tail blocks are evicted before its prefix. Idempotent.
func (m *Manager) Free(id string) {
	r, ok := m.requests[id]
	if !ok {
		return
	}
	delete(m.requests, id)
	s := r.session
	if s != nil {
		s.numRequests--
	}
	for i := len(r.table) - 1; i >= 0; i-- {
		m.release(&m.blocks[r.table[i]], s)
	}
	if s != nil {
		m.touch(s)
		m.gc(s)
	}
	if len(m.spare) < maxSpare {
		m.spare = append(m.spare, r)
	}
}

// pin adds a reference to b (a prefix hit), taking it off its free list
// if it was free: its owner lends it.
func (m *Manager) pin(b *block) {
	if b.ref == 0 {
		b.list.remove(b)
		m.numFree--
		if s := b.owner; s != nil {
			s.lent++
			if s.free.n == 0 {
				m.place(s)
			}
		}
	}
	b.ref++
}

// release drops one reference to b, held by a request of session s (nil
// for none). At zero, b joins the free list of its tier.
func (m *Manager) release(b *block, s *session) {
	b.ref--
	switch {
	case b.ref < 0:
		panic(fmt.Sprintf("kvcache: block %d refcount below zero", b.id))
	case b.ref > 0:
		return
	}
	m.numFree++
	old := b.owner
	switch {
	case !b.cached:
		m.hashless.pushFront(b)
	case s == nil && old == nil:
		m.sessionless.pushBack(b)
	case s == nil:
		old.lent--
		old.free.pushBack(b)
		m.reenter(old)
	default:
		b.owner = s
		s.free.pushBack(b)
		if old != nil {
			old.lent--
			if old != s {
				m.gc(old)
			}
		}
	}
}

// takeFree removes free block b from its free list to be evicted or
// cleared: its owner loses it.
func (m *Manager) takeFree(b *block) {
	b.list.remove(b)
	m.numFree--
	if s := b.owner; s != nil {
		b.owner = nil
		if s.free.n == 0 {
			m.place(s)
			m.gc(s)
		}
	}
}
