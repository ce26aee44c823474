package detok_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/detok"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// pushResult is what one Push returned.
type pushResult struct {
	Emit    string
	Stopped bool
	Which   string
}

func TestStopChecker(t *testing.T) {
	tests := []struct {
		name      string
		stops     []string
		include   bool
		deltas    []string
		want      []pushResult
		wantFlush string
	}{
		{
			name:   "no stops: no holdback",
			deltas: []string{"Hel", "lo"},
			want:   []pushResult{{Emit: "Hel"}, {Emit: "lo"}},
		},
		{
			name:   "empty stop strings ignored",
			stops:  []string{""},
			deltas: []string{"abc"},
			want:   []pushResult{{Emit: "abc"}},
		},
		{
			name:   "stop within one delta",
			stops:  []string{"END"},
			deltas: []string{"abcENDxyz"},
			want:   []pushResult{{Emit: "abc", Stopped: true, Which: "END"}},
		},
		{
			name:   "stop split across three deltas",
			stops:  []string{"STOP"},
			deltas: []string{"hi S", "T", "OP tail"},
			want:   []pushResult{{Emit: "hi "}, {}, {Emit: "", Stopped: true, Which: "STOP"}},
		},
		{
			name:    "stop split across three deltas, included",
			stops:   []string{"STOP"},
			include: true,
			deltas:  []string{"hi S", "T", "OP tail"},
			want:    []pushResult{{Emit: "hi S"}, {Emit: "T"}, {Emit: "OP", Stopped: true, Which: "STOP"}},
		},
		{
			name:      "false start released",
			stops:     []string{"STOP"},
			deltas:    []string{"ST", "ay", "ST"},
			want:      []pushResult{{}, {Emit: "STay"}, {}},
			wantFlush: "ST",
		},
		{
			name:   "holdback only what may start a stop",
			stops:  []string{"abc"},
			deltas: []string{"xxxxa", "zz"},
			want:   []pushResult{{Emit: "xxxx"}, {Emit: "azz"}},
		},
		{
			name:   "earliest completing wins over list order",
			stops:  []string{"bcdef", "cd"},
			deltas: []string{"abcdefg"},
			want:   []pushResult{{Emit: "ab", Stopped: true, Which: "cd"}},
		},
		{
			name:   "earliest completing wins across deltas",
			stops:  []string{"abcd", "bc"},
			deltas: []string{"xab", "cd"},
			want:   []pushResult{{Emit: "x"}, {Emit: "a", Stopped: true, Which: "bc"}},
		},
		{
			name:   "same end: earlier start wins",
			stops:  []string{"c", "abc"},
			deltas: []string{"zabc"},
			want:   []pushResult{{Emit: "z", Stopped: true, Which: "abc"}},
		},
		{
			name:   "overlapping: one stop is a prefix of another",
			stops:  []string{"ab", "abc"},
			deltas: []string{"xa", "bc"},
			want:   []pushResult{{Emit: "x"}, {Emit: "", Stopped: true, Which: "ab"}},
		},
		{
			name:   "self-overlapping stop",
			stops:  []string{"aab"},
			deltas: []string{"a", "a", "a", "b!"},
			want:   []pushResult{{}, {}, {Emit: "a"}, {Emit: "", Stopped: true, Which: "aab"}},
		},
		{
			name:    "included, match begins in emitted context",
			stops:   []string{"<end>"},
			include: true,
			deltas:  []string{"ok <e", "nd>!!"},
			want:    []pushResult{{Emit: "ok <e"}, {Emit: "nd>", Stopped: true, Which: "<end>"}},
		},
		{
			name:   "multi-byte stop string split",
			stops:  []string{"é!"},
			deltas: []string{"caf", "é", "!x"},
			want:   []pushResult{{Emit: "caf"}, {}, {Emit: "", Stopped: true, Which: "é!"}},
		},
		{
			name:      "multi-byte text, no match",
			stops:     []string{"🙂🙂"},
			deltas:    []string{"a🙂", "b🙂"},
			want:      []pushResult{{Emit: "a"}, {Emit: "🙂b"}},
			wantFlush: "🙂",
		},
		{
			name:   "push after stop",
			stops:  []string{"x"},
			deltas: []string{"axb", "more"},
			want:   []pushResult{{Emit: "a", Stopped: true, Which: "x"}, {Stopped: true, Which: "x"}},
		},
		{
			name:   "stop string is whole delta",
			stops:  []string{"\n\n"},
			deltas: []string{"line\n", "\n"},
			want:   []pushResult{{Emit: "line"}, {Stopped: true, Which: "\n\n"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := detok.NewStopChecker(tt.stops, tt.include)
			var got []pushResult
			for _, d := range tt.deltas {
				e, s, w := sc.Push(d)
				got = append(got, pushResult{e, s, w})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Push (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFlush, sc.Flush()); diff != "" {
				t.Errorf("Flush (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStopCheckerStopped(t *testing.T) {
	sc := detok.NewStopChecker([]string{"q"}, false)
	if _, ok := sc.Stopped(); ok {
		t.Fatal("stopped before any push")
	}
	sc.Push("aqa")
	if which, ok := sc.Stopped(); !ok || which != "q" {
		t.Fatalf("Stopped() = %q, %v", which, ok)
	}
}

// reference truncates full at its earliest-completing stop string.
func reference(full string, stops []string, include bool) (text string, which string) {
	bestStart, bestEnd, found := 0, 0, false
	for _, s := range stops {
		if s == "" {
			continue
		}
		i := strings.Index(full, s)
		if i < 0 {
			continue
		}
		e := i + len(s)
		if !found || e < bestEnd || (e == bestEnd && i < bestStart) {
			bestStart, bestEnd, which, found = i, e, s, true
		}
	}
	switch {
	case !found:
		return full, ""
	case include:
		return full[:bestEnd], which
	default:
		return full[:bestStart], which
	}
}

// TestStopProperty drives Detokenizer and StopChecker with random token
// streams, chunkings and stop strings and checks that the concatenated output
// equals the one-shot decode truncated at the first stop.
func TestStopProperty(t *testing.T) {
	tok := tokenizer.NewByte()
	alphabet := []string{"a", "b", "ab", "é", "🙂", " ", "\xff", "\xf0\x9f", "<|im_end|>"}
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 3000 {
		var stream []int32
		for range rng.IntN(40) {
			stream = append(stream, tok.Encode(alphabet[rng.IntN(len(alphabet))], false)...)
		}
		skip := rng.IntN(2) == 0
		full := detok.Text(tok, stream, skip)
		var stops []string
		for range rng.IntN(4) {
			if len(full) > 0 && rng.IntN(3) > 0 {
				i := rng.IntN(len(full))
				stops = append(stops, full[i:min(len(full), i+1+rng.IntN(6))])
			} else {
				stops = append(stops, alphabet[rng.IntN(len(alphabet))]+alphabet[rng.IntN(len(alphabet))])
			}
		}
		for i, s := range stops {
			stops[i] = strings.ToValidUTF8(s, "") // JSON-decoded stop strings are valid UTF-8
		}
		include := rng.IntN(2) == 0

		d := detok.New(tok, skip)
		sc := detok.NewStopChecker(stops, include)
		var out strings.Builder
		var gotWhich string
		stopped := false
		emit := func(s string) {
			if !utf8.ValidString(s) {
				t.Fatalf("iter %d: invalid UTF-8 emitted: %q", iter, s)
			}
			out.WriteString(s)
		}
		for i := 0; i < len(stream) && !stopped; {
			n := 1 + rng.IntN(5)
			e, s, w := sc.Push(d.Add(stream[i:min(i+n, len(stream))]))
			emit(e)
			stopped, gotWhich = s, w
			i += n
		}
		if !stopped {
			e, _, w := sc.Push(d.Flush())
			emit(e)
			gotWhich = w
			emit(sc.Flush())
		}
		wantText, wantWhich := reference(full, stops, include)
		if out.String() != wantText || gotWhich != wantWhich {
			t.Fatalf("iter %d: stops %q include %v full %q:\n got %q (%q)\nwant %q (%q)",
				iter, stops, include, full, out.String(), gotWhich, wantText, wantWhich)
		}
	}
}

func BenchmarkStopChecker(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 40)
	for b.Loop() {
		sc := detok.NewStopChecker([]string{"</answer>", "\n\nUser:", "dog!"}, false)
		for i := range len(text) {
			sc.Push(text[i : i+1])
		}
		sc.Flush()
	}
}
