package fleet

// Convs maps resumable-stream conversation ids (X-Conversation-Id) to the
// model whose child holds the session, as llama-server's router does: the
// stream routes go straight to that child. A ticket tells a request whose
// entry a stop (or a newer request of the id) has since replaced.
type Convs struct {
	byID map[string]conv
	next uint64
}

type conv struct {
	model  string
	ticket uint64
}

// Remember maps id to model and returns the entry's ticket (0 for no id).
func (c *Convs) Remember(id, model string) uint64 {
	if id == "" {
		return 0
	}
	if c.byID == nil {
		c.byID = map[string]conv{}
	}
	c.next++
	c.byID[id] = conv{model, c.next}
	return c.next
}

// Alive reports whether id's entry is still the one ticket names.
func (c *Convs) Alive(id string, ticket uint64) bool {
	e, ok := c.byID[id]
	return ok && e.ticket == ticket
}

// Owner is the model id maps to.
func (c *Convs) Owner(id string) (string, bool) {
	e, ok := c.byID[id]
	return e.model, ok
}

// Forget drops id's entry.
func (c *Convs) Forget(id string) { delete(c.byID, id) }
