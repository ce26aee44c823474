package webui

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestPages(t *testing.T) {
	h := Pages()
	tests := []struct {
		path, wantType string
		want           int
		contains       string
	}{
		{"/", "text/html; charset=utf-8", 200, `src="webui/chat.js"`},
		{"/console", "text/html; charset=utf-8", 200, `src="webui/console.js"`},
		{"/webui/chat.js", "text/javascript; charset=utf-8", 200, "v1/chat/completions"},
		{"/webui/console.js", "text/javascript; charset=utf-8", 200, "console/events"},
		{"/webui/style.css", "text/css; charset=utf-8", 200, ":root"},
		{"/webui/console.html", "", 404, ""},
		{"/webui/", "", 404, ""},
		{"/webui/../doc.go", "", 404, ""},
		{"/other", "", 404, ""},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d", w.Code, tc.want)
			}
			if tc.want != 200 {
				return
			}
			if ct := w.Header().Get("Content-Type"); ct != tc.wantType {
				t.Errorf("Content-Type %q, want %q", ct, tc.wantType)
			}
			if !strings.Contains(w.Body.String(), tc.contains) {
				t.Errorf("body lacks %q", tc.contains)
			}
			if w.Header().Get("Content-Security-Policy") == "" {
				t.Error("no Content-Security-Policy")
			}
		})
	}
}

// TestNoNetwork: the pages load nothing from another origin (they work
// offline, and the CSP would refuse it anyway): every src and href in the
// HTML is relative, and no bundle names a URL it could load.
func TestNoNetwork(t *testing.T) {
	attr := regexp.MustCompile(`(?:src|href)="([^"]*)"`)
	err := fs.WalkDir(dist, "dist", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(dist, path)
		if err != nil {
			return err
		}
		s := string(b)
		if strings.HasSuffix(path, ".html") {
			for _, m := range attr.FindAllStringSubmatch(s, -1) {
				if u := m[1]; strings.Contains(u, "//") || strings.HasPrefix(u, "/") {
					t.Errorf("%s loads %q: not a relative URL", path, u)
				}
			}
		}
		for _, bad := range []string{"@import", "url(http", "importScripts", "cdn."} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", path, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
