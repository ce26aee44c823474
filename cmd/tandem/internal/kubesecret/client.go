package kubesecret

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ServiceAccountDir is where kubelet mounts a pod's service account
// credentials (token, ca.crt, namespace).
const ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Errors a request can wrap, from the API server's Status reason.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict") // AlreadyExists on create, a stale resourceVersion on update
)

// Secret is a core/v1 Secret: the fields tandem reads and writes.
type Secret struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   ObjectMeta        `json:"metadata"`
	Type       string            `json:"type,omitempty"`
	Data       map[string][]byte `json:"data,omitempty"` // base64 in JSON, as the API sends it
}

// ObjectMeta is the part of meta/v1 ObjectMeta a Secret carries here.
type ObjectMeta struct {
	Name            string            `json:"name"`
	Namespace       string            `json:"namespace,omitempty"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	Annotations     map[string]string `json:"annotations,omitempty"`
}

// StatusError is a request the API server refused, from its meta/v1 Status.
type StatusError struct {
	Code    int    // HTTP status
	Reason  string // e.g. NotFound, AlreadyExists, Conflict, Forbidden
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("kubernetes API: %d %s: %s", e.Code, e.Reason, e.Message)
}

// Is makes errors.Is(err, ErrNotFound) and errors.Is(err, ErrConflict) work.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Code == http.StatusNotFound
	case ErrConflict:
		return e.Code == http.StatusConflict
	}
	return false
}

// Client talks to one namespace of the API server as the pod's service
// account.
type Client struct {
	Namespace string
	base      string // https://host:port
	token     string
	hc        *http.Client
}

// InCluster builds a client from the service account credentials in dir
// (ServiceAccountDir in a pod) and the API server address in the
// environment.
func InCluster(dir string) (*Client, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("not in a Kubernetes pod: $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT are not set")
	}
	token, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		return nil, fmt.Errorf("service account token: %w", err)
	}
	ns, err := os.ReadFile(filepath.Join(dir, "namespace"))
	if err != nil {
		return nil, fmt.Errorf("service account namespace: %w", err)
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("service account CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("service account CA %s: no PEM certificate", filepath.Join(dir, "ca.crt"))
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	return &Client{
		Namespace: strings.TrimSpace(string(ns)),
		base:      "https://" + net.JoinHostPort(host, port),
		token:     strings.TrimSpace(string(token)),
		hc:        &http.Client{Transport: tr, Timeout: 30 * time.Second},
	}, nil
}

// Get reads the Secret name.
func (c *Client) Get(ctx context.Context, name string) (*Secret, error) {
	return c.do(ctx, http.MethodGet, c.path(name), nil)
}

// Create creates s in the client's namespace.
func (c *Client) Create(ctx context.Context, s *Secret) (*Secret, error) {
	return c.do(ctx, http.MethodPost, c.path(""), s)
}

// Update replaces s; s.Metadata.ResourceVersion, when set, makes it
// conditional on the Secret not having changed since it was read.
func (c *Client) Update(ctx context.Context, s *Secret) (*Secret, error) {
	return c.do(ctx, http.MethodPut, c.path(s.Metadata.Name), s)
}

func (c *Client) path(name string) string {
	p := "/api/v1/namespaces/" + url.PathEscape(c.Namespace) + "/secrets"
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	return p
}

func (c *Client) do(ctx context.Context, method, path string, body *Secret) (*Secret, error) {
	var rd io.Reader
	if body != nil {
		body.APIVersion, body.Kind = "v1", "Secret"
		body.Metadata.Namespace = c.Namespace
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("kubernetes API: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("kubernetes API: %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, statusError(resp.StatusCode, raw)
	}
	var out Secret
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("kubernetes API: %s %s: decoding the Secret: %w", method, path, err)
	}
	return &out, nil
}

// statusError decodes a meta/v1 Status body; a body that is not one (a
// proxy's error page) keeps the HTTP status and a short excerpt.
func statusError(code int, body []byte) error {
	var st struct {
		Kind    string `json:"kind"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &st) != nil || st.Kind != "Status" {
		msg := strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return &StatusError{Code: code, Reason: http.StatusText(code), Message: msg}
	}
	return &StatusError{Code: code, Reason: st.Reason, Message: st.Message}
}
