package responses_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/responses"
)

func entry(id string, texts ...string) responses.Entry {
	e := responses.Entry{Response: openai.Response{ID: id}}
	for _, t := range texts {
		e.Messages = append(e.Messages, responses.Message{Role: "user", Content: t})
	}
	return e
}

func ids(s *responses.Store, all ...string) []string {
	var got []string
	for _, id := range all {
		if _, ok := s.Get(id); ok {
			got = append(got, id)
		}
	}
	return got
}

func TestStoreLRU(t *testing.T) {
	tests := []struct {
		name   string
		limits responses.Limits
		ops    func(s *responses.Store)
		want   []string // ids still stored, in a, b, c, d order
	}{
		{"under limits keeps all", responses.Limits{MaxEntries: 4}, func(s *responses.Store) {
			for _, id := range []string{"a", "b", "c"} {
				s.Put(entry(id, "x"), 1)
			}
		}, []string{"a", "b", "c"}},
		{"entry limit evicts oldest", responses.Limits{MaxEntries: 2}, func(s *responses.Store) {
			s.Put(entry("a", "x"), 1)
			s.Put(entry("b", "x"), 1)
			s.Put(entry("c", "x"), 1)
		}, []string{"b", "c"}},
		{"get refreshes", responses.Limits{MaxEntries: 2}, func(s *responses.Store) {
			s.Put(entry("a", "x"), 1)
			s.Put(entry("b", "x"), 1)
			s.Get("a")
			s.Put(entry("c", "x"), 1)
		}, []string{"a", "c"}},
		{"byte limit counts new messages only", responses.Limits{MaxEntries: 10, MaxBytes: 10}, func(s *responses.Store) {
			s.Put(entry("a", "12345"), 1)
			s.Put(entry("b", "12345", "123"), 1) // shares "12345" with a: adds 3
			s.Put(entry("c", "12"), 1)           // 10 bytes in all
			s.Put(entry("d", "1"), 1)            // 11: a goes
		}, []string{"b", "c", "d"}},
		{"an oversized entry is kept alone", responses.Limits{MaxEntries: 10, MaxBytes: 4}, func(s *responses.Store) {
			s.Put(entry("a", "1"), 1)
			s.Put(entry("b", strings.Repeat("x", 9)), 1)
		}, []string{"b"}},
		{"replace and delete", responses.Limits{MaxEntries: 2}, func(s *responses.Store) {
			s.Put(entry("a", "x"), 1)
			s.Put(entry("a", "y"), 1)
			s.Put(entry("b", "x"), 1)
			s.Delete("b")
			s.Put(entry("c", "x"), 1)
		}, []string{"a", "c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := responses.NewStore(tc.limits)
			tc.ops(s)
			if diff := cmp.Diff(tc.want, ids(s, "a", "b", "c", "d")); diff != "" {
				t.Fatalf("stored (-want +got):\n%s", diff)
			}
			if s.Len() != len(tc.want) {
				t.Fatalf("Len %d, want %d", s.Len(), len(tc.want))
			}
		})
	}
}

func TestStoreGetReturnsEntry(t *testing.T) {
	s := responses.NewStore(responses.Limits{})
	s.Put(entry("a", "hello", "world"), 2)
	got, ok := s.Get("a")
	want := entry("a", "hello", "world")
	want.NumBytes = 10
	if !ok {
		t.Fatal("a not stored")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if s.Delete("zzz") {
		t.Fatal("deleted an unknown id")
	}
}

// TestStoreCountsCalls: a turn's calls and a result's call id count
// towards MaxBytes like text.
func TestStoreCountsCalls(t *testing.T) {
	s := responses.NewStore(responses.Limits{})
	e := responses.Entry{Response: openai.Response{ID: "a"}, Messages: []responses.Message{
		{Role: "assistant", Content: "ok", ToolCalls: []openai.ToolCall{{ID: "call_1", Type: "function", Function: openai.FunctionCall{Name: "f", Arguments: "{}"}}}},
		{Role: "tool", Content: "42", ToolCallID: "call_1"},
	}}
	s.Put(e, 2)
	if got, _ := s.Get("a"); got.NumBytes != 2+6+1+2+2+6 {
		t.Errorf("NumBytes %d", got.NumBytes)
	}
}

func TestStoreConcurrent(t *testing.T) {
	s := responses.NewStore(responses.Limits{MaxEntries: 8})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				id := fmt.Sprintf("%d-%d", g, i%16)
				s.Put(entry(id, "x"), 1)
				s.Get(id)
				if i%7 == 0 {
					s.Delete(id)
				}
			}
		})
	}
	wg.Wait()
	if s.Len() > 8 {
		t.Fatalf("Len %d over the limit", s.Len())
	}
}
