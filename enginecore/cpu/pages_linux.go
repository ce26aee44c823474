package cpu

import (
	"os"
	"strconv"
	"strings"
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

// fileRanges are the address ranges of this process's file mappings,
// from /proc/self/maps; dropPages only advises inside one.
type fileRanges [][2]uintptr

func readFileRanges() fileRanges {
	raw, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil
	}
	var r fileRanges
	for _, line := range strings.Split(string(raw), "\n") {
		// lo-hi perms offset dev inode path
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") || f[4] == "0" {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if ok && err1 == nil && err2 == nil {
			r = append(r, [2]uintptr{uintptr(a), uintptr(b)})
		}
	}
	return r
}

func (r fileRanges) contains(lo, hi uintptr) bool {
	for _, m := range r {
		if lo >= m[0] && hi <= m[1] {
			return true
		}
	}
	return false
}

// dropPages drops data's whole pages from this process's resident set
// without evicting them from the page cache, when data lies in a file
// mapping (MADV_DONTNEED there only unmaps: later reads fault the pages
// back in, from memory; on anonymous memory it would zero them, so that
// is left alone). The pack cache uses it after hashing a matrix's source,
// which the next start reads again.
func dropPages(data []byte, files fileRanges) {
	if len(data) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	lo, hi := (start+page-1)&^(page-1), (start+uintptr(len(data)))&^(page-1)
	if hi > lo && files.contains(lo, hi) {
		syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, syscall.MADV_DONTNEED) //nolint:errcheck // advice only
	}
}
