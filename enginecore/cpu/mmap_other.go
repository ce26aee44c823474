//go:build !unix

package cpu

import (
	"errors"
	"os"
)

const mmapSupported = false

func mapFile(*os.File, int64) ([]byte, func([]byte) error, error) {
	return nil, nil, errors.New("file mapping is not supported")
}

// allocZeroed is make off unix.
func allocZeroed(n int) ([]byte, func(), error) { return make([]byte, n), func() {}, nil }
