package wire

// KVTransferCode says how a KV-transfer utility (kv_export, kv_import,
// kv_evict: slot save, restore and erase; docs/wire.md) ended: its
// result map's "code", an int. The call itself fails (FailureMessage) only
// for malformed arguments.
type KVTransferCode int

const (
	KVTransferOK          KVTransferCode = iota // done
	KVTransferUnsupported                       // the device cannot copy KV blocks: recompute instead
	KVTransferSleeping                          // the KV cache is released (sleep level ≥ 1): wake the engine
	KVTransferLayout                            // the blocks come from a cache of another layout or model: recompute instead
	KVTransferNoSpace                           // not enough free KV blocks
	KVTransferChain                             // the blocks before first_block are no longer cached: start again
	KVTransferDisabled                          // prefix caching is off: nothing can be kept
)

// String names the code as docs/wire.md does.
func (c KVTransferCode) String() string {
	switch c {
	case KVTransferOK:
		return "ok"
	case KVTransferUnsupported:
		return "unsupported"
	case KVTransferSleeping:
		return "sleeping"
	case KVTransferLayout:
		return "layout_mismatch"
	case KVTransferNoSpace:
		return "no_space"
	case KVTransferChain:
		return "chain_evicted"
	case KVTransferDisabled:
		return "prefix_caching_disabled"
	}
	return "unknown"
}
