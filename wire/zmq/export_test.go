package zmq

// NumUndelivered exposes how many received messages wait outside the Recv channel.
func (c *Conn) NumUndelivered() int64 { return c.numUndelivered.Load() }

// NumBlocked exposes how many sends were refused with EAGAIN and retried.
func (c *Conn) NumBlocked() uint64 { return c.numBlocked.Load() }

// ReadPaused exposes whether the socket goroutine stopped reading.
func (c *Conn) ReadPaused() bool { return c.readPaused.Load() }

// Z85Encode and Z85Decode expose the key codec.
var (
	Z85Encode = z85Encode
	Z85Decode = z85Decode
)
