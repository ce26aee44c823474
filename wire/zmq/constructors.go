//go:build cgo

package zmq

// BindRouter binds a ROUTER socket to endpoint (tcp://host:port, tcp://host:0 for any
// free port, or ipc:///path). Every received message has the peer's identity as frame 0;
// to reply, Send a message whose frame 0 is that identity. ZMQ_ROUTER_MANDATORY is set,
// so a message to an identity that is not connected is dropped and counted by Dropped
// instead of blocking. ZMQ_ROUTER_HANDOVER is not set: while a peer is connected, a
// second peer presenting its identity is refused by libzmq, so no one can take over
// another frontend's route (a DEALER that reconnects after a drop gets its identity
// back once the old connection is gone).
func BindRouter(endpoint string, opts ...Option) (*Conn, error) {
	return open(kindRouter, endpoint, nil, opts)
}

// DialDealer connects a DEALER socket to endpoint. The connection is made in the
// background: it succeeds before the peer has bound, queues messages until then, and
// reconnects automatically. The ROUTER peer sees Identity() as frame 0.
func DialDealer(endpoint string, opts ...Option) (*Conn, error) {
	return open(kindDealer, endpoint, nil, opts)
}

// BindPub binds a PUB socket to endpoint. It only sends; frame 0 of each message is the
// topic that subscribers filter on by prefix. A subscriber that is not connected yet
// misses messages (ZMQ's late-joiner rule).
func BindPub(endpoint string, opts ...Option) (*Conn, error) {
	return open(kindPub, endpoint, nil, opts)
}

// DialSub connects a SUB socket to endpoint and subscribes to topics, which are byte
// prefixes matched against frame 0. Nil or empty topics subscribe to every message. It
// only receives.
func DialSub(endpoint string, topics []string, opts ...Option) (*Conn, error) {
	if len(topics) == 0 {
		topics = []string{""}
	}
	return open(kindSub, endpoint, topics, opts)
}

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
