//go:build !linux

package cpu

// releasePages is a no-op off Linux.
func releasePages([]byte) {}

type fileRanges struct{}

func readFileRanges() fileRanges { return fileRanges{} }

// dropPages is a no-op off Linux.
func dropPages([]byte, fileRanges) {}
