package cpu

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tandem-llm/tandem/enginecore/cpu/kernels"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// The pack cache keeps a model's packed matrices in a file, mapped
// read-only, instead of in the Go heap: the weights are then file pages,
// resident once, shared by every engine process serving the model, and
// the next start maps them without packing again.
//
// A cache file is named by a key over every matrix's source (name, type,
// shape and a CRC-32C of its bytes), kernels.Layout and kernels.Packing
// (the layouts vary with the kernel level); it holds a
// header page and then each encoded matrix (kernels.Matrix.Encode) at a
// page-aligned offset:
//
//	[0,4)    magic "TPKF"
//	[4,36)   key (sha256)
//	[36,40)  number of matrices N (u32, machine order)
//	[40,48)  file size (u64)
//	[48,...) N offsets (u64)
//
// It is written to a temporary file, synced and renamed, so a reader sees
// a whole file or none. Files not used for longest are deleted past
// PackCacheMaxFiles or PackCacheMaxBytes.
const (
	PackCacheMaxFiles = 16
	PackCacheMaxBytes = 32 << 30
	packExt           = ".tpk"
	packMagic         = "TPKF"
	packPage          = 4096
)

// Option configures New.
type Option func(*options)

type options struct {
	packDir string
}

// WithPackCache keeps the packed matrices in a cache file under dir
// (created if missing), mapped read-only; "" packs into memory. If the
// cache cannot be used (a read-only directory, a full disk), New packs
// into memory and PackInfo says why.
func WithPackCache(dir string) Option { return func(o *options) { o.packDir = dir } }

// PackInfo says where the backend's packed matrices live.
type PackInfo struct {
	File  string        // the cache file mapped; "" when the matrices are in memory
	Hit   bool          // File existed: nothing was packed
	Bytes int64         // packed size
	Took  time.Duration // hashing, packing and writing
	Err   error         // why the cache was not used; nil when it was, or when none was asked for
}

// PackInfo reports where the packed matrices live.
func (b *Backend) PackInfo() PackInfo { return b.packInfo }

// packTask is one matrix to pack: where it goes and its source.
type packTask struct {
	dst **kernels.Matrix
	src *model.Tensor
}

// packKey hashes every source, threads at a time, dropping each source's
// pages from the resident set once read.
func packKey(tasks []packTask, threads int) [32]byte {
	files := readFileRanges()
	crcs := make([]uint32, len(tasks))
	table := crc32.MakeTable(crc32.Castagnoli)
	forEach(len(tasks), threads, func(i int) {
		crcs[i] = crc32.Checksum(tasks[i].src.Data, table)
		dropPages(tasks[i].src.Data, files)
	})
	h := sha256.New()
	fmt.Fprintf(h, "%s %s %s %d\n", kernels.Layout, kernels.Packing(), runtime.GOARCH, len(tasks))
	for i, t := range tasks {
		fmt.Fprintf(h, "%s %d %v %d %08x\n", t.src.Name, t.src.Type, t.src.Shape, len(t.src.Data), crcs[i])
	}
	var key [32]byte
	h.Sum(key[:0])
	return key
}

// forEach runs f(0..n-1), threads at a time.
func forEach(n, threads int, f func(i int)) {
	sem := make(chan struct{}, max(threads, 1))
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			f(i)
		})
	}
	wg.Wait()
}

// packCached maps the cache file for tasks, writing it first if missing.
func (b *Backend) packCached(tasks []packTask, threads int, dir string) error {
	start := time.Now()
	defer func() { b.packInfo.Took = time.Since(start) }()
	if !mmapSupported {
		return errors.New("cpu: pack cache: file mapping is not supported on " + runtime.GOOS)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cpu: pack cache: %w", err)
	}
	key := packKey(tasks, threads)
	path := filepath.Join(dir, fmt.Sprintf("%x%s", key[:12], packExt))
	err := b.mapPacked(path, key, tasks)
	if err == nil {
		b.packInfo.Hit = true
		now := time.Now()
		_ = os.Chtimes(path, now, now) // least recently used goes first
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		_ = os.Remove(path) // stale or damaged: rewrite it
	}
	if err := writePacked(path, key, tasks, threads); err != nil {
		return err
	}
	debug.FreeOSMemory() // the packed matrices went to the file; give their heap back
	if err := b.mapPacked(path, key, tasks); err != nil {
		return err
	}
	evictPacked(dir, path)
	return nil
}

// mapPacked maps the cache file at path and points every task's
// destination into it.
func (b *Backend) mapPacked(path string, key [32]byte, tasks []packTask) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < packPage {
		return fmt.Errorf("cpu: pack cache %s: %d bytes", path, st.Size())
	}
	data, unmap, err := mapFile(f, st.Size())
	if err != nil {
		return fmt.Errorf("cpu: pack cache %s: %w", path, err)
	}
	ms, err := decodePacked(data, key, tasks)
	if err != nil {
		_ = unmap(data)
		return fmt.Errorf("cpu: pack cache %s: %w", path, err)
	}
	for i, t := range tasks {
		*t.dst = ms[i]
		b.packInfo.Bytes += ms[i].Bytes()
	}
	b.packInfo.File = path
	b.packData = data
	b.unmap = func() error { return unmap(data) }
	return nil
}

