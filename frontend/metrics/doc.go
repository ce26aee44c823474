// Package metrics is the frontend's Prometheus registry: every always-on
// vLLM v1 metric that applies to Tandem, with vLLM's names, types, labels
// (model_name, engine) and bucket boundaries (vLLM 0.33.0), the names
// production-stack's router exports for its dashboard, the HTTP series
// vLLM's API server gets from prometheus-fastapi-instrumentator, vLLM's
// deprecated names behind --show-hidden-metrics-for-version, and Tandem's
// own under the tandem: prefix (sessions, routing). docs/metrics.md lists
// them all.
//
// Engine gauges and counters come from each engine's latest scheduler
// stats (heartbeats and outputs), read at scrape time. Request series are
// observed by this frontend and labelled with the engine that served the
// request; queue, prefill, decode and inference times come from the
// engine's request events (engineclient.Timing), on the engine's clock.
// Where each engine exports its own series (enginecore/metrics) and the
// frontends are separate scrape targets, Config.NoEngineSeries leaves the
// engine-owned ones out, so no engine is counted once per frontend.
//
// It must not import enginecore or gpu packages.
//
//	m := metrics.New(metrics.Config{ModelName: "dummy", MaxModelLen: 4096, Engines: client.Engines})
//	m.ObserveFirstToken(engine, ttft, numPrompt, numCached)
//	m.ObserveFinish(metrics.Finished{Engine: engine, Reason: "stop", …})
//	e.GET("/metrics", echo.WrapHandler(m.Handler()))
package metrics
