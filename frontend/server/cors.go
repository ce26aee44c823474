package server

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// CORS is the cross-origin policy browsers are told (vLLM's
// --allowed-origins, --allow-credentials, --allowed-methods,
// --allowed-headers; llama-server's --cors-origins). The zero value is
// the default: every origin, reflected, with credentials, as
// llama-server answers.
type CORS struct {
	// Origins are the allowed origins: "*" is every origin, "localhost"
	// every loopback one (localhost, 127.0.0.1, [::1], any port and
	// scheme), anything else an exact origin. None is every origin, or
	// only "localhost" while tools are on (Config.Tools: built-in or MCP
	// servers' ones), as llama-server's --tools and --mcp-servers-*
	// narrow its default.
	Origins []string
	// NoCredentials leaves out Access-Control-Allow-Credentials, and then
	// every origin is answered "*" rather than reflected (vLLM's default,
	// --allow-credentials=false).
	NoCredentials bool
	// Methods are the allowed methods; "*" or none is every method
	// Tandem serves.
	Methods []string
	// Headers are the allowed request headers; "*" or none is whatever
	// the preflight asks for.
	Headers []string
}

// corsMethods are the methods Tandem's routes take.
const corsMethods = "GET, POST, DELETE, OPTIONS"

// corsAnswer is what the policy answers a request from origin: the
// response headers to set (nil: none, the origin is not allowed), and
// for a preflight (reqMethod set) the allowed methods and headers too.
// reqHeaders is the preflight's Access-Control-Request-Headers.
func (p CORS) corsAnswer(origin, reqMethod, reqHeaders string) http.Header {
	if origin == "" || !p.allows(origin) {
		return nil
	}
	h := http.Header{}
	switch {
	case !p.NoCredentials:
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
	case p.every():
		h.Set("Access-Control-Allow-Origin", "*")
	default:
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
	}
	if reqMethod == "" {
		return h
	}
	methods := corsMethods
	if len(p.Methods) > 0 && !slices.Contains(p.Methods, "*") {
		methods = strings.Join(p.Methods, ", ")
	}
	h.Set("Access-Control-Allow-Methods", methods)
	switch {
	case len(p.Headers) > 0 && !slices.Contains(p.Headers, "*"):
		h.Set("Access-Control-Allow-Headers", strings.Join(p.Headers, ", "))
	case reqHeaders != "":
		// The headers asked for, as Starlette (vLLM) answers "*": a
		// literal "*" does not cover Authorization in browsers (Fetch).
		h.Set("Access-Control-Allow-Headers", reqHeaders)
	default:
		h.Set("Access-Control-Allow-Headers", "*")
	}
	h.Set("Access-Control-Max-Age", "600")
	return h
}

// every reports whether every origin is allowed.
func (p CORS) every() bool { return len(p.Origins) == 0 || slices.Contains(p.Origins, "*") }

// allows reports whether the policy allows origin.
func (p CORS) allows(origin string) bool {
	if p.every() {
		return true
	}
	for _, o := range p.Origins {
		if o == origin || o == "localhost" && isLoopbackOrigin(origin) {
			return true
		}
	}
	return false
}

// isLoopbackOrigin reports whether origin (scheme://host[:port]) names
// this machine: localhost, 127.0.0.0/8 or ::1.
func isLoopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Path != "" && u.Path != "/" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// cors answers preflights (OPTIONS with Access-Control-Request-Method:
// 200 and the policy's headers, or 200 without them for an origin not
// allowed, which the browser then refuses) and adds the allowed-origin
// headers to every other cross-origin request.
func (s *Server) cors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		origin := r.Header.Get("Origin")
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		method := ""
		if preflight {
			method = r.Header.Get("Access-Control-Request-Method")
		}
		for k, vs := range s.corsPolicy().corsAnswer(origin, method, r.Header.Get("Access-Control-Request-Headers")) {
			for _, v := range vs {
				c.Response().Header().Add(k, v)
			}
		}
		if preflight {
			return c.NoContent(http.StatusOK)
		}
		return next(c)
	}
}

// corsPolicy is the policy in force: Config.CORS, with no origins read
// as only localhost while tools are on, built-in or MCP servers' (a web
// page elsewhere must not run commands on this machine through a
// browser).
func (s *Server) corsPolicy() CORS {
	p := s.cfg.CORS
	if s.cfg.Tools != nil && len(p.Origins) == 0 {
		p.Origins = []string{"localhost"}
	}
	return p
}
