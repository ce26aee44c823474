//go:build !linux

package cpu

// releasePages is a no-op off Linux.
func releasePages([]byte) {}
