package responses

import (
	"container/list"
	"sync"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// Message is one turn of a stored conversation.
type Message struct {
	Role    string
	Content string
	// ToolCalls are an assistant turn's function calls (function_call
	// items), in order; ID is the call_id.
	ToolCalls []openai.ToolCall
	// ToolCallID is the call a "tool" turn (a function_call_output) answers.
	ToolCallID string
	// Reasoning is an assistant turn's reasoning (a reasoning item).
	Reasoning string
}

// numBytes is the text m holds, bytes.
func (m Message) numBytes() int {
	n := len(m.Content) + len(m.ToolCallID) + len(m.Reasoning)
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Function.Name) + len(c.Function.Arguments)
	}
	return n
}

// Entry is one stored response.
type Entry struct {
	Response openai.Response
	// Owner is the tenant that stored it (frontend/server's API-key
	// tenants; "" without them): only its owner may read or delete it.
	Owner string
	// Messages is the conversation up to and including the response's
	// output, without the request's instructions (which, as in OpenAI,
	// do not carry over to follow-ups). Treat it as read-only: entries of
	// one conversation share the strings.
	Messages []Message
	// NumBytes is the text this entry adds to the store (the new messages
	// and the output), bytes; Put computes it.
	NumBytes int
}

// Limits bound a Store. Zero fields take the defaults.
type Limits struct {
	MaxEntries int // default 1024
	MaxBytes   int // text bytes over all entries; default 64 MiB
}

// Default limits.
const (
	DefaultMaxEntries = 1024
	DefaultMaxBytes   = 64 << 20
)

// Store is a bounded LRU of entries by response id. Safe for concurrent use.
type Store struct {
	limits Limits

	mu       sync.Mutex // mu guards the fields below
	order    *list.List // of *Entry, most recently used first
	byID     map[string]*list.Element
	numBytes int // sum of NumBytes over entries
}

// NewStore returns an empty store.
func NewStore(l Limits) *Store {
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return &Store{limits: l, order: list.New(), byID: map[string]*list.Element{}}
}

// Put stores e under e.Response.ID, replacing an entry with the same id,
// and evicts the least recently used entries beyond the limits (never e
// itself). numNew is how many of e.Messages are new in this entry (the
// rest are shared with the previous response); only their text counts
// towards MaxBytes.
func (s *Store) Put(e Entry, numNew int) {
	e.NumBytes = newBytes(e, numNew)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(e)
}

// PutIf is Put only where id is stored and keep(its entry) holds, under
// one lock; it reports whether e was stored. A background response ends
// with it, unless it was cancelled (or deleted) meanwhile.
func (s *Store) PutIf(e Entry, numNew int, keep func(cur Entry) bool) bool {
	e.NumBytes = newBytes(e, numNew)
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.byID[e.Response.ID]
	if !ok || !keep(*el.Value.(*Entry)) {
		return false
	}
	s.put(e)
	return true
}

// newBytes is the text of e's last numNew messages, bytes.
func newBytes(e Entry, numNew int) int {
	numNew = min(max(numNew, 0), len(e.Messages))
	n := 0
	for _, m := range e.Messages[len(e.Messages)-numNew:] {
		n += m.numBytes()
	}
	return n
}

// put stores e (NumBytes set) and evicts beyond the limits; s.mu is held.
func (s *Store) put(e Entry) {
	if el, ok := s.byID[e.Response.ID]; ok {
		s.remove(el)
	}
	s.byID[e.Response.ID] = s.order.PushFront(&e)
	s.numBytes += e.NumBytes
	for s.order.Len() > 1 && (s.order.Len() > s.limits.MaxEntries || s.numBytes > s.limits.MaxBytes) {
		s.remove(s.order.Back())
	}
}

// Update calls fn with the entry of id under the store's lock; fn changes
// it in place and reports whether to keep the change. It returns the entry
// as it is afterwards and whether id was stored. A background response's
// status changes go through it, so that a cancel and the response's end
// cannot both win.
func (s *Store) Update(id string, fn func(e *Entry) bool) (Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.byID[id]
	if !ok {
		return Entry{}, false
	}
	cur := el.Value.(*Entry)
	e := *cur
	if fn(&e) {
		*cur = e
	}
	return *cur, true
}

// Get returns the entry of id and marks it recently used.
func (s *Store) Get(id string) (Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.byID[id]
	if !ok {
		return Entry{}, false
	}
	s.order.MoveToFront(el)
	return *el.Value.(*Entry), true
}

// Delete removes id; false if it was not stored.
func (s *Store) Delete(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.byID[id]
	if ok {
		s.remove(el)
	}
	return ok
}

// Len returns the number of entries.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}

func (s *Store) remove(el *list.Element) {
	e := s.order.Remove(el).(*Entry)
	delete(s.byID, e.Response.ID)
	s.numBytes -= e.NumBytes
}
