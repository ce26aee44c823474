package kvcache

import "github.com/tandem-llm/tandem/wire"

// BlockHash is wire.BlockHash: the chained hash naming a full block.
type BlockHash = wire.BlockHash
