package kvcache

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// naive is a slow, obvious model of Manager: maps and slices, cache keys
// made of the whole prefix (salt + token ids) instead of hashes, and the
// eviction victim found by scanning every block for the smallest
// (tier, session order, release order).
type naive struct {
	blockSize     int
	prefixCaching bool
	blocks        []naiveBlock
	hashless      []int          // free unhashed blocks, next reused first
	index         map[string]int // prefix key → cached block
	reqs          map[string]*naiveReq
	sessions      map[string]*naiveSession // never forgotten
	seq           int64                    // orders session activity and block releases
	queries, hits int64
	evictions     int64
	numVictims    [5]int // victims taken per tier, to check the test reaches them all
	numReturned   int    // cached blocks a sessionless request gave back to their session
}

type naiveBlock struct {
	ref      int
	cached   bool
	key      string
	owner    string // session that released it last (kept while the block is in use), for a cached block
	released int64  // seq at release, for a free cached block
}

type naiveReq struct {
	salt, session string
	table         []int
	numCommitted  int
	numComputed   int
}

type naiveSession struct {
	numRequests int
	numHolds    int
	ended       bool
	order       int64 // seq of the last activity (or EndSession)
}

func newNaive(numBlocks, blockSize int) *naive {
	n := &naive{
		blockSize:     blockSize,
		prefixCaching: true,
		blocks:        make([]naiveBlock, numBlocks),
		index:         make(map[string]int),
		reqs:          make(map[string]*naiveReq),
		sessions:      make(map[string]*naiveSession),
	}
	for i := range numBlocks {
		n.hashless = append(n.hashless, i)
	}
	return n
}

func (n *naive) key(salt string, tokens []int32, i int) string {
	return fmt.Sprint(salt, "|", tokens[:(i+1)*n.blockSize])
}

func (n *naive) session(id string) *naiveSession {
	s, ok := n.sessions[id]
	if !ok {
		s = &naiveSession{}
		n.sessions[id] = s
	}
	return s
}

func (n *naive) bump(id string) {
	if id != "" {
		n.seq++
		n.session(id).order = n.seq
	}
}

func (n *naive) numFree() int {
	c := 0
	for _, b := range n.blocks {
		if b.ref == 0 {
			c++
		}
	}
	return c
}

// alive reports whether the manager would still know session id.
func (n *naive) alive(id string) bool {
	if s := n.session(id); s.numRequests > 0 || s.numHolds > 0 {
		return true
	}
	for _, b := range n.blocks {
		if b.cached && b.owner == id {
			return true
		}
	}
	return false
}

func (n *naive) register(id, salt, session string) *naiveReq {
	r := &naiveReq{salt: salt, session: session}
	if session != "" {
		s := n.session(session)
		s.numRequests++
		s.ended = false
	}
	n.reqs[id] = r
	return r
}

func (n *naive) lookup(id string, tokens []int32, salt, session string) int {
	if r, ok := n.reqs[id]; ok {
		if len(r.table) > 0 {
			return 0
		}
		n.free(id)
	}
	r := n.register(id, salt, session)
	hit := 0
	if n.prefixCaching {
		for i := 0; len(tokens) > 0 && i < (len(tokens)-1)/n.blockSize; i++ {
			b, ok := n.index[n.key(salt, tokens, i)]
			if !ok {
				break
			}
			n.blocks[b].ref++
			r.table = append(r.table, b)
		}
		hit = len(r.table) * n.blockSize
		r.numCommitted, r.numComputed = len(r.table), hit
		n.queries += int64(len(tokens))
		n.hits += int64(hit)
	}
	n.bump(session)
	return hit
}

func (n *naive) allocate(id string, numTokens int) bool {
	r, ok := n.reqs[id]
	held := 0
	if ok {
		held = len(r.table)
	}
	need := max(0, (numTokens+n.blockSize-1)/n.blockSize-held)
	if need > n.numFree() {
		return false
	}
	if !ok {
		r = n.register(id, "", "")
	}
	n.bump(r.session)
	for range need {
		b := n.victim()
		if n.blocks[b].cached {
			delete(n.index, n.blocks[b].key)
			n.evictions++
		}
		n.blocks[b] = naiveBlock{ref: 1}
		r.table = append(r.table, b)
	}
	return true
}

func (n *naive) victim() int {
	if len(n.hashless) > 0 {
		b := n.hashless[0]
		n.hashless = n.hashless[1:]
		n.numVictims[0]++
		return b
	}
	best := -1
	var bestKey [3]int64
	for i, b := range n.blocks {
		if b.ref != 0 || !b.cached {
			continue
		}
		key := [3]int64{3, 0, b.released}
		if b.owner != "" {
			s := n.sessions[b.owner]
			switch {
			case s.ended:
				key[0] = 1
			case s.numRequests == 0 && s.numHolds == 0:
				key[0] = 2
			default:
				key[0] = 4
			}
			key[1] = s.order
		}
		if best < 0 || slices.Compare(key[:], bestKey[:]) < 0 {
			best, bestKey = i, key
		}
	}
	n.numVictims[bestKey[0]]++
	return best
}

