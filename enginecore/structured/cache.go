package structured

import "container/list"

// Cache keeps the most recently compiled constraints, so that a request
// whose constraint was compiled before (an agent's tools, a client's
// schema) starts from a copy of the compiled matcher instead of a new
// compile. Not safe for concurrent use (the engine's goroutine owns it;
// compiles may run elsewhere and come back through Put).
type Cache struct {
	v     *Vocab
	max   int
	order *list.List // of *cached, most recent first
	byKey map[Constraint]*list.Element
}

type cached struct {
	key Constraint
	m   *Matcher // pristine: never advanced, only cloned
}

// NewCache keeps up to max compiled constraints of v.
func NewCache(v *Vocab, max int) *Cache {
	return &Cache{v: v, max: max, order: list.New(), byKey: map[Constraint]*list.Element{}}
}

// Matcher returns a fresh matcher for c: a copy of the cached compile, or
// a new compile (cached when it succeeds). hit says which.
func (c *Cache) Matcher(k Constraint) (m *Matcher, hit bool, err error) {
	if m, ok := c.Get(k); ok {
		return m, true, nil
	}
	m, err = c.v.Compile(k)
	if err != nil {
		return nil, false, err
	}
	c.Put(k, m.Clone())
	return m, false, nil
}

// Get returns a copy of k's cached compile (about 24 µs), marking it
// recently used; ok is false when k is not cached.
func (c *Cache) Get(k Constraint) (m *Matcher, ok bool) {
	e, ok := c.byKey[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cached).m.Clone(), true
}

// Put keeps m, a freshly compiled matcher of k that nobody else holds
// (the cache owns it from now on, and closes it when it is evicted),
// evicting the least recently used compiles beyond the cache's size. A k
// already cached keeps its matcher, and m is closed.
func (c *Cache) Put(k Constraint, m *Matcher) {
	if _, ok := c.byKey[k]; ok || c.max <= 0 {
		m.Close()
		return
	}
	c.byKey[k] = c.order.PushFront(&cached{key: k, m: m})
	for c.order.Len() > c.max {
		old := c.order.Remove(c.order.Back()).(*cached)
		delete(c.byKey, old.key)
		old.m.Close()
	}
}

// Len is the number of compiled constraints kept.
func (c *Cache) Len() int { return c.order.Len() }
