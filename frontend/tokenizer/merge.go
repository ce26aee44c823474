package tokenizer

import "unicode/utf8"

// none marks a missing neighbour in the symbol lists below.
const none int32 = -1

// rankSym is one symbol of a word during rank merging.
type rankSym struct {
	id         int32 // token id
	prev, next int32 // neighbour indices, or none
	dead       bool  // merged into its left neighbour
}

// rankItem is a candidate merge: the pair starting at symbol pos becomes
// token id.
type rankItem struct {
	rank, pos, id int32
}

func rankLess(a, b rankItem) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}

func pairKey(left, right int32) uint64 { return uint64(uint32(left))<<32 | uint64(uint32(right)) }

// mergeRanks appends the ids of word w by rank-ordered BPE merges. It is HF
// BPE's Word::merge_all and llama.cpp's llm_tokenizer_bpe_session: the
// lowest-ranked adjacent pair merges first, the leftmost on ties, and a queued
// pair is dropped when its symbols have changed since.
func (t *BPE) mergeRanks(ids []int32, w string) []int32 {
	if t.ignoreMerges {
		if id, ok := t.wordIDs[w]; ok {
			return append(ids, id)
		}
	}
	syms := t.rankSymbols(make([]rankSym, 0, len(w)), w)
	if len(syms) > 1 {
		h := pq[rankItem]{less: rankLess, items: make([]rankItem, 0, len(syms))}
		for i := range len(syms) - 1 {
			if m, ok := t.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
				h.push(rankItem{rank: m.rank, pos: int32(i), id: m.id})
			}
		}
		for len(h.items) > 0 {
			top := h.pop()
			s := &syms[top.pos]
			if s.dead || s.next == none {
				continue
			}
			right := &syms[s.next]
			if m, ok := t.merges[pairKey(s.id, right.id)]; !ok || m.id != top.id {
				continue // stale: a neighbour merged since this pair was queued
			}
			s.id = top.id
			right.dead = true
			s.next = right.next
			if s.next != none {
				syms[s.next].prev = top.pos
			}
			if s.prev != none {
				if m, ok := t.merges[pairKey(syms[s.prev].id, s.id)]; ok {
					h.push(rankItem{rank: m.rank, pos: s.prev, id: m.id})
				}
			}
			if s.next != none {
				if m, ok := t.merges[pairKey(s.id, syms[s.next].id)]; ok {
					h.push(rankItem{rank: m.rank, pos: top.pos, id: m.id})
				}
			}
		}
	}
	for _, s := range syms {
		if !s.dead {
			ids = append(ids, s.id)
		}
	}
	return ids
}

// rankSymbols appends the initial symbols of w: one per byte for byte-level
// text, one per character otherwise, with byte fallback or <unk> for
// characters the vocabulary lacks (dropped when there is neither, as HF does).
func (t *BPE) rankSymbols(syms []rankSym, w string) []rankSym {
	add := func(id int32) {
		n := int32(len(syms))
		syms = append(syms, rankSym{id: id, prev: n - 1, next: n + 1})
	}
	if t.style == styleByteLevel {
		for i := range len(w) {
			if b := w[i]; t.hasByteID[b] {
				add(t.byteIDs[b])
			} else if t.hasUnk {
				add(t.unk)
			}
		}
	} else {
		prevUnk := false
		for i := 0; i < len(w); {
			_, n := utf8.DecodeRuneInString(w[i:])
			c := w[i : i+n]
			i += n
			if id, ok := t.ids[c]; ok {
				add(id)
				prevUnk = false
				continue
			}
			if t.byteFallback && t.hasBytes(c) {
				for k := range len(c) {
					add(t.byteIDs[c[k]])
				}
				prevUnk = false
				continue
			}
			if t.hasUnk && !(t.fuseUnk && prevUnk) {
				add(t.unk)
			}
			prevUnk = t.hasUnk
		}
	}
	if len(syms) > 0 {
		syms[0].prev = none
		syms[len(syms)-1].next = none
	}
	return syms
}

// hasBytes reports whether every byte of c has a byte token.
func (t *BPE) hasBytes(c string) bool {
	for k := range len(c) {
		if !t.hasByteID[c[k]] {
			return false
		}
	}
	return true
}

// scoreSym is one symbol of a word during score merging: a run of bytes.
type scoreSym struct {
	start, n   int32 // bytes w[start:start+n]; n = 0 once merged away
	prev, next int32 // neighbour indices, or none
}

// scoreItem is a candidate merge of symbols left and right into a token of
// the given score; size is their combined length, to detect stale items.
type scoreItem struct {
	score             float32
	left, right, size int32
}

func scoreLess(a, b scoreItem) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

// mergeScores appends the ids of w by SentencePiece BPE, exactly as
// llama.cpp's llm_tokenizer_spm_session: start from UTF-8 characters, merge
// the adjacent pair whose concatenation is the highest-scored token (leftmost
// on ties), and spell out what is left unknown as <0xNN> byte tokens.
func (t *BPE) mergeScores(ids []int32, w string) []int32 {
	syms := make([]scoreSym, 0, len(w))
	for i := 0; i < len(w); {
		n := utf8SeqLen(w[i])
		n = min(n, len(w)-i)
		k := int32(len(syms))
		syms = append(syms, scoreSym{start: int32(i), n: int32(n), prev: k - 1, next: k + 1})
		i += n
	}
	if len(syms) == 0 {
		return ids
	}
	syms[len(syms)-1].next = none
	h := pq[scoreItem]{less: scoreLess, items: make([]scoreItem, 0, len(syms))}
	try := func(l, r int32) {
		if l == none || r == none {
			return
		}
		a, b := syms[l], syms[r]
		text := w[a.start : a.start+a.n+b.n]
		if id, ok := t.ids[text]; ok {
			h.push(scoreItem{score: t.scores[id], left: l, right: r, size: a.n + b.n})
		}
	}
	for i := 1; i < len(syms); i++ {
		try(int32(i-1), int32(i))
	}
	for len(h.items) > 0 {
		top := h.pop()
		l, r := &syms[top.left], &syms[top.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != top.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next != none {
			syms[r.next].prev = top.left
		}
		try(l.prev, top.left)
		try(top.left, l.next)
	}
	for i := int32(0); i != none; i = syms[i].next {
		s := syms[i]
		text := w[s.start : s.start+s.n]
		if id, ok := t.ids[text]; ok {
			ids = append(ids, id)
			continue
		}
		for k := range len(text) {
			if b := text[k]; t.hasByteID[b] {
				ids = append(ids, t.byteIDs[b])
			}
		}
	}
	return ids
}

// utf8SeqLen returns the length of the UTF-8 sequence that lead byte c
// starts, as llama.cpp's unicode_len_utf8 does (1 for a continuation byte).
func utf8SeqLen(c byte) int {
	switch {
	case c < 0xC0:
		return 1
	case c < 0xE0:
		return 2
	case c < 0xF0:
		return 3
	}
	return 4
}

// pq is a binary min-heap ordered by less.
type pq[T any] struct {
	items []T
	less  func(a, b T) bool
}

func (h *pq[T]) push(x T) {
	h.items = append(h.items, x)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *pq[T]) pop() T {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.less(h.items[l], h.items[m]) {
			m = l
		}
		if r < last && h.less(h.items[r], h.items[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
	return top
}
