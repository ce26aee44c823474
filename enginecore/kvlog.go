package enginecore

import (
	"cmp"
	"slices"
	"sync"

	"github.com/tandem-llm/tandem/wire"
)

// kvLog is what the shell published on the KV-events PUB socket, for the
// replay socket (wire/replay.go): the sequence numbers, the last
// BufferSteps batches (vLLM's replay buffer) and, beyond vLLM, a mirror of
// every block those batches left cached, from which a late subscriber gets
// a snapshot. The output goroutine appends (and then sends); the replay
// goroutine reads. mu guards the fields below.
type kvLog struct {
	mu     sync.Mutex
	next   uint64     // sequence number of the next batch
	ring   []kvLogged // the last len(ring) batches, ring[start] oldest once full
	start  int        // index of the oldest batch in ring once it is full
	blocks kvMirror   // hash → the cached block; nil: no mirror kept
	layout wire.KVLayout
}

// kvLogged is one published batch.
type kvLogged struct {
	seq     uint64
	payload []byte
}

// kvMirror is the cached blocks as the published events tell them.
type kvMirror map[uint64]*mirrorBlock

type mirrorBlock struct {
	parent    uint64
	hasParent bool
	tokens    []int32 // [blockSize]
	blockSize int
	session   string
	loraName  string
	loraID    int
}

// newKVLog keeps bufferSteps batches, and a mirror when replay is on
// (bufferSteps > 0).
func newKVLog(bufferSteps int, layout wire.KVLayout) *kvLog {
	l := &kvLog{layout: layout}
	if bufferSteps > 0 {
		l.ring = make([]kvLogged, 0, bufferSteps)
		l.blocks = kvMirror{}
	}
	return l
}

// append numbers batch (already encoded as payload), remembers it and
// applies its events to the mirror. It returns the batch's sequence number.
func (l *kvLog) append(batch *wire.KVEventBatch, payload []byte) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := l.next
	l.next++
	if cap(l.ring) == 0 {
		return seq
	}
	if len(l.ring) < cap(l.ring) {
		l.ring = append(l.ring, kvLogged{seq, payload})
	} else {
		l.ring[l.start] = kvLogged{seq, payload}
		l.start = (l.start + 1) % len(l.ring)
	}
	l.blocks.apply(batch.Events)
	return seq
}

// skip numbers a batch that was dropped before it was sent (a gap).
func (l *kvLog) skip() {
	l.mu.Lock()
	l.next++
	l.mu.Unlock()
}

// since returns the buffered batches with seq ≥ from, oldest first.
func (l *kvLog) since(from uint64) []kvLogged {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []kvLogged
	for i := range l.ring {
		if b := l.ring[(l.start+i)%len(l.ring)]; b.seq >= from {
			out = append(out, b)
		}
	}
	return out
}

func (m kvMirror) apply(events []wire.KVEvent) {
	for _, ev := range events {
		switch ev := ev.(type) {
		case *wire.BlockStored:
			parent, hasParent := ev.ParentHash, ev.HasParent
			for i, h := range ev.BlockHashes {
				end := min((i+1)*ev.BlockSize, len(ev.TokenIDs))
				m[h] = &mirrorBlock{parent: parent, hasParent: hasParent, blockSize: ev.BlockSize, session: ev.SessionID,
					loraName: ev.LoraName, loraID: ev.LoraID, tokens: slices.Clone(ev.TokenIDs[min(i*ev.BlockSize, end):end])}
				parent, hasParent = h, true
			}
		case *wire.BlockRemoved:
			for _, h := range ev.BlockHashes {
				delete(m, h)
			}
		case *wire.AllBlocksCleared:
			clear(m)
		}
	}
}

// snapshot returns BlockStored batches covering every mirrored block,
// parents before children, at most maxBlocks blocks per batch, and the
// sequence number of the first batch they do not include. Consecutive
// blocks of one chain share an event.
func (l *kvLog) snapshot(ts float64, dpRank, maxBlocks int) ([]*wire.KVEventBatch, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	children := map[uint64][]uint64{}
	var roots []uint64
	for h, b := range l.blocks {
		if _, ok := l.blocks[b.parent]; b.hasParent && ok {
			children[b.parent] = append(children[b.parent], h)
		} else {
			roots = append(roots, h)
		}
	}
	slices.Sort(roots)
	var out []*wire.KVEventBatch
	var cur *wire.BlockStored
	numBlocks := 0
	batch := func() *wire.KVEventBatch {
		if len(out) == 0 || numBlocks >= maxBlocks {
			out = append(out, &wire.KVEventBatch{Timestamp: ts, DPRank: dpRank, Layout: l.layout})
			numBlocks = 0
			cur = nil
		}
		return out[len(out)-1]
	}
	emit := func(h uint64) {
		b := l.blocks[h]
		bt := batch()
		if cur == nil || cur.BlockHashes[len(cur.BlockHashes)-1] != b.parent || !b.hasParent ||
			cur.BlockSize != b.blockSize || cur.SessionID != b.session || cur.LoraName != b.loraName || cur.LoraID != b.loraID {
			cur = &wire.BlockStored{ParentHash: b.parent, HasParent: b.hasParent, BlockSize: b.blockSize,
				Medium: wire.MediumGPU, LoraName: b.loraName, LoraID: b.loraID, SessionID: b.session}
			bt.Events = append(bt.Events, cur)
		}
		cur.BlockHashes = append(cur.BlockHashes, h)
		cur.TokenIDs = append(cur.TokenIDs, b.tokens...)
		numBlocks++
	}
	stack := slices.Clone(roots)
	slices.Reverse(stack)
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		emit(h)
		kids := children[h]
		slices.SortFunc(kids, func(a, b uint64) int { return cmp.Compare(b, a) }) // popped in ascending order
		stack = append(stack, kids...)
	}
	return out, l.next
}
