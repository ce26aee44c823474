package zmq

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// CURVE security (RFC 26, CurveZMQ): a bound socket is the CURVE server, known to its
// peers by its public key; a connecting socket is a CURVE client with a keypair of its
// own. The server admits only clients whose public key it was given: libzmq asks a ZAP
// handler (RFC 27) for every handshake, and this package runs that handler itself (see
// zap.go). Keys travel as 40-character Z85 text, the form libzmq and `tandem keygen` use.

// ErrBadKey is returned for a CURVE key that is not 40 characters of Z85 text.
var ErrBadKey = errors.New("zmq: bad CURVE key")

// curveKeyLen is the size of a CURVE key in bytes; its Z85 text is 40 characters.
const curveKeyLen = 32 // bytes

// curveConfig is the CURVE part of a config; nil means plain (NULL mechanism) sockets.
type curveConfig struct {
	server    bool
	secretKey string // Z85; this socket's own secret key
	publicKey string // Z85; client only: this socket's public key
	serverKey string // Z85; client only: the server's public key
	// allowed holds the authorised clients' public keys (server only), decoded to
	// 32 raw bytes each, as the ZAP request carries them.
	allowed map[string]bool
}

// WithCurveServer makes a bound socket (BindRouter, BindPub) a CURVE server with the
// given Z85 secret key. Only clients presenting one of the allowedClients public keys
// (Z85) get through the handshake; every other peer, including one that does not speak
// CURVE, is refused, counted by Refused and logged at warn level (at most once a second).
func WithCurveServer(secretKey string, allowedClients []string) Option {
	return func(c *config) {
		c.curve = &curveConfig{server: true, secretKey: secretKey, allowed: map[string]bool{}}
		for _, k := range allowedClients {
			raw, err := z85Decode(k)
			if err != nil {
				c.curveErr = fmt.Errorf("WithCurveServer: allowed client key %q: %w", k, err)
				return
			}
			c.curve.allowed[string(raw)] = true
		}
	}
}

// WithCurveClient makes a connecting socket (DialDealer, DialSub) a CURVE client: it
// talks only to the server whose Z85 public key is serverPublicKey, and identifies
// itself with its own keypair.
func WithCurveClient(serverPublicKey, publicKey, secretKey string) Option {
	return func(c *config) {
		c.curve = &curveConfig{serverKey: serverPublicKey, publicKey: publicKey, secretKey: secretKey}
	}
}

// validate checks the keys and that the role fits the socket kind.
func (cc *curveConfig) validate(k kind) error {
	binds := k == kindRouter || k == kindPub || k == kindPull
	switch {
	case cc.server && !binds:
		return fmt.Errorf("zmq: WithCurveServer on a %v socket: only bound sockets (ROUTER, PUB, PULL) are CURVE servers", k)
	case !cc.server && binds:
		return fmt.Errorf("zmq: WithCurveClient on a %v socket: only connecting sockets (DEALER, SUB, PUSH) are CURVE clients", k)
	case cc.server && len(cc.allowed) == 0:
		return fmt.Errorf("zmq: WithCurveServer: no allowed client keys: nobody could connect")
	}
	keys := []struct{ name, z85 string }{{"secret key", cc.secretKey}}
	if !cc.server {
		keys = append(keys, struct{ name, z85 string }{"public key", cc.publicKey},
			struct{ name, z85 string }{"server public key", cc.serverKey})
	}
	for _, key := range keys {
		if _, err := z85Decode(key.z85); err != nil {
			return fmt.Errorf("zmq: CURVE %s: %w", key.name, err)
		}
	}
	return nil
}

// CheckKey reports whether key is a well-formed Z85 CURVE key (40 characters that
// decode to 32 bytes). It says nothing about whether the key is public or secret.
func CheckKey(key string) error {
	_, err := z85Decode(key)
	return err
}

// z85Alphabet is the Z85 encoding's 85 characters (ZeroMQ RFC 32), in value order.
const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

// z85Decode decodes a 40-character Z85 key into its 32 bytes.
func z85Decode(s string) ([]byte, error) {
	if len(s) != curveKeyLen*5/4 {
		return nil, fmt.Errorf("%w: %d characters, want 40", ErrBadKey, len(s))
	}
	out := make([]byte, 0, curveKeyLen)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for _, ch := range []byte(s[i : i+5]) {
			d := strings.IndexByte(z85Alphabet, ch)
			if d < 0 {
				return nil, fmt.Errorf("%w: character %q is not Z85", ErrBadKey, ch)
			}
			v = v*85 + uint64(d)
		}
		if v > 0xffffffff {
			return nil, fmt.Errorf("%w: group %q overflows 32 bits", ErrBadKey, s[i:i+5])
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out, nil
}

// z85Encode encodes a 32-byte key (any length divisible by 4) as Z85 text.
func z85Encode(b []byte) string {
	var sb strings.Builder
	for i := 0; i+4 <= len(b); i += 4 {
		v := uint32(b[i])<<24 | uint32(b[i+1])<<16 | uint32(b[i+2])<<8 | uint32(b[i+3])
		var group [5]byte
		for j := 4; j >= 0; j-- {
			group[j] = z85Alphabet[v%85]
			v /= 85
		}
		sb.Write(group[:])
	}
	return sb.String()
}

// refusalLog rate-limits the warnings about one CURVE socket's failed handshakes.
type refusalLog struct {
	mu sync.Mutex // guards the fields below
	// log is the socket's logger with the endpoint it binds; set before the socket can
	// see a peer, and again once the bound endpoint is resolved.
	log           *slog.Logger
	last          time.Time // when the last warning was logged
	numSuppressed uint64    // refusals not logged since then
}

func (r *refusalLog) setLog(l *slog.Logger) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = l
}
