//go:build unix

package cpu

import (
	"fmt"
	"math"
	"os"
	"syscall"
)

const mmapSupported = true

// mapFile maps size bytes of f read-only and shared (page-aligned, so the
// pack cache's matrices are aligned views).
func mapFile(f *os.File, size int64) ([]byte, func([]byte) error, error) {
	if size > math.MaxInt {
		return nil, nil, fmt.Errorf("file of %d bytes is too large to map", size)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, syscall.Munmap, nil
}

// allocZeroed returns n zeroed bytes of anonymous memory mapped for this
// use alone, and its release. Pages not yet written are not resident —
// unlike a Go heap allocation, which may reuse (and zero, so touch) pages
// the heap held before — so the KV pool costs only what it holds.
func allocZeroed(n int) ([]byte, func(), error) {
	if n == 0 {
		return nil, func() {}, nil
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { _ = syscall.Munmap(b) }, nil
}
