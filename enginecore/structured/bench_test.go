package structured_test

import (
	"testing"

	"github.com/tandem-llm/tandem/enginecore/structured"
)

// BenchmarkCompile compares a compile of a schema with a copy of a cached
// compile (what a request repeating a constraint costs).
func BenchmarkCompile(b *testing.B) {
	v, _ := byteVocab(b)
	c := structured.Constraint{Kind: structured.JSONSchema, Data: `{"type":"object","properties":{
		"name":{"type":"string"},"tags":{"type":"array","items":{"enum":["a","b","c"]}},
		"address":{"type":"object","properties":{"street":{"type":"string"},"zip":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["street"]},
		"age":{"type":"integer","minimum":0,"maximum":150}},"required":["name","age"]}`}
	b.Run("compile", func(b *testing.B) {
		for b.Loop() {
			m, err := v.Compile(c)
			if err != nil {
				b.Fatal(err)
			}
			m.Close()
		}
	})
	b.Run("cached", func(b *testing.B) {
		cache := structured.NewCache(v, 4)
		for b.Loop() {
			m, _, err := cache.Matcher(c)
			if err != nil {
				b.Fatal(err)
			}
			m.Close()
		}
	})
}
