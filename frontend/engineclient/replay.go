package engineclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/zmq"
)

// A frontend that joins after an engine cached prefixes (scale-out, or a
// frontend restarted by serve) would never learn them from the live
// events alone, and would route a shared system prompt as if nothing
// were cached. So it loads a snapshot of the engine's cached blocks from
// the replay socket (docs/wire.md §10) right after it subscribes, and
// then applies the live batches from the snapshot's sequence number on.
// When the subscription took effect only after that number (ZMQ's late
// joiner), the batches in between come from a replay.

// replayTimeout bounds one snapshot or replay answer.
const replayTimeout = 10 * time.Second

// catchUp is where engine i's live KV events continue after a snapshot.
type catchUp struct {
	replay string // the replay socket; "" = none
	next   uint64 // the first live batch the snapshot did not include
	active bool   // a snapshot was loaded and no live batch applied yet
}

// loadSnapshot applies a snapshot of engine i's cached blocks from its
// replay socket at ep, and returns where live batches continue.
func (c *Client) loadSnapshot(i int, ep string) catchUp {
	cu := catchUp{replay: ep}
	if ep == "" {
		return cu
	}
	var blocks int
	err := c.askReplay(ep, wire.SnapshotRequest, func(seq uint64, b *wire.KVEventBatch) {
		cu.next, cu.active = seq, true
		for _, ev := range b.Events {
			if s, ok := ev.(*wire.BlockStored); ok {
				blocks += len(s.BlockHashes)
			}
		}
		c.router.ApplyKV(i, b)
	})
	if err != nil {
		c.log.Warn("no KV snapshot from the engine: prefixes it cached before this frontend joined are unknown", "engine", i, "endpoint", ep, "err", err)
		return catchUp{replay: ep}
	}
	c.log.Debug("loaded the engine's KV snapshot", "engine", i, "blocks", blocks, "next_seq", cu.next)
	return cu
}

// admit says whether live batch seq of engine i is applied, filling a
// gap after the snapshot from a replay first.
func (c *Client) admit(i int, cu *catchUp, seq uint64) bool {
	if !cu.active {
		return true
	}
	if seq < cu.next {
		return false // in the snapshot already
	}
	cu.active = false
	if seq > cu.next {
		from, to := cu.next, seq
		err := c.askReplay(cu.replay, wire.ReplayRequest(from), func(s uint64, b *wire.KVEventBatch) {
			if s < to {
				c.router.ApplyKV(i, b)
			}
		})
		if err != nil {
			c.log.Debug("missed engine events after the KV snapshot", "engine", i, "from", from, "to", to, "err", err)
		}
	}
	return true
}

// askReplay sends request to the replay socket at ep and calls fn with
// each batch of the answer, in order, until its end marker.
func (c *Client) askReplay(ep string, request []byte, fn func(seq uint64, b *wire.KVEventBatch)) error {
	ctx, cancel := context.WithTimeout(context.Background(), replayTimeout)
	defer cancel()
	conn, err := zmq.DialDealer(ep, c.cfg.DialOptions...)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Send([][]byte{request}); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.stop:
			return ErrClosed
		case frames, ok := <-conn.Recv():
			if !ok {
				return errors.New("replay socket closed")
			}
			if wire.IsReplayEnd(frames) {
				return nil
			}
			_, seq, payload, err := wire.ParsePub(frames)
			if err != nil {
				return err
			}
			var b wire.KVEventBatch
			if err := wire.Unmarshal(payload, &b); err != nil {
				return fmt.Errorf("batch %d: %w", seq, err)
			}
			fn(seq, &b)
		}
	}
}
