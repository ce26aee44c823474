package engineclient

import (
	"context"
	"strings"

	"github.com/tandem-llm/tandem/wire"
)

// KV transfer (the engines' kv_export, kv_import and kv_evict utilities,
// docs/wire.md): cached KV blocks of a token chain copied out of one
// engine and into another, for llama-server's slot save and restore.

// KVResult is a KV-transfer utility's answer. Code is KVTransferOK or why
// not; an engine from before these utilities answers
// KVTransferUnsupported.
type KVResult struct {
	Code       wire.KVTransferCode
	Message    string
	Layout     map[string]any // kv_export: the engine's block layout and model
	NumBlocks  int            // kv_export, kv_import: the chain's cached blocks
	FirstBlock int            // kv_export: Data's first block in the chain
	Data       []byte         // kv_export: the blocks' bytes
	NumTokens  int            // kv_evict: tokens evicted
}

// KVExport reads blocks first… (at most limit) of the cached chain of
// tokens' full blocks under salt from engine i.
func (c *Client) KVExport(ctx context.Context, i int, tokens []int32, salt string, first, limit int) (KVResult, error) {
	return c.kvCall(ctx, i, "kv_export", tokens, salt, first, limit)
}

// KVImport writes data as blocks first… of tokens' chain on engine i,
// where they join the prefix cache, owned by session ("" for none).
func (c *Client) KVImport(ctx context.Context, i int, tokens []int32, salt, session string, first int, layout map[string]any, data []byte) (KVResult, error) {
	return c.kvCall(ctx, i, "kv_import", tokens, salt, session, first, layout, data)
}

// KVEvict drops engine i's cached blocks of tokens' chain under salt that
// no request holds.
func (c *Client) KVEvict(ctx context.Context, i int, tokens []int32, salt string) (KVResult, error) {
	return c.kvCall(ctx, i, "kv_evict", tokens, salt)
}

func (c *Client) kvCall(ctx context.Context, i int, method string, args ...any) (KVResult, error) {
	raw, err := c.Call(ctx, i, method, args...)
	if err != nil {
		if strings.Contains(err.Error(), "unknown utility method") { // an engine from before KV transfer
			return KVResult{Code: wire.KVTransferUnsupported, Message: "the engine has no KV transfer"}, nil
		}
		return KVResult{}, err
	}
	var m map[string]any
	if err := wire.Unmarshal(raw, &m); err != nil {
		return KVResult{}, err
	}
	num := func(k string) int {
		switch n := m[k].(type) {
		case int64:
			return int(n)
		case uint64:
			return int(n)
		}
		return 0
	}
	r := KVResult{Code: wire.KVTransferCode(num("code")), NumBlocks: num("num_blocks"), FirstBlock: num("first_block"), NumTokens: num("num_tokens")}
	r.Message, _ = m["message"].(string)
	r.Layout, _ = m["layout"].(map[string]any)
	r.Data, _ = m["data"].([]byte)
	return r, nil
}
