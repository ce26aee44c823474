//go:build cgo

package zmq

// BindPull binds a PULL socket to endpoint. It only receives, fair-queued from every
// connected PUSH peer, with no identity frame: vLLM's frontend receives engine outputs
// this way.
func BindPull(endpoint string, opts ...Option) (*Conn, error) {
	return open(kindPull, endpoint, nil, opts)
}

// DialPush connects a PUSH socket to endpoint. It only sends; like DialDealer it
// queues until the peer has bound and reconnects automatically. vLLM's engine
// sends its outputs this way.
func DialPush(endpoint string, opts ...Option) (*Conn, error) {
	return open(kindPush, endpoint, nil, opts)
}
