package batch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/tandem-llm/tandem/frontend/batch"
)

// FuzzRun feeds arbitrary batch files (JSON Lines, OpenAI's batch format) to Run: it
// must write exactly one well-formed result line per non-blank input line, in order,
// each with a response or an error, and count them consistently.
func FuzzRun(f *testing.F) {
	for _, s := range []string{
		`{"custom_id":"a","method":"POST","url":"/v1/completions","body":{"prompt":"hi"}}` + "\n" +
			`{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"bad":1}}`,
		`{"custom_id":"c","method":"GET","url":"/v1/completions","body":{}}`,
		`{"custom_id":"d","method":"POST","url":"/v1/embeddings","body":{}}`,
		`{"custom_id":"e","method":"POST","url":"/v1/responses"}`,
		"not json\n\n   \n{\"custom_id\":5}",
		`{"custom_id":"f","method":"POST","url":"/v1/completions","body":"x"}` + "\r\n" + `[1,2]`,
		"\xff\xfe\x00",
	} {
		f.Add([]byte(s))
	}
	h := &echoHandler{}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		sum, err := batch.Run(context.Background(), h, bytes.NewReader(in), &out, batch.Options{Concurrency: 4})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		numIn := 0
		sc := bufio.NewScanner(bytes.NewReader(in))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) > 0 {
				numIn++
			}
		}
		var numOut, numOK int
		for line := range bytes.Lines(out.Bytes()) {
			var r batch.Result
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("result line %q: %v", line, err)
			}
			if (r.Response == nil) == (r.Error == nil) {
				t.Fatalf("result %q: want exactly one of response and error", line)
			}
			if r.Response != nil && r.Response.StatusCode == http.StatusOK {
				numOK++
			}
			numOut++
		}
		if numOut != numIn || sum.NumLines != numIn || sum.NumSucceeded != numOK || sum.NumSucceeded+sum.NumFailed != numIn {
			t.Fatalf("%d input lines, %d result lines, summary %+v, %d ok", numIn, numOut, sum, numOK)
		}
	})
}