func (n *naive) commit(id string, tokens []int32, numComputed int) {
	r, ok := n.reqs[id]
	if !ok {
		return
	}
	numComputed = min(numComputed, len(tokens), len(r.table)*n.blockSize)
	r.numComputed = max(r.numComputed, numComputed)
	if n.prefixCaching {
		numFull := numComputed / n.blockSize
		for i := r.numCommitted; i < numFull; i++ {
			b := &n.blocks[r.table[i]]
			k := n.key(r.salt, tokens, i)
			if _, dup := n.index[k]; dup || b.cached {
				continue
			}
			b.cached, b.key = true, k
			n.index[k] = r.table[i]
		}
		r.numCommitted = max(r.numCommitted, numFull)
	}
	n.bump(r.session)
}

func (n *naive) free(id string) {
	r, ok := n.reqs[id]
	if !ok {
		return
	}
	delete(n.reqs, id)
	if r.session != "" {
		n.sessions[r.session].numRequests--
	}
	for i := len(r.table) - 1; i >= 0; i-- {
		b := &n.blocks[r.table[i]]
		b.ref--
		if b.ref > 0 {
			continue
		}
		if b.cached {
			n.seq++
			b.released = n.seq
			if r.session != "" {
				b.owner = r.session
			} else if b.owner != "" { // a sessionless request gives it back
				n.numReturned++
			}
		} else {
			n.hashless = append([]int{r.table[i]}, n.hashless...)
		}
	}
	n.bump(r.session)
}

func (n *naive) hold(id string) {
	s := n.session(id)
	s.numHolds++
	s.ended = false
	n.bump(id)
}

func (n *naive) release(id string) {
	if s := n.session(id); s.numHolds > 0 {
		s.numHolds--
		n.bump(id)
	}
}

func (n *naive) endSession(id string) {
	if s := n.session(id); n.alive(id) && !s.ended {
		s.ended = true
		n.bump(id)
	}
}

func (n *naive) reset() bool {
	if n.numFree() != len(n.blocks) {
		return false
	}
	for i := range n.blocks {
		if n.blocks[i].cached {
			n.blocks[i] = naiveBlock{}
			n.hashless = append(n.hashless, i)
		}
	}
	clear(n.index)
	return true
}

func (n *naive) sessionCachedTokens(id string) int {
	if !n.alive(id) {
		return 0
	}
	total := 0
	for _, b := range n.blocks {
		if b.cached && b.owner == id { // its own, free or lent
			total += n.blockSize
		}
	}
	held := make(map[int]int) // block → most computed tokens in it
	for _, r := range n.reqs {
		if r.session != id {
			continue
		}
		for i, b := range r.table {
			if n.blocks[b].cached && n.blocks[b].owner == id {
				continue
			}
			held[b] = max(held[b], min(n.blockSize, r.numComputed-i*n.blockSize))
		}
	}
	for _, t := range held {
		total += max(t, 0)
	}
	return total
}

func (n *naive) numSessions() int {
	c := 0
	for id := range n.sessions {
		if n.alive(id) {
			c++
		}
	}
	return c
}

// TestModel runs seeded random operation sequences against Manager and the
// naive model and compares every observable result after every operation.
func TestModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			runModel(t, seed, 2500)
		})
	}
}

