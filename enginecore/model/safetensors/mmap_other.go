//go:build !unix

package safetensors

import (
	"io"
	"os"
)

// mapFile reads the file into memory where mmap is unavailable.
func mapFile(fd *os.File, size int64) ([]byte, func([]byte) error, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(fd, data); err != nil {
		return nil, nil, err
	}
	return data, func([]byte) error { return nil }, nil
}
