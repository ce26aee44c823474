//go:build unix

package safetensors

import (
	"fmt"
	"math"
	"os"
	"syscall"
)

// mapFile maps size bytes of fd read-only and shared: pages come from the
// page cache on demand and are shared with other processes mapping the same
// file. Truncating the file while it is mapped makes later reads fault.
func mapFile(fd *os.File, size int64) ([]byte, func([]byte) error, error) {
	if size > math.MaxInt {
		return nil, nil, fmt.Errorf("file of %d bytes is too large to map", size)
	}
	data, err := syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, syscall.Munmap, nil
}
