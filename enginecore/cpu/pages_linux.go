package cpu

import (
	"os"
	"syscall"
	"unsafe"
)

// madvPageout is Linux's MADV_PAGEOUT (5.4+; older kernels refuse it and
// nothing happens).
const madvPageout = 21

// releasePages tells the kernel that data (a matrix's source bytes, just
// packed) will not be read again: MADV_PAGEOUT drops its clean mmapped
// file pages from this process's resident set, so the weights are not
// resident twice, file and packed copy (they fault back in from the file
// if something reads them). Anonymous memory keeps its contents (without
// swap it stays put). Only whole pages inside data are advised.
func releasePages(data []byte) {
	if len(data) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	lo, hi := (start+page-1)&^(page-1), (start+uintptr(len(data)))&^(page-1)
	if hi > lo {
		syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, madvPageout) //nolint:errcheck // advice only
	}
}
