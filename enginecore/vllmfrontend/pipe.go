package vllmfrontend

import (
	"errors"
	"sync"
)

// PeerIdentity is the identity the engine core sees the gate by: its one
// frontend.
const PeerIdentity = "vllm-frontend"

// pipeDepth is each direction's buffer, in messages: deep enough that
// neither side waits on the other in any burst the engine's own queues
// (4096 messages each way) allow.
const pipeDepth = 1 << 16

// ErrClosed is what Pipe.Send returns once the bridge is gone.
var ErrClosed = errors.New("vllmfrontend: pipe closed")

// Pipe is the engine core's ROUTER socket in process (it implements
// enginecore.Conn): the engine core receives what the gate sends it as
// from a frontend with identity PeerIdentity, and what it sends that
// identity the gate reads. Messages to any other identity are dropped.
type Pipe struct {
	toEngine   chan [][]byte // [PeerIdentity][type][payload]
	fromEngine chan [][]byte // [type][payload]
	done       chan struct{}
	once       sync.Once
}

// NewPipe returns an open Pipe.
func NewPipe() *Pipe {
	return &Pipe{toEngine: make(chan [][]byte, pipeDepth), fromEngine: make(chan [][]byte, pipeDepth), done: make(chan struct{})}
}

// Recv is the engine core's side: the gate's messages, identity first.
func (p *Pipe) Recv() <-chan [][]byte { return p.toEngine }

// Send is the engine core's side: a message for the frontend whose
// identity is frames[0]. It waits while the gate's buffer is full.
func (p *Pipe) Send(frames [][]byte) error {
	if len(frames) < 2 || string(frames[0]) != PeerIdentity {
		return nil // a peer that does not exist: dropped, as by a ROUTER
	}
	select {
	case p.fromEngine <- frames[1:]:
		return nil
	case <-p.done:
		return ErrClosed
	}
}

// send is the gate's side: one message for the engine core.
func (p *Pipe) send(frames [][]byte) {
	select {
	case p.toEngine <- append([][]byte{[]byte(PeerIdentity)}, frames...):
	case <-p.done:
	}
}

// close makes both sides' sends return.
func (p *Pipe) close() { p.once.Do(func() { close(p.done) }) }
