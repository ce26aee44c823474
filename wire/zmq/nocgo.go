//go:build !cgo

package zmq

// Without cgo there is no libzmq: the package still builds, so a CGO_ENABLED=0 build of
// the whole module succeeds, but every constructor fails with ErrNoCgo.

// Version returns "" in a build without cgo.
func Version() string { return "" }

// BindRouter fails with ErrNoCgo in a build without cgo.
func BindRouter(endpoint string, opts ...Option) (*Conn, error) { return nil, ErrNoCgo }

// DialDealer fails with ErrNoCgo in a build without cgo.
func DialDealer(endpoint string, opts ...Option) (*Conn, error) { return nil, ErrNoCgo }

// BindPub fails with ErrNoCgo in a build without cgo.
func BindPub(endpoint string, opts ...Option) (*Conn, error) { return nil, ErrNoCgo }

// DialSub fails with ErrNoCgo in a build without cgo.
func DialSub(endpoint string, topics []string, opts ...Option) (*Conn, error) {
	return nil, ErrNoCgo
}

// BindPull fails with ErrNoCgo in a build without cgo.
func BindPull(endpoint string, opts ...Option) (*Conn, error) { return nil, ErrNoCgo }

// DialPush fails with ErrNoCgo in a build without cgo.
func DialPush(endpoint string, opts ...Option) (*Conn, error) { return nil, ErrNoCgo }

// HasCurve reports false in a build without cgo.
func HasCurve() bool { return false }

// NewCurveKeypair fails with ErrNoCgo in a build without cgo.
func NewCurveKeypair() (publicKey, secretKey string, err error) { return "", "", ErrNoCgo }

// CurvePublic fails with ErrNoCgo in a build without cgo.
func CurvePublic(secretKey string) (string, error) { return "", ErrNoCgo }
