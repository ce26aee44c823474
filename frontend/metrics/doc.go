// Package metrics is the frontend's Prometheus registry. Names follow vLLM
// where vLLM has one (vllm:num_requests_running, vllm:time_to_first_token_seconds,
// …, labelled model_name and engine); Tandem's own carry the tandem: prefix
// (sessions, routing). Engine gauges and counters come from the engines'
// latest scheduler stats (heartbeats and outputs), read at scrape time;
// request latencies and token counts are observed by the frontend.
//
// It must not import enginecore or gpu packages.
//
//	m := metrics.New("dummy", engines)   // engines: func() []engineclient.EngineState
//	m.ObserveFirstToken(d); m.ObserveFinish(...)
//	e.GET("/metrics", echo.WrapHandler(m.Handler()))
package metrics
