package tokenizer

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

// addedToken is a token matched literally in the input before any other
// processing: HF added_tokens, llama.cpp control/user-defined/unknown tokens.
type addedToken struct {
	text       string
	id         int32
	special    bool // matched only with ParseSpecial
	lstrip     bool // absorbs the whitespace before it
	rstrip     bool // absorbs the whitespace after it
	singleWord bool // matches only between non-word characters
}

// addedSet finds added tokens in text: leftmost match first, the longest at a
// position (HF's leftmost-longest Aho-Corasick). llama.cpp instead matches the
// longest token anywhere first; the two differ only for overlapping tokens.
type addedSet struct {
	tokens []addedToken
	nodes  []trieNode // nodes[0] is the root
	starts [256]bool  // bytes that begin some token
}

// trieNode is a node of the byte trie of token texts.
type trieNode struct {
	edges []trieEdge // sorted by byte
	tok   int32      // index+1 into tokens of the token ending here; 0 if none
}

type trieEdge struct {
	b    byte
	node int32
}

func newAddedSet(tokens []addedToken) *addedSet {
	a := &addedSet{nodes: make([]trieNode, 1, 1+8*len(tokens))}
	for _, tok := range tokens {
		if tok.text == "" {
			continue
		}
		a.tokens = append(a.tokens, tok)
		n := int32(0)
		for i := range len(tok.text) {
			n = a.child(n, tok.text[i])
		}
		a.nodes[n].tok = int32(len(a.tokens))
		a.starts[tok.text[0]] = true
	}
	return a
}

// child returns the child of node n for byte b, adding it if needed.
func (a *addedSet) child(n int32, b byte) int32 {
	edges := a.nodes[n].edges
	k := sort.Search(len(edges), func(i int) bool { return edges[i].b >= b })
	if k < len(edges) && edges[k].b == b {
		return edges[k].node
	}
	c := int32(len(a.nodes))
	a.nodes = append(a.nodes, trieNode{})
	edges = append(edges, trieEdge{})
	copy(edges[k+1:], edges[k:])
	edges[k] = trieEdge{b: b, node: c}
	a.nodes[n].edges = edges
	return c
}

func (a *addedSet) next(n int32, b byte) (int32, bool) {
	edges := a.nodes[n].edges
	for lo, hi := 0, len(edges); lo < hi; {
		m := (lo + hi) / 2
		switch {
		case edges[m].b == b:
			return edges[m].node, true
		case edges[m].b < b:
			lo = m + 1
		default:
			hi = m
		}
	}
	return 0, false
}

// longest returns the longest eligible token at text[i:] and its length.
func (a *addedSet) longest(text string, i int, parseSpecial bool) (addedToken, int, bool) {
	var best addedToken
	bestLen := 0
	n := int32(0)
	for j := i; j < len(text); j++ {
		c, ok := a.next(n, text[j])
		if !ok {
			break
		}
		n = c
		if k := a.nodes[n].tok; k > 0 {
			if tok := a.tokens[k-1]; parseSpecial || !tok.special {
				best, bestLen = tok, j+1-i
			}
		}
	}
	return best, bestLen, bestLen > 0
}

// split calls fn for each piece of text in order: runs of plain text (never
// empty) with isToken false, and added tokens with their id.
func (a *addedSet) split(text string, parseSpecial bool, fn func(piece string, id int32, isToken bool)) {
	if a == nil || len(a.tokens) == 0 {
		if text != "" {
			fn(text, 0, false)
		}
		return
	}
	plain := 0 // start of the pending plain text
	for i := 0; i < len(text); {
		if !a.starts[text[i]] {
			i++
			continue
		}
		tok, n, ok := a.longest(text, i, parseSpecial)
		if !ok {
			i++
			continue
		}
		end := i + n
		if tok.singleWord && (isWordBefore(text[plain:i]) || isWordAfter(text[end:])) {
			i = end
			continue
		}
		start := i
		if tok.lstrip {
			for start > plain {
				r, w := utf8.DecodeLastRuneInString(text[plain:start])
				if !unicode.IsSpace(r) {
					break
				}
				start -= w
			}
		}
		if tok.rstrip {
			for end < len(text) {
				r, w := utf8.DecodeRuneInString(text[end:])
				if !unicode.IsSpace(r) {
					break
				}
				end += w
			}
		}
		if start > plain {
			fn(text[plain:start], 0, false)
		}
		fn(tok.text, tok.id, true)
		plain, i = end, end
	}
	if plain < len(text) {
		fn(text[plain:], 0, false)
	}
}

// isWordBefore and isWordAfter report whether a word character (letter,
// digit or _) touches the match from the given side.
func isWordBefore(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWordRune(r)
}

func isWordAfter(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWordRune(r)
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
