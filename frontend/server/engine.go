package server

import (
	"context"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/wire"
)

// Engine is what the server needs of the engine cores.
type Engine interface {
	// Submit routes one request to an engine; the stream must be read to
	// its end or closed (closing an unfinished stream aborts it).
	Submit(ctx context.Context, req *wire.EngineCoreRequest) (Stream, error)
	// Session returns what each engine knows of a session (empty if none).
	Session(ctx context.Context, id string) ([]wire.SessionInfo, error)
	// EndSession ends a session everywhere; false if no engine knew it.
	EndSession(ctx context.Context, id string) (bool, error)
	// Engines describes every configured engine.
	Engines() []engineclient.EngineState
}

// Stream is one request's outputs.
type Stream interface {
	// Next returns the next output; io.EOF after the finishing one.
	Next(ctx context.Context) (wire.EngineCoreOutput, error)
	Close()
}

// ClientEngine adapts an engineclient.Client to Engine.
func ClientEngine(c *engineclient.Client) Engine { return clientEngine{c} }

type clientEngine struct{ *engineclient.Client }

func (c clientEngine) Submit(ctx context.Context, req *wire.EngineCoreRequest) (Stream, error) {
	s, err := c.Client.Submit(ctx, req)
	if err != nil {
		return nil, err
	}
	return s, nil
}
