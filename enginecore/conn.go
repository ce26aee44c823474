package enginecore

// Conn is the engine's view of its ROUTER socket: multipart messages whose
// first frame is the peer identity. wire/zmq.Conn implements it.
type Conn interface {
	Recv() <-chan [][]byte
	Send(frames [][]byte) error
}

// Publisher is the engine's view of its PUB socket (nil = no reports).
type Publisher interface {
	Send(frames [][]byte) error
}
