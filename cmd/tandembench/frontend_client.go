package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// feClient is the load generator's HTTP/1.1 client: one keep-alive
// connection per stream, written and read by the stream's own goroutine
// (http.Request.Write, http.ReadResponse). net/http's Transport would add
// two goroutines per connection (its read and write loops) and a hand-off
// through each for every request and every SSE chunk; on a machine whose
// cores the frontend and the engine share with the load generator, those
// hops would be counted as the frontend's.
type feClient struct {
	addr string // host:port
	mu   sync.Mutex
	idle map[int]*feConn // by stream
}

// feConn is one stream's connection.
type feConn struct {
	c  net.Conn
	br *bufio.Reader
}

func newFEClient(base string) *feClient {
	return &feClient{addr: strings.TrimPrefix(base, "http://"), idle: map[int]*feConn{}}
}

// take returns stream's idle connection, or dials one (reused false).
func (f *feClient) take(stream int) (cn *feConn, reused bool, err error) {
	f.mu.Lock()
	cn = f.idle[stream]
	delete(f.idle, stream)
	f.mu.Unlock()
	if cn != nil {
		return cn, true, nil
	}
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		return nil, false, err
	}
	return &feConn{c: c, br: bufio.NewReaderSize(c, 16<<10)}, false, nil
}

// put keeps a connection whose response was read to its end.
func (f *feClient) put(stream int, cn *feConn) {
	f.mu.Lock()
	f.idle[stream] = cn
	f.mu.Unlock()
}

// close closes every idle connection.
func (f *feClient) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, cn := range f.idle {
		cn.c.Close()
		delete(f.idle, k)
	}
}

// stream sends req on stream's connection and calls read with the
// response once its headers are in (ttfb after start). read must consume
// the body; the connection is kept only if it reached the body's end.
// Cancelling ctx closes the connection. A kept connection the server
// closed meanwhile (its idle timeout) fails before any response: then
// the request goes once more, on a new connection, as net/http's
// Transport does.
func (f *feClient) stream(ctx context.Context, stream int, req *http.Request, read func(resp *http.Response, start time.Time) error) error {
	for {
		cn, reused, err := f.take(stream)
		if err != nil {
			return err
		}
		stop := context.AfterFunc(ctx, func() { cn.c.Close() })
		answered, keep, err := roundTrip(cn, req, read)
		if !stop() {
			err = errors.Join(err, ctx.Err())
		}
		if err == nil {
			if keep {
				f.put(stream, cn)
			} else {
				cn.c.Close()
			}
			return nil
		}
		cn.c.Close()
		if answered || !reused || ctx.Err() != nil || req.GetBody == nil {
			return err
		}
		if req.Body, err = req.GetBody(); err != nil {
			return err
		}
	}
}

// roundTrip writes req on cn and reads its response. answered reports
// whether any of a response arrived; keep, whether cn may carry the
// next request (read to the end, and the server did not say close).
func roundTrip(cn *feConn, req *http.Request, read func(resp *http.Response, start time.Time) error) (answered, keep bool, err error) {
	start := time.Now()
	if err := req.Write(cn.c); err != nil {
		return false, false, err
	}
	if _, err := cn.br.Peek(1); err != nil {
		return false, false, err
	}
	resp, err := http.ReadResponse(cn.br, req)
	if err != nil {
		return true, false, err
	}
	defer resp.Body.Close()
	if err := read(resp, start); err != nil {
		return true, false, err
	}
	// The rest (the last chunk's terminator) must be read before the
	// connection carries the next request.
	if n, err := io.Copy(io.Discard, resp.Body); err != nil || n > 0 {
		return true, false, fmt.Errorf("response: %d bytes left unread (%v)", n, err)
	}
	return true, !resp.Close, nil
}

// newChatRequest is a POST of body to the frontend's chat completions.
func newChatRequest(base string, body []byte) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return req
}
