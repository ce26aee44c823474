package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tandem-llm/tandem/wire/zmq"
)

// Engine sockets and CURVE (issue 9). An engine core's ROUTER and PUB sockets accept
// anyone who can reach them: whoever connects can submit requests, read outputs and
// watch KV events. On ipc:// and loopback that is the machine's own users; anywhere
// else an engine requires ZeroMQ CURVE: it encrypts every connection and admits only
// frontends whose public key it was given. --insecure-engine-socket opts out, loudly.
//
//	tandem keygen --out keys --name engine
//	tandem keygen --out keys --name frontend
//	tandem engine --listen tcp://0.0.0.0:5555 --curve-secret-key-file keys/engine.key \
//	    --curve-authorized-keys keys/frontend.pub
//	tandem frontend --engines tcp://engine-0:5555 --engine-public-key keys/engine.pub \
//	    --curve-secret-key-file keys/frontend.key

// Environment variables that stand in for the CURVE flags: the *_FILE ones are the
// flags' defaults; the others hold a key itself, used when no file is given (a
// Kubernetes secret exposed as an environment variable).
const (
	envSecretKeyFile       = "TANDEM_CURVE_SECRET_KEY_FILE"
	envSecretKey           = "TANDEM_CURVE_SECRET_KEY"
	envAuthorizedKeys      = "TANDEM_CURVE_AUTHORIZED_KEYS"
	envEnginePublicKeyFile = "TANDEM_ENGINE_PUBLIC_KEY_FILE"
	envEnginePublicKey     = "TANDEM_ENGINE_PUBLIC_KEY"
)

// errInsecureBind is returned for an engine socket reachable from other hosts without
// CURVE keys or --insecure-engine-socket.
var errInsecureBind = errors.New("engine socket reachable from other hosts without CURVE")

// curveFlags are the CURVE flags of `tandem engine` (server side) and `tandem frontend`
// (client side).
type curveFlags struct {
	secretKeyFile   string // this process's Z85 secret key, in a file
	authorizedKeys  string // engine: a file of allowed frontend public keys, or a directory of *.pub files
	enginePublicKey string // frontend: the engines' Z85 public key, in a file
	insecure        bool   // engine: --insecure-engine-socket
}

// registerCurveServerFlags registers an engine's CURVE flags.
func registerCurveServerFlags(fs *flag.FlagSet, c *curveFlags) {
	fs.StringVar(&c.secretKeyFile, "curve-secret-key-file", os.Getenv(envSecretKeyFile),
		"this engine's CURVE secret key (Z85, from `tandem keygen`; default $"+envSecretKeyFile+
			", or the key itself in $"+envSecretKey+"); with --curve-authorized-keys, the engine's sockets require CURVE")
	fs.StringVar(&c.authorizedKeys, "curve-authorized-keys", os.Getenv(envAuthorizedKeys),
		"frontends allowed to connect: a file of Z85 public keys, one a line, or a directory of *.pub files (default $"+
			envAuthorizedKeys+")")
	fs.BoolVar(&c.insecure, "insecure-engine-socket", false,
		"allow binding --listen/--events to a non-loopback address without CURVE: anyone who reaches it can submit requests and read outputs")
}

// registerCurveClientFlags registers a frontend's CURVE flags.
func registerCurveClientFlags(fs *flag.FlagSet, c *curveFlags) {
	fs.StringVar(&c.secretKeyFile, "curve-secret-key-file", os.Getenv(envSecretKeyFile),
		"this frontend's CURVE secret key (Z85, from `tandem keygen`; default $"+envSecretKeyFile+
			", or the key itself in $"+envSecretKey+")")
	fs.StringVar(&c.enginePublicKey, "engine-public-key", os.Getenv(envEnginePublicKeyFile),
		"the engines' CURVE public key file (default $"+envEnginePublicKeyFile+", or the key itself in $"+
			envEnginePublicKey+"); set, the frontend talks CURVE to every engine")
}

// serverOptions returns the socket options for an engine socket bound to endpoint:
// CURVE when keys are configured, nothing on ipc:// or loopback without keys, and an
// error (errInsecureBind) for any other address without keys unless
// --insecure-engine-socket says so.
func (c *curveFlags) serverOptions(endpoint string, log *slog.Logger) ([]zmq.Option, error) {
	secret, err := c.secretKey(log)
	if err != nil {
		return nil, err
	}
	switch {
	case secret != "" && c.authorizedKeys == "":
		return nil, fmt.Errorf("engine: a CURVE secret key needs --curve-authorized-keys: the frontends allowed to connect")
	case secret == "" && c.authorizedKeys != "":
		return nil, fmt.Errorf("engine: --curve-authorized-keys needs the engine's own key: --curve-secret-key-file or $%s", envSecretKey)
	case secret != "" && c.insecure:
		return nil, fmt.Errorf("engine: --insecure-engine-socket contradicts the CURVE keys given")
	case secret != "":
		allowed, err := readAuthorizedKeys(c.authorizedKeys)
		if err != nil {
			return nil, err
		}
		log.Info("engine socket requires CURVE", "endpoint", endpoint, "authorized_keys", len(allowed))
		return []zmq.Option{zmq.WithCurveServer(secret, allowed), zmq.WithLogger(log)}, nil
	case localEndpoint(endpoint):
		return nil, nil
	case c.insecure:
		log.Warn("engine socket bound without CURVE (--insecure-engine-socket): anyone who reaches it can submit requests and read outputs",
			"endpoint", endpoint)
		return nil, nil
	}
	return nil, fmt.Errorf("engine: %w: %s; create keys with `tandem keygen` and give --curve-secret-key-file and "+
		"--curve-authorized-keys, bind ipc:// or 127.0.0.1, or pass --insecure-engine-socket", errInsecureBind, endpoint)
}

