package spec

// Ngram is vLLM's n-gram proposer (prompt lookup decoding): it finds the
// longest suffix of the tokens, of Min..Max tokens, that also occurs
// earlier, takes its earliest such occurrence, and drafts the tokens that
// followed it there.
type Ngram struct{ Min, Max int }

// Propose returns up to k tokens (none when no suffix of Min tokens
// recurs). It runs in O(len(tokens)) time: a KMP failure table over the
// reversed tokens, whose prefixes are the suffixes sought, capped at Max.
func (g Ngram) Propose(tokens []int32, k int) []int32 {
	n := len(tokens)
	if k <= 0 || g.Min < 1 || g.Max < g.Min || n < g.Min+1 {
		return nil
	}
	rev := func(i int) int32 { return tokens[n-1-i] } // the reversed tokens
	// lps[i], i < Max: the longest proper prefix of rev[0..i] that is also
	// a suffix of it (KMP's failure function).
	lps := make([]int, min(g.Max, n))
	longest, at := 0, 0 // the longest match so far, and where it ends in rev
	m := 0              // rev[0:m] matches the text ending just before i
	for i := 1; i < n; {
		switch {
		case rev(m) == rev(i):
			m++
			// ≥, not >: of equal matches the later in rev, i.e. the earlier
			// in tokens, wins (vLLM's choice).
			if m >= longest {
				longest, at = m, i
			}
			if i < len(lps) {
				lps[i] = m
			}
			if m == g.Max { // never longer than Max: fall back as on a mismatch
				m = lps[m-1]
			}
			i++
		case m > 0:
			m = lps[m-1]
		default:
			i++
		}
	}
	if longest < g.Min {
		return nil
	}
	// rev[at-longest+1 .. at] is tokens[n-1-at .. n-1-at+longest-1]; the
	// draft starts right after it.
	start := n - 1 - at + longest
	return tokens[start:min(start+k, n):min(start+k, n)]
}

// Simple is llama.cpp's ngram-simple: the last N tokens' latest earlier
// occurrence, and the tokens that followed it.
type Simple struct{ N int }

// Propose returns up to k tokens (none when the last N tokens do not
// occur earlier).
func (s Simple) Propose(tokens []int32, k int) []int32 {
	n := len(tokens)
	if k <= 0 || s.N < 1 || n <= s.N {
		return nil
	}
	pat := tokens[n-s.N:]
	for j := n - s.N - 1; j >= 0; j-- {
		if equal(tokens[j:j+s.N], pat) {
			start := j + s.N
			return tokens[start:min(start+k, n):min(start+k, n)]
		}
	}
	return nil
}

func equal(a, b []int32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