func runModel(t *testing.T, seed uint64, numOps int) {
	const numBlocks, blockSize = 12, 4
	rng := rand.New(rand.NewPCG(seed, 42))
	h := newHarness(t, numBlocks, blockSize)
	n := newNaive(numBlocks, blockSize)
	sessions := []string{"", "A", "B", "C", "D"}
	salts := []string{"", "", "", "s"}
	// Stems make prompts share prefixes; tails and outputs use few distinct
	// tokens so equal blocks also arise by chance.
	stems := [][]int32{tokens(0, 24), tokens(100, 24), append(tokens(0, 8), tokens(200, 16)...)}
	live := map[string][]int32{} // request id → its tokens so far
	var ids []string             // live ids, in creation order
	nextID := 0
	pick := func() string { return ids[rng.IntN(len(ids))] }
	var log []string // operations so far, printed on failure

	for op := range numOps {
		var desc string
		var got, want any
		k := rng.IntN(100)
		if len(ids) > 4 && k < 20 { // keep few requests live so sessions go idle
			k = 70
		}
		switch {
		case k < 20 || len(ids) == 0: // new request
			id := fmt.Sprint("r", nextID)
			nextID++
			stem := stems[rng.IntN(len(stems))]
			toks := slices.Clone(stem[:rng.IntN(len(stem)+1)])
			for range rng.IntN(6) {
				toks = append(toks, int32(1000+rng.IntN(3)))
			}
			salt, sess := salts[rng.IntN(len(salts))], sessions[rng.IntN(len(sessions))]
			live[id] = toks
			ids = append(ids, id)
			desc = fmt.Sprintf("Lookup(%s, %d tokens, %q, %q)", id, len(toks), salt, sess)
			got, want = h.m.Lookup(id, toks, salt, sess, Adapter{}), n.lookup(id, toks, salt, sess)
		case k < 40: // allocate
			id := pick()
			numTokens := rng.IntN(len(live[id]) + 5)
			desc = fmt.Sprintf("Allocate(%s, %d)", id, numTokens)
			got, want = h.m.Allocate(id, numTokens), n.allocate(id, numTokens)
		case k < 55: // commit
			id := pick()
			numComputed := rng.IntN(len(live[id]) + 1)
			desc = fmt.Sprintf("Commit(%s, %d)", id, numComputed)
			h.m.Commit(id, live[id], numComputed)
			n.commit(id, live[id], numComputed)
		case k < 65: // an output token
			id := pick()
			live[id] = append(live[id], int32(1000+rng.IntN(3)))
			desc = fmt.Sprintf("append(%s)", id)
		case k < 80: // free
			id := pick()
			desc = fmt.Sprintf("Free(%s)", id)
			h.m.Free(id)
			n.free(id)
			delete(live, id)
			ids = slices.DeleteFunc(ids, func(s string) bool { return s == id })
		case k < 85: // re-lookup of a live request (a no-op unless it has no blocks)
			id := pick()
			sess := sessions[rng.IntN(len(sessions))]
			desc = fmt.Sprintf("Lookup(%s again, %q)", id, sess)
			got, want = h.m.Lookup(id, live[id], "", sess, Adapter{}), n.lookup(id, live[id], "", sess)
		case k < 90:
			sess := sessions[1+rng.IntN(len(sessions)-1)]
			desc = fmt.Sprintf("EndSession(%q)", sess)
			h.m.EndSession(sess)
			n.endSession(sess)
		case k < 92:
			sess := sessions[1+rng.IntN(len(sessions)-1)]
			desc = fmt.Sprintf("Hold(%q)", sess)
			h.m.Hold(sess)
			n.hold(sess)
		case k < 95:
			sess := sessions[1+rng.IntN(len(sessions)-1)]
			desc = fmt.Sprintf("Release(%q)", sess)
			h.m.Release(sess)
			n.release(sess)
		case k < 99:
			d := time.Duration(rng.IntN(3)) * time.Second
			desc = fmt.Sprint("advance ", d)
			h.clk.advance(d)
		default:
			desc = "ResetPrefixCache"
			got, want = h.m.ResetPrefixCache(), n.reset()
		}
		log = append(log, desc)
		fail := func(format string, args ...any) {
			t.Helper()
			if len(log) > 40 {
				log = log[len(log)-40:]
			}
			t.Fatalf("op %d %s: "+format+"\nlast ops:\n%s", append(append([]any{op, desc}, args...), strings.Join(log, "\n"))...)
		}
		if got != want {
			fail("got %v, model %v", got, want)
		}
		checkInvariants(t, h.m)
		compareModel(t, h.m, n, sessions, fail)
	}
	t.Logf("victims per tier %v, blocks given back %d, stats %+v", n.numVictims, n.numReturned, h.m.Stats())
	if slices.Contains(n.numVictims[:], 0) || n.hits == 0 || n.numReturned == 0 {
		t.Errorf("the sequence missed a case: victims per tier %v, %d hit tokens, %d blocks given back", n.numVictims, n.hits, n.numReturned)
	}
}

func compareModel(t *testing.T, m *Manager, n *naive, sessions []string, fail func(string, ...any)) {
	t.Helper()
	st := m.Stats()
	wantStats := Stats{
		NumBlocks:       len(n.blocks),
		NumFreeBlocks:   n.numFree(),
		NumCachedBlocks: len(n.index),
		Usage:           float64(len(n.blocks)-n.numFree()) / float64(len(n.blocks)),
		PrefixQueries:   n.queries,
		PrefixHits:      n.hits,
		NumEvictions:    n.evictions,
	}
	if diff := cmp.Diff(wantStats, st); diff != "" {
		fail("Stats mismatch (-model +got):\n%s", diff)
	}
	for id, r := range n.reqs {
		got := m.BlockTable(id)
		want := make([]BlockID, len(r.table))
		for i, b := range r.table {
			want[i] = BlockID(b)
		}
		if diff := cmp.Diff(want, got, cmpEmpty); diff != "" {
			fail("BlockTable(%s) mismatch (-model +got):\n%s", id, diff)
		}
	}
	if len(m.requests) != len(n.reqs) {
		fail("%d requests, model %d", len(m.requests), len(n.reqs))
	}
	if got, want := m.NumSessions(), n.numSessions(); got != want {
		fail("NumSessions() = %d, model %d", got, want)
	}
	for _, s := range sessions[1:] {
		if got, want := m.SessionCachedTokens(s), n.sessionCachedTokens(s); got != want {
			fail("SessionCachedTokens(%q) = %d, model %d", s, got, want)
		}
		if got, want := m.HasSession(s), n.alive(s); got != want {
			fail("HasSession(%q) = %v, model %v", s, got, want)
		}
	}
}
