package servertools

import "testing"

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "dir/main.go", false}, // * stops at '/'
		{"**", "a/b/c", true},
		{"**/*.go", "a/b/c.go", true},
		{"**/*.go", "c.go", true},
		{"a/**/c", "a/c", true}, // **/ matches no directory too
		{"**/x.go", "x.go", true},
		{"a/**/c", "a/b/x/c", true},
		{"?.txt", "a.txt", true},
		{"?.txt", "/.txt", false},
		{"?.txt", "ab.txt", false},
		{"[abc].md", "b.md", true},
		{"[a-c].md", "d.md", false},
		{"[!a-c].md", "d.md", true},
		{"[]x].md", "].md", true},
		{"[-x].md", "-.md", true},
		{"[abc", "[abc", true}, // unclosed: a literal '['
		{"", "", true},
		{"", "a", false},
		{"exact", "exact", true},
	}
	for _, tc := range tests {
		if got := globMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func TestPathMatch(t *testing.T) {
	tests := []struct {
		pattern, rel string
		want         bool
	}{
		{"*.py", "tools/server/tests/unit/test_x.py", true}, // no '/': the base name at any depth
		{"test_x.py", "unit/test_x.py", true},
		{"unit/*.py", "tools/unit/test_x.py", true}, // with '/': anchored with **/
		{"unit/*.py", "tools/other/test_x.py", false},
		{"unit/*.py", "unit/test_x.py", true},
		{"**/unit/*.py", "unit/test_x.py", true},
		{"/abs/*.py", "abs/x.py", false}, // a leading '/' is taken as is
		{"**", "any/thing", true},
		{"*proj*", "project-alpha", true},
	}
	for _, tc := range tests {
		if got := pathMatch(tc.pattern, tc.rel); got != tc.want {
			t.Errorf("pathMatch(%q, %q) = %v, want %v", tc.pattern, tc.rel, got, tc.want)
		}
	}
}
