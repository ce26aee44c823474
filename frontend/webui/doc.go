// Package webui is Tandem's built-in web console: a chat page at / and a
// live cluster view at /console, served by the frontend from assets
// embedded in the binary (no CDN; it works offline).
//
// The pages are TypeScript in src/, bundled by esbuild (pinned in
// package.json and package-lock.json) into dist/, which is committed and
// embedded, so `go build` needs no front-end toolchain.
// TestBundleMatchesSources rebuilds dist/ into a temporary directory with
// the pinned esbuild and fails when the two differ: after editing src/,
// run `npm ci && npm run build` here and commit dist/ with it.
//
// The pages are open (they ask for the API key when the server has one and
// send it as a Bearer token); everything they fetch goes through the API
// routes and their authentication. The cluster view's feed (Feed) is a
// server-sent event stream of Snapshot: the engines' latest reports, the
// sessions they hold, and the rates of tokens, time to first token and
// routing decisions, taken from the frontend's own metrics.
//
//	feed := webui.NewFeed(webui.Source{Engines: client.Engines, ...})
//	mux.Handle("/", webui.Pages())
//	mux.Handle("/console/events", feed) // behind the API key
package webui
