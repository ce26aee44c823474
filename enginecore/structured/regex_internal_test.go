package structured

import "testing"

func TestASCIIClasses(t *testing.T) {
	tests := []struct{ in, want string }{
		{`\d{4}-\d{2}`, `[0-9]{4}-[0-9]{2}`},
		{`\D\w\W`, `[^0-9][0-9A-Za-z_][^0-9A-Za-z_]`},
		{`[a-f\d]+`, `[a-f0-9]+`},
		{`[^\w.]`, `[^0-9A-Za-z_.]`},
		{`[\D]`, `[[^0-9]]`},
		{`\s+\S`, `\s+\S`},  // Unicode whitespace, as ECMA-262's
		{`\\d`, `\\d`},      // an escaped backslash, then d
		{`\\\d`, `\\[0-9]`}, // an escaped backslash, then \d
		{`[]\d]`, `[]0-9]`}, // a leading ] is a member
		{`[^]\w]`, `[^]0-9A-Za-z_]`},
		{`[[:alpha:]\d]\d`, `[[:alpha:]0-9][0-9]`},
		{`[a[\d]]\w`, `[a[0-9]][0-9A-Za-z_]`}, // Rust nests classes
		{`\p{L}\x41\.\[\d`, `\p{L}\x41\.\[[0-9]`},
		{`é\d`, `é[0-9]`},
		{`abc\`, `abc\`}, // a trailing backslash stays an error
		{`[\d`, `[0-9`},  // so does an open class
	}
	for _, tt := range tests {
		if got := asciiClasses(tt.in); got != tt.want {
			t.Errorf("asciiClasses(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzASCIIClasses(f *testing.F) {
	for _, s := range []string{`\d+`, `[^\w]`, `[]a\D]`, `\\\\d`, `[[:digit:]\W]`, "\\\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rx string) {
		got := asciiClasses(rx)
		// Each rewritten escape grows (\d is 2 bytes, 0-9 3), and none is
		// left to rewrite.
		if len(got) < len(rx) {
			t.Fatalf("asciiClasses(%q) = %q, shorter", rx, got)
		}
		if asciiClasses(got) != got {
			t.Fatalf("asciiClasses not idempotent on %q: %q then %q", rx, got, asciiClasses(got))
		}
	})
}
