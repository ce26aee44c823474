package session_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/session"
)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestResolve(t *testing.T) {
	long256 := strings.Repeat("a", 256)
	long257 := strings.Repeat("a", 257)
	tests := []struct {
		name    string
		body    string
		h       http.Header
		xargs   map[string]any
		wantID  string
		wantSrc session.Source
		wantErr bool
	}{
		{name: "body and header: body wins", body: "b1", h: hdr("X-Session-ID", "h1"), wantID: "b1", wantSrc: session.SourceBody},
		{name: "body, header and xargs: body wins", body: "b1", h: hdr("X-Session-ID", "h1"), xargs: map[string]any{"session_id": "x1"}, wantID: "b1", wantSrc: session.SourceBody},
		{name: "header only", h: hdr("X-Session-ID", "h1"), wantID: "h1", wantSrc: session.SourceHeader},
		{name: "header beats xargs", h: hdr("X-Session-ID", "h1"), xargs: map[string]any{"session_id": "x1"}, wantID: "h1", wantSrc: session.SourceHeader},
		{name: "xargs only", xargs: map[string]any{"session_id": "x1"}, wantID: "x1", wantSrc: session.SourceXArgs},
		{name: "empty body is absent", body: "", h: hdr("X-Session-ID", "h1"), wantID: "h1", wantSrc: session.SourceHeader},
		{name: "empty header is absent", h: hdr("X-Session-ID", ""), xargs: map[string]any{"session_id": "x1"}, wantID: "x1", wantSrc: session.SourceXArgs},
		{name: "nothing", wantSrc: session.SourceNone},
		{name: "nil header and xargs", h: nil, xargs: nil, wantSrc: session.SourceNone},
		{name: "xargs int", xargs: map[string]any{"session_id": 42}, wantSrc: session.SourceNone},
		{name: "xargs float", xargs: map[string]any{"session_id": 42.0}, wantSrc: session.SourceNone},
		{name: "xargs bool", xargs: map[string]any{"session_id": true}, wantSrc: session.SourceNone},
		{name: "xargs nil", xargs: map[string]any{"session_id": nil}, wantSrc: session.SourceNone},
		{name: "xargs empty string", xargs: map[string]any{"session_id": ""}, wantSrc: session.SourceNone},
		{name: "xargs other key", xargs: map[string]any{"conversation_id": "c"}, wantSrc: session.SourceNone},
		{name: "X-Correlation-ID ignored", h: hdr("X-Correlation-ID", "c1"), wantSrc: session.SourceNone},
		{name: "X-Correlation-ID ignored with xargs", h: hdr("X-Correlation-ID", "c1"), xargs: map[string]any{"session_id": "x1"}, wantID: "x1", wantSrc: session.SourceXArgs},
		{name: "header lowercase via Add", h: hdr("x-session-id", "h1"), wantID: "h1", wantSrc: session.SourceHeader},
		{name: "header uppercase via Add", h: hdr("X-SESSION-ID", "h1"), wantID: "h1", wantSrc: session.SourceHeader},
		{name: "raw lowercase map key", h: http.Header{"x-session-id": {"h1"}}, wantID: "h1", wantSrc: session.SourceHeader},
		{name: "raw uppercase map key", h: http.Header{"X-SESSION-ID": {"h1"}}, wantID: "h1", wantSrc: session.SourceHeader},
		{name: "raw keys: canonical first", h: http.Header{"x-session-id": {"raw"}, "X-Session-Id": {"canon"}}, wantID: "canon", wantSrc: session.SourceHeader},
		{name: "raw keys: empty canonical falls to raw", h: http.Header{"x-session-id": {"raw"}, "X-Session-Id": {""}}, wantID: "raw", wantSrc: session.SourceHeader},
		{name: "multiple header values: first", h: hdr("X-Session-ID", "h1", "X-Session-ID", "h2"), wantID: "h1", wantSrc: session.SourceHeader},
		{name: "256 bytes ok", body: long256, wantID: long256, wantSrc: session.SourceBody},
		{name: "257 bytes rejected", body: long257, wantSrc: session.SourceBody, wantErr: true},
		{name: "257 bytes header rejected", h: hdr("X-Session-ID", long257), wantSrc: session.SourceHeader, wantErr: true},
		{name: "257 bytes xargs rejected", xargs: map[string]any{"session_id": long257}, wantSrc: session.SourceXArgs, wantErr: true},
		{name: "multi-byte UTF-8 ok", body: "会话-é-🙂", wantID: "会话-é-🙂", wantSrc: session.SourceBody},
		{name: "multi-byte at 256 bytes ok", body: strings.Repeat("é", 128), wantID: strings.Repeat("é", 128), wantSrc: session.SourceBody},
		{name: "multi-byte over 256 bytes rejected", body: strings.Repeat("é", 128) + "a", wantSrc: session.SourceBody, wantErr: true},
		{name: "space ok", body: "chat 1", wantID: "chat 1", wantSrc: session.SourceBody},
		{name: "newline rejected", body: "a\nb", wantSrc: session.SourceBody, wantErr: true},
		{name: "tab rejected", body: "a\tb", wantSrc: session.SourceBody, wantErr: true},
		{name: "NUL rejected", body: "a\x00b", wantSrc: session.SourceBody, wantErr: true},
		{name: "DEL rejected", body: "a\x7fb", wantSrc: session.SourceBody, wantErr: true},
		{name: "C1 control rejected", body: "a\u0085b", wantSrc: session.SourceBody, wantErr: true},
		{name: "zero-width space rejected", body: "a\u200bb", wantSrc: session.SourceBody, wantErr: true},
		{name: "no-break space rejected", body: "a\u00a0b", wantSrc: session.SourceBody, wantErr: true},
		{name: "invalid UTF-8 rejected", body: "a\xffb", wantSrc: session.SourceBody, wantErr: true},
		{name: "truncated UTF-8 rejected", body: "a\xc3", wantSrc: session.SourceBody, wantErr: true},
		{name: "literal U+FFFD ok", body: "a\uFFFDb", wantID: "a\uFFFDb", wantSrc: session.SourceBody},
		{name: "valid body wins over garbage header", body: "b1", h: hdr("X-Session-ID", "bad\x00"), wantID: "b1", wantSrc: session.SourceBody},
		{name: "valid header wins over garbage xargs", h: hdr("X-Session-ID", "h1"), xargs: map[string]any{"session_id": "bad\x00"}, wantID: "h1", wantSrc: session.SourceHeader},
		{name: "invalid header rejected", h: hdr("X-Session-ID", "bad\x01"), wantSrc: session.SourceHeader, wantErr: true},
		{name: "invalid xargs rejected", xargs: map[string]any{"session_id": "bad\x01"}, wantSrc: session.SourceXArgs, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, src, err := session.Resolve(tt.body, tt.h, tt.xargs)
			if got := err != nil; got != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, session.ErrInvalid) {
				t.Errorf("err = %v, not wrapping ErrInvalid", err)
			}
			if diff := cmp.Diff(tt.wantID, id); diff != "" {
				t.Errorf("id (-want +got):\n%s", diff)
			}
			if src != tt.wantSrc {
				t.Errorf("src = %v, want %v", src, tt.wantSrc)
			}
		})
	}
}

