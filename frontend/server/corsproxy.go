package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// llama-server's CORS proxy (--webui-mcp-proxy): GET and POST
// /cors-proxy?url=TARGET forward the request to an http(s) TARGET and
// return its answer, so that a browser page (llama-server's web UI
// reaching an MCP server) can call a server that sends no CORS headers.
// Only the headers the caller names as x-llama-server-proxy-header-NAME
// go on, as NAME: never its cookies, API key or Authorization. Without the
// flag the route answers 403. Behind the API key like any other route.

// proxyHeaderPrefix marks the headers the proxy forwards.
const proxyHeaderPrefix = "X-Llama-Server-Proxy-Header-"

// proxyTimeout bounds one proxied exchange, as llama-server's 10 minutes.
const proxyTimeout = 10 * time.Minute

var proxyClient = &http.Client{
	Timeout: proxyTimeout,
	// A redirect is the page's to follow: it sees it as the target sent it.
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// hopHeaders are the answer's headers the proxy does not copy: one hop's
// own (RFC 9110 §7.6.1), and CORS headers, which this server sets itself.
var hopHeaders = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Content-Length": true}

func (s *Server) corsProxy(c echo.Context) error {
	if !s.cfg.CORSProxy {
		return writeError(c, &openai.Error{Status: http.StatusForbidden, Type: "forbidden_error",
			Message: "the CORS proxy is off: start the server with --webui-mcp-proxy"})
	}
	target, err := proxyTarget(c.QueryParam("url"))
	if err != nil {
		return writeError(c, openai.BadRequest("url", "%v", err))
	}
	r := c.Request()
	var body io.Reader
	if r.Method == http.MethodPost {
		body = r.Body
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, target.String(), body)
	if err != nil {
		return writeError(c, openai.BadRequest("url", "%v", err))
	}
	for name, vals := range r.Header {
		if rest, ok := strings.CutPrefix(http.CanonicalHeaderKey(name), proxyHeaderPrefix); ok && rest != "" {
			out.Header[http.CanonicalHeaderKey(rest)] = vals
		}
	}
	if out.Header.Get("User-Agent") == "" {
		out.Header.Set("User-Agent", "tandem/"+s.cfg.Version)
	}
	s.log.Info("proxying", "method", r.Method, "target", target.Redacted())
	resp, err := proxyClient.Do(out)
	if err != nil {
		return writeError(c, &openai.Error{Status: http.StatusBadGateway, Type: "bad_gateway_error",
			Message: fmt.Sprintf("CORS proxy: %s %s: %v", r.Method, target.Redacted(), errors.Unwrap(err))})
	}
	defer resp.Body.Close()
	h := c.Response().Header()
	for name, vals := range resp.Header {
		if !hopHeaders[name] && !strings.HasPrefix(name, "Access-Control-") {
			h[name] = vals
		}
	}
	c.Response().WriteHeader(resp.StatusCode)
	buf := make([]byte, 32<<10)
	for { // flush as it comes: MCP answers may be event streams
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := c.Response().Write(buf[:n]); werr != nil {
				return nil
			}
			c.Response().Flush()
		}
		if rerr != nil {
			return nil
		}
	}
}

// proxyTarget checks the url parameter: an absolute http or https URL
// with a host and no password, as llama-server requires.
func proxyTarget(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return nil, errors.New(`"url" is required: the target to forward to`)
	case err != nil:
		return nil, fmt.Errorf("invalid target URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("unsupported URL scheme in target URL: %q", u.Scheme)
	case u.Hostname() == "":
		return nil, errors.New("invalid target URL: missing host")
	}
	if _, has := u.User.Password(); has {
		return nil, errors.New("authentication in target URL is not supported")
	}
	if u.Path == "" {
		u.Path = "/"
	}
	return u, nil
}
