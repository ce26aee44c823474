package zmq

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const (
	// ipcProbeTimeout bounds the connect that tells a live ipc listener from a stale file.
	ipcProbeTimeout = 200 * time.Millisecond
	// ipcReleaseTimeout bounds how long Close waits for libzmq to close an ipc listener.
	ipcReleaseTimeout = 500 * time.Millisecond
)

// ipcPath returns the file system path of an ipc:// endpoint, and false for other
// transports, the abstract namespace (ipc://@name) and libzmq's ipc://* wildcard.
func ipcPath(endpoint string) (string, bool) {
	path, ok := strings.CutPrefix(endpoint, "ipc://")
	if !ok || path == "" || path == "*" || strings.HasPrefix(path, "@") {
		return "", false
	}
	return path, true
}

// prepareBind readies an ipc:// endpoint for a bind: it creates the parent directory and
// removes a stale socket file left by a process that died. libzmq would unlink the file
// itself, even when a live process still listens on it; we refuse that case with
// ErrAddrInUse instead of silently stealing the endpoint. Other endpoints are untouched.
func prepareBind(endpoint string) error {
	path, ok := ipcPath(endpoint)
	if !ok {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("zmq: bind %s: %w", endpoint, err)
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("zmq: bind %s: %w", endpoint, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("zmq: bind %s: %s exists and is not a socket", endpoint, path)
	}
	if nc, err := net.DialTimeout("unix", path, ipcProbeTimeout); err == nil {
		_ = nc.Close()
		return fmt.Errorf("%w: %s", ErrAddrInUse, endpoint)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("zmq: bind %s: remove stale socket: %w", endpoint, err)
	}
	return nil
}

// ipcFile is a socket file created by a bind, remembered so that Close can remove it.
type ipcFile struct {
	path string
	info fs.FileInfo // as seen right after the bind
}

// boundIPC returns the socket file an ipc:// bind created, if any.
func boundIPC(endpoint string) (ipcFile, bool) {
	path, ok := ipcPath(endpoint)
	if !ok {
		return ipcFile{}, false
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSocket == 0 {
		return ipcFile{}, false
	}
	return ipcFile{path: path, info: fi}, true
}

// release runs after the bound socket was closed. libzmq closes the listener
// asynchronously on its I/O thread and (in 4.3) leaves the file behind, so an immediate
// re-bind would find a live listener. release waits, for at most ipcReleaseTimeout,
// until connects are refused, then removes the file unless someone replaced it.
func (f ipcFile) release() {
	deadline := time.Now().Add(ipcReleaseTimeout)
	for time.Now().Before(deadline) {
		nc, err := net.DialTimeout("unix", f.path, ipcProbeTimeout)
		if err != nil {
			break
		}
		_ = nc.Close()
		time.Sleep(time.Millisecond)
	}
	if fi, err := os.Lstat(f.path); err == nil && os.SameFile(fi, f.info) {
		_ = os.Remove(f.path)
	}
}