func TestResolveErrorMessage(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		h        http.Header
		xargs    map[string]any
		wantSubs []string
	}{
		{name: "too long body", body: strings.Repeat("x", 300), wantSubs: []string{"body field session_id", "300 bytes", "256"}},
		{name: "control in header", h: hdr("X-Session-ID", "a\x07"), wantSubs: []string{"header X-Session-ID", "non-printable", "U+0007"}},
		{name: "invalid utf8 in xargs", xargs: map[string]any{"session_id": "\xff"}, wantSubs: []string{"vllm_xargs", "UTF-8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := session.Resolve(tt.body, tt.h, tt.xargs)
			if err == nil {
				t.Fatal("want error")
			}
			for _, sub := range tt.wantSubs {
				if !strings.Contains(err.Error(), sub) {
					t.Errorf("error %q does not mention %q", err, sub)
				}
			}
		})
	}
}

func TestSourceString(t *testing.T) {
	got := []string{session.SourceNone.String(), session.SourceBody.String(), session.SourceHeader.String(), session.SourceXArgs.String(), session.Source(9).String()}
	want := []string{"none", "body", "header", "vllm_xargs", "Source(9)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		id      string
		wantErr bool
	}{
		{"abc", false}, {"", true}, {"a\nb", true}, {strings.Repeat("z", 257), true}, {"ok id", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			err := session.Validate(tt.id)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Validate(%q) = %v, wantErr %v", tt.id, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, session.ErrInvalid) {
				t.Errorf("err %v does not wrap ErrInvalid", err)
			}
		})
	}
}

func FuzzResolve(f *testing.F) {
	f.Add("", "", "")
	f.Add("b", "h", "x")
	f.Add("", "h\x00", "x")
	f.Add("\xff", "", "")
	f.Add("", "", strings.Repeat("é", 200))
	f.Fuzz(func(t *testing.T, body, header, xarg string) {
		h := http.Header{"x-session-id": {header}}
		id, src, err := session.Resolve(body, h, map[string]any{"session_id": xarg})
		var chosen string
		switch src {
		case session.SourceBody:
			chosen = body
		case session.SourceHeader:
			chosen = header
		case session.SourceXArgs:
			chosen = xarg
		case session.SourceNone:
			if body != "" || header != "" || xarg != "" || id != "" || err != nil {
				t.Fatalf("SourceNone with body=%q header=%q xarg=%q id=%q err=%v", body, header, xarg, id, err)
			}
			return
		}
		if err != nil {
			if id != "" || !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("id=%q err=%v", id, err)
			}
			return
		}
		if id != chosen {
			t.Fatalf("id %q, chosen %q", id, chosen)
		}
		if id == "" || len(id) > session.MaxLen || !utf8.ValidString(id) {
			t.Fatalf("accepted bad id %q", id)
		}
		for _, r := range id {
			if unicode.IsControl(r) || !unicode.IsPrint(r) {
				t.Fatalf("accepted id %q with %U", id, r)
			}
		}
	})
}
