package engineclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/tandem-llm/tandem/wire"
)

// Sleep mode on every ready engine (the engines' sleep, wake_up,
// is_sleeping, release_kv_cache_memory and touch utilities; see
// docs/wire.md), as vLLM's API server asks its engine cores: all of them
// at once, so that with mode wait no engine takes new work while another
// drains.

// onEach calls method on every ready engine at once and returns their
// raw results (in engine order) or the errors joined.
func (c *Client) onEach(ctx context.Context, method string, args ...any) ([]wire.Raw, error) {
	var ready []int
	for _, e := range c.Engines() {
		if e.Ready {
			ready = append(ready, e.Index)
		}
	}
	if len(ready) == 0 {
		return nil, fmt.Errorf("%w: no engine is ready", ErrEngineDead)
	}
	out := make([]wire.Raw, len(ready))
	errs := make([]error, len(ready))
	var wg sync.WaitGroup
	for k, i := range ready {
		wg.Go(func() { out[k], errs[k] = c.Call(ctx, i, method, args...) })
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// Sleep puts every ready engine to sleep at level (0–2) with mode (abort,
// wait or keep); with wait it returns once each has finished its requests.
func (c *Client) Sleep(ctx context.Context, level int, mode string) error {
	_, err := c.onEach(ctx, "sleep", level, mode)
	return err
}

// WakeUp wakes every ready engine for tags (nil: everything) and reports
// whether all of them are fully awake.
func (c *Client) WakeUp(ctx context.Context, tags []string) (bool, error) {
	var arg any // nil: every tag
	if tags != nil {
		arg = tags
	}
	awake, err := c.bools(ctx, "wake_up", arg)
	return err == nil && !slices.Contains(awake, false), err
}

// IsSleeping reports whether any ready engine sleeps.
func (c *Client) IsSleeping(ctx context.Context) (bool, error) {
	sleeping, err := c.bools(ctx, "is_sleeping")
	return slices.Contains(sleeping, true), err
}

// ReleaseKVCacheMemory frees every ready engine's KV cache (vLLM's
// release_kv_cache_memory: they must have been paused, a level-0 sleep).
func (c *Client) ReleaseKVCacheMemory(ctx context.Context) error {
	_, err := c.onEach(ctx, "release_kv_cache_memory")
	return err
}

// Touch tells every ready engine of activity without a request (a
// tokenization): its idle timer restarts, and one that fell asleep idle
// wakes.
func (c *Client) Touch(ctx context.Context) error {
	_, err := c.onEach(ctx, "touch")
	return err
}

// bools calls a method answering a bool on every ready engine.
func (c *Client) bools(ctx context.Context, method string, args ...any) ([]bool, error) {
	raws, err := c.onEach(ctx, method, args...)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(raws))
	for i, raw := range raws {
		if err := wire.Unmarshal(raw, &out[i]); err != nil {
			return nil, fmt.Errorf("engineclient: %s: %w", method, err)
		}
	}
	return out, nil
}

// ResetPrefixCache drops every ready engine's cached prefixes (vLLM's
// reset_prefix_cache utility): true when each did; false when one still
// held blocks for running requests (resetRunning asks a vLLM engine to
// preempt them for it; Tandem's cannot).
func (c *Client) ResetPrefixCache(ctx context.Context, resetRunning bool) (bool, error) {
	done, err := c.bools(ctx, "reset_prefix_cache", resetRunning, false)
	if err != nil {
		return false, err
	}
	return !slices.Contains(done, false), nil
}
