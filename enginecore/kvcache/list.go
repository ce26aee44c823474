package kvcache

// blockList is an intrusive doubly linked list of free blocks threaded
// through block.prev/next (vLLM's FreeKVCacheBlockQueue): O(1) push at
// either end, pop at the head and removal from the middle, no allocation.
// The head is the next block to reuse.
type blockList struct {
	head, tail *block
	n          int // blocks in the list
}

func (l *blockList) pushBack(b *block) {
	b.list, b.prev, b.next = l, l.tail, nil
	if l.tail == nil {
		l.head = b
	} else {
		l.tail.next = b
	}
	l.tail = b
	l.n++
}

func (l *blockList) pushFront(b *block) {
	b.list, b.prev, b.next = l, nil, l.head
	if l.head == nil {
		l.tail = b
	} else {
		l.head.prev = b
	}
	l.head = b
	l.n++
}

func (l *blockList) remove(b *block) {
	if b.prev == nil {
		l.head = b.next
	} else {
		b.prev.next = b.next
	}
	if b.next == nil {
		l.tail = b.prev
	} else {
		b.next.prev = b.prev
	}
	b.list, b.prev, b.next = nil, nil, nil
	l.n--
}

// sessionList is an intrusive doubly linked list of sessions threaded
// through session.prev/next, ordered by the sessions' last activity: the
// head was active longest ago.
type sessionList struct {
	head, tail *session
	n          int // sessions in the list
}

func (l *sessionList) pushBack(s *session) { l.insertAfter(l.tail, s) }

func (l *sessionList) remove(s *session) {
	if s.prev == nil {
		l.head = s.next
	} else {
		s.prev.next = s.next
	}
	if s.next == nil {
		l.tail = s.prev
	} else {
		s.next.prev = s.prev
	}
	s.list, s.prev, s.next = nil, nil, nil
	l.n--
}

// insertAfter puts s after a (at the head when a is nil).
func (l *sessionList) insertAfter(a, s *session) {
	next := l.head
	if a != nil {
		next = a.next
	}
	s.list, s.prev, s.next = l, a, next
	if a == nil {
		l.head = s
	} else {
		a.next = s
	}
	if next == nil {
		l.tail = s
	} else {
		next.prev = s
	}
	l.n++
}