// clientOptions returns the options for a frontend's sockets to the engines: CURVE
// when the engines' public key is configured. Without it, dialling an engine outside
// this host is allowed (the engine decides) but logged.
func (c *curveFlags) clientOptions(endpoints []string, log *slog.Logger) ([]zmq.Option, error) {
	secret, err := c.secretKey(log)
	if err != nil {
		return nil, err
	}
	serverKey := os.Getenv(envEnginePublicKey)
	if c.enginePublicKey != "" {
		if serverKey, err = readKeyFile(c.enginePublicKey); err != nil {
			return nil, fmt.Errorf("frontend: --engine-public-key: %w", err)
		}
	}
	switch {
	case serverKey == "" && secret == "":
		for _, ep := range endpoints {
			if !localEndpoint(ep) {
				log.Warn("talking to engines without CURVE: traffic is neither encrypted nor authenticated", "endpoint", ep)
				break
			}
		}
		return nil, nil
	case serverKey == "":
		return nil, fmt.Errorf("frontend: a CURVE secret key needs the engines' public key: --engine-public-key or $%s", envEnginePublicKey)
	case secret == "":
		return nil, fmt.Errorf("frontend: --engine-public-key needs the frontend's own key: --curve-secret-key-file or $%s", envSecretKey)
	}
	if err := zmq.CheckKey(serverKey); err != nil {
		return nil, fmt.Errorf("frontend: engine public key: %w", err)
	}
	public, err := zmq.CurvePublic(secret)
	if err != nil {
		return nil, fmt.Errorf("frontend: %w", err)
	}
	log.Info("talking CURVE to the engines", "public_key", public)
	return []zmq.Option{zmq.WithCurveClient(serverKey, public, secret)}, nil
}

// secretKey reads --curve-secret-key-file, else $TANDEM_CURVE_SECRET_KEY; "" if
// neither is set. A key file that every user can read is reported, not refused
// (Kubernetes mounts Secrets 0644 unless told otherwise). Group read is not: with a
// pod's fsGroup, kubelet makes every Secret file group-readable (0440 at least).
func (c *curveFlags) secretKey(log *slog.Logger) (string, error) {
	if c.secretKeyFile == "" {
		key := strings.TrimSpace(os.Getenv(envSecretKey))
		if key == "" {
			return "", nil
		}
		if err := zmq.CheckKey(key); err != nil {
			return "", fmt.Errorf("$%s: %w", envSecretKey, err)
		}
		return key, nil
	}
	key, err := readKeyFile(c.secretKeyFile)
	if err != nil {
		return "", fmt.Errorf("--curve-secret-key-file: %w", err)
	}
	if fi, err := os.Stat(c.secretKeyFile); err == nil && fi.Mode().Perm()&0o007 != 0 {
		log.Warn("CURVE secret key file is readable by every user", "path", c.secretKeyFile, "mode", fi.Mode().Perm())
	}
	return key, nil
}

// readKeyFile reads a file holding one Z85 key; blank lines and lines starting with #
// are ignored.
func readKeyFile(path string) (string, error) {
	keys, err := readKeys(path)
	if err != nil {
		return "", err
	}
	if len(keys) != 1 {
		return "", fmt.Errorf("%s: %d keys, want 1", path, len(keys))
	}
	return keys[0], nil
}

// readKeys reads the Z85 keys in a file, one a line, skipping blank lines and
// # comments.
func readKeys(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseKeys(path, b)
}

// parseKeys reads the Z85 keys in text (from origin, for errors).
func parseKeys(origin string, text []byte) ([]string, error) {
	var keys []string
	for i, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := zmq.CheckKey(line); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", origin, i+1, err)
		}
		keys = append(keys, line)
	}
	return keys, nil
}

// readAuthorizedKeys reads the allowed client public keys: every key in a file, or in
// every *.pub file of a directory. It fails rather than return no key.
func readAuthorizedKeys(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("--curve-authorized-keys: %w", err)
	}
	files := []string{path}
	if fi.IsDir() {
		if files, err = filepath.Glob(filepath.Join(path, "*.pub")); err != nil {
			return nil, fmt.Errorf("--curve-authorized-keys: %w", err)
		}
		sort.Strings(files)
	}
	var keys []string
	for _, f := range files {
		k, err := readKeys(f)
		if err != nil {
			return nil, fmt.Errorf("--curve-authorized-keys: %w", err)
		}
		keys = append(keys, k...)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("--curve-authorized-keys %s: no keys (a directory needs *.pub files): %w", path, fs.ErrNotExist)
	}
	return keys, nil
}

// localEndpoint reports whether a ZeroMQ endpoint is reachable only from this host:
// ipc://, inproc://, or tcp:// on a loopback address or "localhost". Wildcards,
// interface names and host names other than localhost are not.
func localEndpoint(endpoint string) bool {
	transport, addr, ok := strings.Cut(endpoint, "://")
	if !ok {
		return false
	}
	switch transport {
	case "ipc", "inproc":
		return true
	case "tcp":
	default:
		return false
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
