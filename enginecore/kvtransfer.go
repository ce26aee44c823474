package enginecore

import (
	"fmt"
	"maps"
	"reflect"

	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/wire"
)

// KV transfer: whole cached blocks copied out of the engine and back in,
// for llama-server's slot save, restore and erase (the frontend's
// /slots/{id}?action=…). Three utilities, each answering a map with
// "code" (wire.KVTransferCode) and "message":
//
//	kv_export [token_ids, cache_salt, first_block, max_blocks]
//	  → layout, num_blocks (the cached chain of token_ids' full blocks),
//	    first_block, data (blocks first_block… of the chain, at most
//	    max_blocks, each layout.bytes_per_block bytes)
//	kv_import [token_ids, cache_salt, session_id, first_block, layout, data]
//	  → num_blocks (the chain cached now): the blocks join the prefix
//	    cache as if computed, owned by session_id ("" for none)
//	kv_evict [token_ids, cache_salt] → num_tokens evicted
//
// A frontend moves a long chain in several calls (a ZeroMQ message to the
// engine is at most 32 MiB); each call reads the chain afresh, so one
// evicted meanwhile ends the export short and an import that lost its
// start answers chain_evicted.

// kvCopier is a Backend that can copy whole KV blocks (cpu.Backend),
// itself or a backend it wraps (backendAs).
type kvCopier interface {
	KVLayout() runner.KVLayout
	ReadKVBlocks(ids []int32, dst []byte) error
	WriteKVBlocks(ids []int32, src []byte) error
}

// backendAs finds a T (an optional capability: kvCopier, loraLoader) in
// be or in the backends it wraps (Unwrap() runner.Backend: cmd/tandem's
// closer).
func backendAs[T any](be runner.Backend) (T, bool) {
	for {
		if c, ok := be.(T); ok {
			return c, true
		}
		u, ok := be.(interface{ Unwrap() runner.Backend })
		if !ok {
			var zero T
			return zero, false
		}
		be = u.Unwrap()
	}
}

// kvLayout is the layout map of kv_export and kv_import: the backend's
// block layout and the model it was computed by.
func (e *Engine) kvLayout(c kvCopier) map[string]any {
	l, m := c.KVLayout(), e.be.Model()
	return map[string]any{
		"device": l.Device, "dtype": l.Dtype, "num_layers": int64(l.NumLayers), "num_kv_heads": int64(l.NumKVHeads),
		"head_dim": int64(l.HeadDim), "block_size": int64(l.BlockSize), "bytes_per_block": int64(l.BytesPerBlock),
		"model": m.Name, "arch": m.Arch, "vocab_size": int64(m.VocabSize),
	}
}

// kvResult is a KV-transfer answer with code and its message.
func kvResult(code wire.KVTransferCode, format string, args ...any) map[string]any {
	msg := code.String()
	if format != "" {
		msg = fmt.Sprintf(format, args...)
	}
	return map[string]any{"code": int64(code), "message": msg}
}

// kvReady says why the engine cannot move KV blocks now (nil: it can).
func (e *Engine) kvReady() (kvCopier, map[string]any) {
	c, ok := backendAs[kvCopier](e.be)
	switch {
	case !ok:
		return nil, kvResult(wire.KVTransferUnsupported, "this engine's device cannot copy KV blocks")
	case !e.cfg.EnablePrefixCaching:
		return nil, kvResult(wire.KVTransferDisabled, "prefix caching is off (--no-enable-prefix-caching)")
	case e.slp.kv:
		return nil, kvResult(wire.KVTransferSleeping, "the engine sleeps with its KV cache released")
	}
	return c, nil
}

// kvCall runs kv_export, kv_import or kv_evict.
func (e *Engine) kvCall(method string, args []any) (any, error) {
	want := map[string]int{"kv_export": 4, "kv_import": 6, "kv_evict": 2}[method]
	if len(args) != want {
		return nil, fmt.Errorf("%s takes %d arguments, not %d", method, want, len(args))
	}
	tokens, ok := tokenArg(args[0])
	salt, ok2 := args[1].(string)
	if !ok || !ok2 {
		return nil, fmt.Errorf("%s: token_ids must be an array of token ids and cache_salt a string", method)
	}
	c, fail := e.kvReady()
	if fail != nil {
		return fail, nil
	}
	switch method {
	case "kv_export":
		first, ok := intArg(args[2])
		limit, ok2 := intArg(args[3])
		if !ok || !ok2 || first < 0 || limit < 1 {
			return nil, fmt.Errorf("kv_export: first_block must be ≥ 0 and max_blocks ≥ 1")
		}
		return e.kvExport(c, tokens, salt, first, limit)
	case "kv_import":
		session, ok := args[2].(string)
		first, ok2 := intArg(args[3])
		layout, ok3 := args[4].(map[string]any)
		data, ok4 := args[5].([]byte)
		if !ok || !ok2 || !ok3 || !ok4 || first < 0 {
			return nil, fmt.Errorf("kv_import: want session_id string, first_block ≥ 0, layout map and data bytes")
		}
		return e.kvImport(c, tokens, salt, session, first, layout, data)
	}
	res := kvResult(wire.KVTransferOK, "")
	res["num_tokens"] = int64(e.kv.EvictChain(tokens, salt))
	return res, nil
}

