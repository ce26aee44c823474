package server

import (
	"net"
	"strconv"
	"sync"
	"time"
)

// LimitConnections caps the connections open at once on l at max: one
// beyond it is answered 503 (OpenAI's error shape, Retry-After: 1) and
// closed, so a client opening connections without end costs a bounded
// number of goroutines and buffers. max ≤ 0 returns l unchanged.
func LimitConnections(l net.Listener, max int) net.Listener {
	if max <= 0 {
		return l
	}
	return &limitListener{Listener: l, max: max}
}

type limitListener struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open int
}

// overloaded is the whole answer to a connection over the cap.
var overloaded = func() []byte {
	body := `{"error":{"message":"too many open connections to this server (--max-connections)","type":"server_error","param":null,"code":null}}`
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		full := l.open >= l.max
		if !full {
			l.open++
		}
		l.mu.Unlock()
		if !full {
			return &countedConn{Conn: c, l: l}, nil
		}
		go func() { // never block Accept on a slow client
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, _ = c.Write(overloaded)
			_ = c.Close()
		}()
	}
}

type countedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}
