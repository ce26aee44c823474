package server_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/frontend/server"
)

// TestLimitConnections: with a cap of 2, a third connection gets a 503
// in OpenAI's shape; once one closes, a new one is served again.
func TestLimitConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })}
	go srv.Serve(server.LimitConnections(ln, 2))
	defer srv.Close()
	addr := ln.Addr().String()
	get := func(c net.Conn) string {
		t.Helper()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		return fmt.Sprintf("%d %s", resp.StatusCode, b.String())
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := dial(), dial()
	if got := get(a); got != "200 ok" {
		t.Fatalf("first: %s", got)
	}
	if got := get(b); got != "200 ok" {
		t.Fatalf("second: %s", got)
	}
	c := dial()
	if got := get(c); !strings.HasPrefix(got, "503 ") || !strings.Contains(got, `"type":"server_error"`) {
		t.Fatalf("over the cap: %s", got)
	}
	c.Close()
	a.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := dial()
		got := get(d)
		d.Close()
		if got == "200 ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a close: still %s", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Close()
}
