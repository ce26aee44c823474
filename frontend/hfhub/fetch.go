package hfhub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Progress comes at most this often per file, and at the end.
const (
	progressBytes = 1 << 20
	progressEvery = 200 * time.Millisecond
)

// fetch puts one file of plan in the cache: nothing if the snapshot has
// it, a link if the blob is there (another commit has it), else a
// download of the blob, then the link.
func (c *Client) fetch(ctx context.Context, plan Plan, f File, report func(Progress)) error {
	ref := plan.Ref
	snap := c.snapPath(ref.Repo, plan.Commit, f.Path)
	p := Progress{File: f.Path, URL: c.fileURL(ref.Repo, plan.Commit, f.Path), Total: f.Size}
	if n, ok := complete(snap, f.Size); ok {
		p.Bytes, p.Total, p.Done, p.Cached = n, n, true, true
		report(p)
		return nil
	}
	target := snap // a file the hub gave no oid is written in place, as llama.cpp does
	if f.OID != "" {
		target = c.blobPath(ref.Repo, f.OID)
	}
	err := c.fetchLocked(ctx, ref, f, target, snap, &p, report)
	p.Done, p.Err = true, err
	report(p)
	return err
}

func (c *Client) fetchLocked(ctx context.Context, ref Ref, f File, target, snap string, p *Progress, report func(Progress)) error {
	unlock, err := c.locks.lock(ctx, target)
	if err != nil {
		return &Error{Ref: ref, Err: err, Msg: f.Path}
	}
	defer unlock()
	if n, ok := complete(target, f.Size); ok {
		p.Bytes, p.Total, p.Cached = n, n, true
	} else if err := c.get(ctx, ref, f, target, p, report); err != nil {
		return err
	}
	if target != snap {
		if err := link(target, snap); err != nil {
			return &Error{Ref: ref, Err: err, Msg: f.Path}
		}
	}
	return nil
}

// complete reports whether path holds a whole file (of size, when known).
func complete(path string, size int64) (int64, bool) {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || size > 0 && st.Size() != size {
		return 0, false
	}
	return st.Size(), true
}

// get downloads f into target through target.incomplete: resumed with a
// Range request from the partial file's size, checked against the hub's
// size and LFS sha256, then renamed. A failure or cancellation keeps the
// partial file; a corrupt one is removed.
func (c *Client) get(ctx context.Context, ref Ref, f File, target string, p *Progress, report func(Progress)) error {
	fail := func(err error) error {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return &Error{Ref: ref, Err: err, Msg: f.Path}
	}
	part := partial(target)
	if err := os.MkdirAll(filepath.Dir(part), 0o755); err != nil {
		return fail(err)
	}
	fh, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fail(err)
	}
	defer fh.Close()
	h := sha256.New()
	off, err := resumeFrom(fh, f.Size, h)
	if err != nil {
		return fail(err)
	}
	p.Bytes = off
	report(*p)
	if f.Size == 0 || off < f.Size {
		if err := c.getBody(ctx, ref, f, p.URL, fh, h, p, report); err != nil {
			if _, ok := err.(*Error); ok {
				return err
			}
			return fail(err)
		}
	}
	st, err := fh.Stat()
	if err != nil {
		return fail(err)
	}
	if f.Size > 0 && st.Size() != f.Size {
		os.Remove(part)
		return &Error{Ref: ref, Err: ErrCorrupt, Msg: fmt.Sprintf("%s: %d bytes, want %d", f.Path, st.Size(), f.Size)}
	}
	if sum := hex.EncodeToString(h.Sum(nil)); f.LFS && !strings.EqualFold(sum, f.OID) {
		os.Remove(part)
		return &Error{Ref: ref, Err: ErrCorrupt, Msg: fmt.Sprintf("%s: sha256 %s, want %s", f.Path, sum, f.OID)}
	}
	if err := fh.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(part, target); err != nil {
		return fail(err)
	}
	return nil
}

// resumeFrom is where a partial file goes on: its size, its bytes hashed
// into h; 0 (the file emptied) when it is longer than the file can be.
func resumeFrom(fh *os.File, size int64, h hash.Hash) (int64, error) {
	st, err := fh.Stat()
	if err != nil {
		return 0, err
	}
	off := st.Size()
	if size > 0 && off > size {
		return 0, fh.Truncate(0)
	}
	if _, err := io.Copy(h, io.NewSectionReader(fh, 0, off)); err != nil {
		return 0, err
	}
	return off, nil
}

// getBody GETs the file from the partial file's end: 206 appends; 200
// (the server ignored the Range) and 416 (the partial is no prefix of the
// file) start over.
func (c *Client) getBody(ctx context.Context, ref Ref, f File, u string, fh *os.File, h hash.Hash, p *Progress, report func(Progress)) error {
	for try := 0; ; try++ {
		off := p.Bytes
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		if off > 0 {
			req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-")
		}
		resp, err := c.do(req)
		if err != nil {
			return err
		}
		restart := resp.StatusCode == http.StatusOK && off > 0 || resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && off > 0 && try == 0
		switch {
		case resp.StatusCode == http.StatusPartialContent && off > 0:
			if start, ok := rangeStart(resp.Header.Get("Content-Range")); !ok || start != off {
				resp.Body.Close()
				return &Error{Ref: ref, Err: ErrHub, Msg: fmt.Sprintf("%s: asked bytes from %d, got Content-Range %q", f.Path, off, resp.Header.Get("Content-Range"))}
			}
		case restart:
			h.Reset()
			p.Bytes = 0
			if err := fh.Truncate(0); err != nil {
				resp.Body.Close()
				return err
			}
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				continue
			}
		case resp.StatusCode == http.StatusOK && off == 0:
		default:
			err := hubError(ref, resp)
			resp.Body.Close()
			if e, ok := err.(*Error); ok {
				e.Msg = f.Path + ": " + e.Msg
			}
			return err
		}
		if p.Total == 0 && resp.ContentLength >= 0 {
			p.Total = p.Bytes + resp.ContentLength
		}
		err = copyBody(fh, resp.Body, f.Size, h, p, report)
		resp.Body.Close()
		return err
	}
}

// copyBody appends body to fh (reading no more than one byte past size,
// when known), hashing and metering it.
func copyBody(fh *os.File, body io.Reader, size int64, h hash.Hash, p *Progress, report func(Progress)) error {
	if _, err := fh.Seek(p.Bytes, io.SeekStart); err != nil {
		return err
	}
	if size > 0 {
		body = io.LimitReader(body, size-p.Bytes+1)
	}
	m := &meter{p: p, report: report, at: p.Bytes, when: time.Now()}
	_, err := io.CopyBuffer(io.MultiWriter(fh, h, m), body, make([]byte, 256<<10))
	return err
}

// rangeStart reads the first byte of "bytes START-END/SIZE".
func rangeStart(cr string) (int64, bool) {
	s, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return 0, false
	}
	s, _, ok = strings.Cut(s, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// meter counts the bytes written through it into p and reports them
// every progressBytes or progressEvery.
type meter struct {
	p      *Progress
	report func(Progress)
	at     int64 // p.Bytes at the last report
	when   time.Time
}

func (m *meter) Write(b []byte) (int, error) {
	m.p.Bytes += int64(len(b))
	if now := time.Now(); m.p.Bytes-m.at >= progressBytes || now.Sub(m.when) >= progressEvery {
		m.report(*m.p)
		m.at, m.when = m.p.Bytes, now
	}
	return len(b), nil
}
