package kvcache

// Whole hash chains, for KV transfer (slot save, restore and erase):
// reading which of a token list's full blocks are cached, adopting blocks
// whose contents come from elsewhere, and evicting a chain on demand.

// CachedChain returns the blocks caching the longest prefix of tokens'
// full blocks (the last token may be covered), in position order, under
// salt as Lookup hashes it. It changes nothing: no pin, no statistics.
func (m *Manager) CachedChain(tokens []int32, salt string) []BlockID {
	if !m.prefixCaching {
		return nil
	}
	r := &request{salt: salt}
	var out []BlockID
	for i := range len(tokens) / m.blockSize {
		b, ok := m.index[m.blockHash(r, tokens, i)]
		if !ok {
			break
		}
		out = append(out, b.id)
	}
	return out
}

// Adopt registers id as Lookup does, pinning the cached prefix of every
// full block of tokens (the last token included), without counting a
// prefix-cache query. The caller then Allocates the rest of the full
// blocks, fills them, Commits them and Frees id: they join the prefix
// cache as if computed. It returns the cached tokens found.
func (m *Manager) Adopt(id string, tokens []int32, salt, session string) (numCachedTokens int) {
	return m.lookup(id, tokens, salt, session, Adapter{}, len(tokens)/m.blockSize, false)
}

// EvictChain drops the hashes of the cached blocks of tokens' full-block
// chain under salt that no request holds, as an eviction would (a
// BlockRemoved event, tier 0), and returns how many tokens they held.
// Blocks in use stay cached. The chain is followed as far as it is
// cached.
func (m *Manager) EvictChain(tokens []int32, salt string) (numTokens int) {
	var removed []uint64
	for _, id := range m.CachedChain(tokens, salt) {
		b := &m.blocks[id]
		if b.ref > 0 {
			continue
		}
		m.takeFree(b)
		delete(m.index, b.hash)
		if m.events {
			removed = append(removed, b.hash.Uint64())
		}
		b.cached, b.hash = false, BlockHash{}
		m.hashless.pushBack(b) // behind the never-cached blocks: reused after them
		m.numFree++
		numTokens += m.blockSize
	}
	if len(removed) > 0 {
		m.pending = append(m.pending, BlockRemoved{Hashes: removed})
	}
	return numTokens
}
