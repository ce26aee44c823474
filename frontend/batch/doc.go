// Package batch runs OpenAI batch files (`tandem run-batch`): JSON lines of
// {custom_id, method, url, body}, each sent as an HTTP request to an
// in-process API handler (the same frontend server, so the same validation,
// templates, session_id resolution and engine path as online requests), and
// written back as JSON lines of {id, custom_id, response: {status_code,
// request_id, body}, error} in input order.
//
// A line that is not a valid request (bad JSON, no custom_id, a method
// other than POST, an unsupported url, stream: true) gets a result with
// response null and error set; a request the server answers with an HTTP
// error gets its status and error body in response, as in OpenAI's batch
// output. Either way the batch goes on. Blank lines are skipped.
//
// It imports nothing from this repository; the handler is passed in.
//
//	sum, err := batch.Run(ctx, srv.Handler(), in, out, batch.Options{Concurrency: 64, Progress: os.Stderr})
package batch
