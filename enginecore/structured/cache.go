package structured

import "container/list"

// Cache keeps the most recently compiled constraints, so that a request
// whose constraint was compiled before (an agent's tools, a client's
// schema) starts from a copy of the compiled matcher instead of a new
// compile. Not safe for concurrent use (the engine's goroutine owns it).
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
	if e, ok := c.byKey[k]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cached).m.Clone(), true, nil
	}
	m, err = c.v.Compile(k)
	if err != nil {
		return nil, false, err
	}
	if c.max > 0 {
		c.byKey[k] = c.order.PushFront(&cached{key: k, m: m.Clone()})
		for c.order.Len() > c.max {
			old := c.order.Remove(c.order.Back()).(*cached)
			delete(c.byKey, old.key)
			old.m.Close()
		}
	}
	return m, false, nil
}

// Len is the number of compiled constraints kept.
func (c *Cache) Len() int { return c.order.Len() }