// decodePacked checks a cache file's header against key and tasks and
// decodes its matrices (views into data).
func decodePacked(data []byte, key [32]byte, tasks []packTask) ([]*kernels.Matrix, error) {
	ne := binary.NativeEndian
	n := len(tasks)
	switch {
	case string(data[:4]) != packMagic:
		return nil, errors.New("not a pack cache file")
	case [32]byte(data[4:36]) != key:
		return nil, errors.New("key differs")
	case int(ne.Uint32(data[36:])) != n || 48+8*n > packPage:
		return nil, fmt.Errorf("%d matrices, want %d", ne.Uint32(data[36:]), n)
	case ne.Uint64(data[40:]) != uint64(len(data)):
		return nil, fmt.Errorf("%d bytes, header says %d", len(data), ne.Uint64(data[40:]))
	}
	ms := make([]*kernels.Matrix, n)
	for i, t := range tasks {
		off := ne.Uint64(data[48+8*i:])
		if off%packPage != 0 || off >= uint64(len(data)) {
			return nil, fmt.Errorf("matrix %d at offset %d", i, off)
		}
		m, _, err := kernels.DecodeMatrix(data[off:])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.src.Name, err)
		}
		if m.In != t.src.Shape[0] || m.Out != t.src.Rows() || m.Type != t.src.Type {
			return nil, fmt.Errorf("%s: cached %v %d×%d, model has %v %d×%d", t.src.Name, m.Type, m.Out, m.In, t.src.Type, t.src.Rows(), t.src.Shape[0])
		}
		ms[i] = m
	}
	return ms, nil
}

// writePacked packs every task, threads at a time, into a new cache file
// at path. Each matrix goes to the file as soon as it is packed, so at
// most threads of them are in memory at once.
func writePacked(path string, key [32]byte, tasks []packTask, threads int) error {
	offs := make([]int64, len(tasks))
	end := int64(packPage)
	for i, t := range tasks {
		n, err := kernels.EncodedBound(t.src)
		if err != nil {
			return fmt.Errorf("cpu: %w", err)
		}
		offs[i] = end
		end += (n + packPage - 1) &^ (packPage - 1)
	}
	if 48+8*len(tasks) > packPage {
		return fmt.Errorf("cpu: pack cache: %d matrices do not fit a header page", len(tasks))
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("cpu: pack cache: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Truncate(end); err != nil {
		return fmt.Errorf("cpu: pack cache: %w", err)
	}
	errs := make([]error, len(tasks))
	forEach(len(tasks), threads, func(i int) {
		m, err := kernels.Pack(tasks[i].src)
		if err != nil {
			errs[i] = fmt.Errorf("cpu: %w", err)
			return
		}
		releasePages(tasks[i].src.Data)
		if bound := offs[i] + m.EncodedSize(); i+1 < len(offs) && bound > offs[i+1] || bound > end {
			errs[i] = fmt.Errorf("cpu: pack cache: %s encodes to more than its bound", tasks[i].src.Name)
			return
		}
		if err := m.Encode(io.NewOffsetWriter(tmp, offs[i])); err != nil {
			errs[i] = fmt.Errorf("cpu: pack cache: %w", err)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	hdr := make([]byte, 48+8*len(tasks))
	copy(hdr, packMagic)
	copy(hdr[4:], key[:])
	ne := binary.NativeEndian
	ne.PutUint32(hdr[36:], uint32(len(tasks)))
	ne.PutUint64(hdr[40:], uint64(end))
	for i, o := range offs {
		ne.PutUint64(hdr[48+8*i:], uint64(o))
	}
	if _, err := tmp.WriteAt(hdr, 0); err != nil {
		return fmt.Errorf("cpu: pack cache: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("cpu: pack cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cpu: pack cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cpu: pack cache: %w", err)
	}
	ok = true
	return nil
}

// evictPacked deletes the cache files under dir used least recently
// beyond PackCacheMaxFiles or PackCacheMaxBytes (never keep, the one just
// mapped), and temporary files an interrupted writer left over an hour
// ago. A file another engine still maps stays readable until unmapped.
func evictPacked(dir, keep string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type file struct {
		path string
		size int64
		used time.Time
	}
	var files []file
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		switch {
		case strings.Contains(e.Name(), packExt+".tmp"):
			if time.Since(info.ModTime()) > time.Hour {
				_ = os.Remove(p)
			}
		case strings.HasSuffix(e.Name(), packExt):
			files = append(files, file{p, info.Size(), info.ModTime()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return b.used.Compare(a.used) })
	var total int64
	kept := 0
	for _, f := range files {
		if f.path == keep { // counted first, whatever its age
			total, kept = f.size, 1
		}
	}
	for _, f := range files {
		switch {
		case f.path == keep:
		case kept < PackCacheMaxFiles && total+f.size <= PackCacheMaxBytes:
			total += f.size
			kept++
		default:
			_ = os.Remove(f.path)
		}
	}
}