// kvExport copies blocks [first, first+limit) of tokens' cached chain.
func (e *Engine) kvExport(c kvCopier, tokens []int32, salt string, first, limit int) (any, error) {
	chain := e.kv.CachedChain(tokens, salt)
	end := min(len(chain), first+limit)
	ids := make([]int32, 0, max(end-first, 0))
	for _, id := range chain[min(first, end):end] {
		ids = append(ids, int32(id))
	}
	data := make([]byte, len(ids)*c.KVLayout().BytesPerBlock)
	if err := c.ReadKVBlocks(ids, data); err != nil {
		return nil, fmt.Errorf("kv_export: %w", err)
	}
	res := kvResult(wire.KVTransferOK, "")
	res["layout"], res["num_blocks"], res["first_block"], res["data"] = e.kvLayout(c), int64(len(chain)), int64(first), data
	return res, nil
}

// kvImport writes data as blocks first… of tokens' chain and caches them.
// The blocks before first must be cached (an earlier call put them
// there); blocks already cached keep their contents.
func (e *Engine) kvImport(c kvCopier, tokens []int32, salt, session string, first int, layout map[string]any, data []byte) (any, error) {
	mine := e.kvLayout(c)
	if !reflect.DeepEqual(normalizeInts(layout), mine) {
		return kvResult(wire.KVTransferLayout, "the KV blocks were saved from another cache layout or model (%v; this engine: %v)", layout, mine), nil
	}
	l := c.KVLayout()
	if len(data)%l.BytesPerBlock != 0 {
		return nil, fmt.Errorf("kv_import: %d bytes of data is not a whole number of %d-byte blocks", len(data), l.BytesPerBlock)
	}
	n := len(data) / l.BytesPerBlock
	if (first+n)*l.BlockSize > len(tokens) {
		return nil, fmt.Errorf("kv_import: blocks %d..%d need %d tokens, token_ids has %d", first, first+n, (first+n)*l.BlockSize, len(tokens))
	}
	const id = "\x00kv-import" // no frontend's request id: those are namespaced by client
	cached := e.kv.Adopt(id, tokens[:(first+n)*l.BlockSize], salt, session) / l.BlockSize
	defer e.kv.Free(id)
	if cached < first {
		return kvResult(wire.KVTransferChain, "blocks %d..%d of the chain are no longer cached", cached, first), nil
	}
	if !e.kv.Allocate(id, (first+n)*l.BlockSize) {
		return kvResult(wire.KVTransferNoSpace, "no room for %d more KV blocks (%d free)", first+n-cached, e.kv.Stats().NumFreeBlocks), nil
	}
	table := e.kv.BlockTable(id)
	ids := make([]int32, 0, first+n-cached)
	for _, b := range table[cached : first+n] {
		ids = append(ids, int32(b))
	}
	skip := (cached - first) * l.BytesPerBlock
	if err := c.WriteKVBlocks(ids, data[skip:]); err != nil {
		return nil, fmt.Errorf("kv_import: %w", err)
	}
	e.kv.Commit(id, tokens, (first+n)*l.BlockSize)
	res := kvResult(wire.KVTransferOK, "")
	res["num_blocks"] = int64(len(e.kv.CachedChain(tokens, salt)))
	return res, nil
}

// normalizeInts returns m with its integers as int64 (a decoded map may
// hold uint64 for large values, or whole float64s from JSON).
func normalizeInts(m map[string]any) map[string]any {
	out := maps.Clone(m)
	for k, v := range out {
		switch n := v.(type) {
		case uint64:
			out[k] = int64(n)
		case float64:
			if n == float64(int64(n)) {
				out[k] = int64(n)
			}
		}
	}
	return out
}

// tokenArg reads an array of token ids.
func tokenArg(v any) ([]int32, bool) {
	a, ok := v.([]any)
	if !ok {
		return nil, v == nil
	}
	out := make([]int32, len(a))
	for i, x := range a {
		n, ok := intArg(x)
		if !ok || n < 0 || n > 1<<31-1 {
			return nil, false
		}
		out[i] = int32(n)
	}
	return out, true
}
