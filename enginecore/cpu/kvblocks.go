package cpu

import (
	"fmt"
	"unsafe"

	"github.com/tandem-llm/tandem/enginecore/runner"
)

// KV blocks copied out and in whole (slot save and restore, see
// enginecore's kvtransfer.go). One block's bytes are, for each layer l in
// order, its K block ([Hkv][D][B], transposed within the block) then its V
// block ([B][Hkv][D]), in the cache's element type, little-endian as the
// machine stores them: 2·L·B·Hkv·D·elem bytes, KVBytesPerBlock(B).

// KVLayout describes the bytes ReadKVBlocks writes, so that a block is
// written back only into a cache of the same shape and element type.
func (b *Backend) KVLayout() runner.KVLayout {
	return runner.KVLayout{
		Device: "cpu", Dtype: b.kvDtype.String(), NumLayers: b.cfg.NumLayers, NumKVHeads: b.cfg.NumKVHeads,
		HeadDim: b.cfg.HeadDim, BlockSize: b.blockSize, BytesPerBlock: int(b.KVBytesPerBlock(b.blockSize)),
	}
}

// ReadKVBlocks copies blocks ids, in order, into dst
// ([len(ids)][KVBytesPerBlock] bytes).
func (b *Backend) ReadKVBlocks(ids []int32, dst []byte) error {
	return b.copyKVBlocks(ids, dst, false)
}

// WriteKVBlocks copies src ([len(ids)][KVBytesPerBlock] bytes, as
// ReadKVBlocks wrote them) into blocks ids.
func (b *Backend) WriteKVBlocks(ids []int32, src []byte) error {
	return b.copyKVBlocks(ids, src, true)
}

// copyKVBlocks moves whole blocks between the cache and buf: into the
// cache when in is set.
func (b *Backend) copyKVBlocks(ids []int32, buf []byte, in bool) error {
	if b.kv == nil && b.kv16 == nil {
		return ErrNoKVCache
	}
	per := int(b.KVBytesPerBlock(b.blockSize))
	if len(buf) != len(ids)*per {
		return fmt.Errorf("cpu: %d KV blocks take %d bytes, not %d", len(ids), len(ids)*per, len(buf))
	}
	elem := b.kvDtype.bytes()
	var cache []byte // the whole cache as bytes: [L][2][numBlocks][B·Hkv·D] elements
	if b.kv16 != nil {
		cache = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b.kv16))), len(b.kv16)*2)
	} else {
		cache = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b.kv))), len(b.kv)*4)
	}
	part := b.blockSize * b.kvDim * elem // bytes of one layer's K (or V) block
	half := b.numBlocks * part           // bytes of one layer's K (or V) cache
	off := 0
	for _, id := range ids {
		if id < 0 || int(id) >= b.numBlocks {
			return fmt.Errorf("cpu: KV block %d out of range [0, %d)", id, b.numBlocks)
		}
		for l := range b.cfg.NumLayers {
			for kv := range 2 {
				at := (2*l+kv)*half + int(id)*part
				if in {
					copy(cache[at:at+part], buf[off:off+part])
				} else {
					copy(buf[off:off+part], cache[at:at+part])
				}
				off += part
			}
		}
	}
	return nil
}
