package webui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed dist
var dist embed.FS

// AssetPrefix is where the bundles and styles are served ("/webui/…").
const AssetPrefix = "/webui/"

// EventsPath is the cluster view's feed, relative to the server root.
const EventsPath = "/console/events"

// pages maps each page's path to its HTML file in dist.
var pages = map[string]string{"/": "index.html", "/console": "console.html"}

// IsPage reports whether p is one of the console's open paths: a page or
// an asset (the feed is not).
func IsPage(p string) bool {
	_, ok := pages[p]
	return ok || strings.HasPrefix(p, AssetPrefix)
}

// PagePaths are the pages' paths.
func PagePaths() []string { return []string{"/", "/console"} }

// Pages serves the pages and their assets (IsPage paths); anything else is
// a 404.
func Pages() http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded: cannot happen
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := pages[r.URL.Path]
		if !ok {
			rest, isAsset := strings.CutPrefix(r.URL.Path, AssetPrefix)
			if !isAsset || rest == "" || strings.HasSuffix(rest, ".html") {
				http.NotFound(w, r)
				return
			}
			name = path.Clean(rest)
		}
		b, err := fs.ReadFile(sub, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", contentType(name))
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		// Everything the pages load comes from this server; inline
		// scripts, frames and other origins are refused.
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("Referrer-Policy", "no-referrer")
		_, _ = w.Write(b)
	})
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".map":
		return "application/json"
	}
	return "application/octet-stream"
}
