package kvcache

// Stats is a snapshot of the pool.
type Stats struct {
	NumBlocks       int     // blocks in the pool
	NumFreeBlocks   int     // blocks no request holds (hashless or cached)
	NumCachedBlocks int     // blocks carrying an indexed hash, free or in use
	Usage           float64 // (NumBlocks - NumFreeBlocks) / NumBlocks, 0..1
	PrefixQueries   int64   // tokens passed to Lookup with prefix caching on, cumulative
	PrefixHits      int64   // tokens Lookup found cached, cumulative
	NumEvictions    int64   // cached blocks reused (hash dropped) by Allocate, cumulative
}

// Stats returns the current counters. It allocates nothing.
func (m *Manager) Stats() Stats {
	n := len(m.blocks)
	return Stats{
		NumBlocks:       n,
		NumFreeBlocks:   m.numFree,
		NumCachedBlocks: len(m.index),
		Usage:           float64(n-m.numFree) / float64(n),
		PrefixQueries:   m.numQueries,
		PrefixHits:      m.numHits,
		NumEvictions:    m.numEvictions,
	}
}

// Event is a change of the prefix cache, for KV-event publishing: one of
// BlockStored, BlockRemoved or AllBlocksCleared.
type Event interface{ isEvent() }

// BlockStored says consecutive blocks of one hash chain were cached.
type BlockStored struct {
	Hashes     []uint64 // BlockHash.Uint64 of each block, in chain order
	ParentHash uint64   // hash of the block before Hashes[0]; valid iff HasParent
	HasParent  bool     // false when Hashes[0] is a first block
	TokenIDs   []int32  // [len(Hashes) * BlockSize] the blocks' tokens
	BlockSize  int      // tokens per block
	SessionID  string   // session of the request that stored them; "" = none
	LoRAName   string   // the adapter of the request that stored them (Adapter); "" = none
	LoRAID     int      // its id; 0 = none
}

// BlockRemoved says cached blocks were evicted.
type BlockRemoved struct {
	Hashes []uint64 // BlockHash.Uint64 of each evicted block
}

// AllBlocksCleared says every cached block was dropped (ResetPrefixCache).
type AllBlocksCleared struct{}

func (BlockStored) isEvent()      {}
func (BlockRemoved) isEvent()     {}
func (AllBlocksCleared) isEvent() {}

// DrainEvents returns the events recorded since the last call, oldest
// first, and forgets them. Always nil unless Config.EnableEvents.
func (m *Manager) DrainEvents() []Event {
	ev := m.pending
	m.pending = nil
	return ev
}

// ResetPrefixCache drops every cached hash, as vLLM's reset_prefix_cache:
// it succeeds only when no block is in use (otherwise it returns false and
// changes nothing), moves all blocks to the hashless tier in BlockID order
// and records AllBlocksCleared. With prefix caching off it returns true.
func (m *Manager) ResetPrefixCache() bool {
	if !m.prefixCaching {
		return true
	}
	if m.numFree != len(m.blocks) {
		return false
	}
	for i := range m.blocks {
		b := &m.blocks[i]
		if !b.cached {
			continue
		}
		m.takeFree(b)
		b.cached, b.hash = false, BlockHash{}
		m.hashless.pushBack(b)
		m.numFree++
	}
	clear(m.index)
	if m.events {
		m.pending = append(m.pending, AllBlocksCleared{})
	}
	return true
}
