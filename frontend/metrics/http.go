package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// httpMetrics are the series vLLM's API server gets from
// prometheus-fastapi-instrumentator's default instrumentation, with its
// names, labels and buckets; status is grouped ("2xx"), handler is the
// route's template ("none" for a path no route matched).
type httpMetrics struct {
	total    *prometheus.CounterVec   // method, status, handler
	reqSize  *prometheus.SummaryVec   // handler: Content-Length of requests
	respSize *prometheus.SummaryVec   // handler: Content-Length of responses
	highr    prometheus.Histogram     // no labels, many buckets
	lowr     *prometheus.HistogramVec // handler, method
}

var (
	highrBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 7.5, 10, 30, 60}
	lowrBuckets  = []float64{0.1, 0.5, 1}
)

// excludedHandlers are the paths vLLM's instrumentator leaves out.
var excludedHandlers = map[string]bool{"/metrics": true, "/health": true, "/load": true, "/ping": true, "/version": true, "/server_info": true}

func newHTTPMetrics(reg *prometheus.Registry) *httpMetrics {
	h := &httpMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "http_requests_total",
			Help: "Total number of requests by method, status and handler."}, []string{"method", "status", "handler"}),
		reqSize: prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "http_request_size_bytes",
			Help: "Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. "}, []string{"handler"}),
		respSize: prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "http_response_size_bytes",
			Help: "Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. "}, []string{"handler"}),
		highr: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "http_request_duration_highr_seconds",
			Help: "Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. ", Buckets: highrBuckets}),
		lowr: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "http_request_duration_seconds",
			Help: "Latency with only few buckets by handler. Made to be only used if aggregation by handler is important. ", Buckets: lowrBuckets}, []string{"handler", "method"}),
	}
	reg.MustRegister(h.total, h.reqSize, h.respSize, h.highr, h.lowr)
	return h
}

// ObserveHTTP records one HTTP request: handler is its route's template
// in FastAPI's spelling ("/v1/responses/{id}"; "" for no route), sizes
// are the Content-Length headers (0 when absent, as the instrumentator
// counts them), d runs to the end of the response body.
func (m *Metrics) ObserveHTTP(method, handler string, status int, d time.Duration, reqSize, respSize int64) {
	if handler == "" {
		handler = "none"
	}
	if excludedHandlers[handler] {
		return
	}
	h := m.http
	h.total.WithLabelValues(method, strconv.Itoa(status/100)+"xx", handler).Inc()
	h.reqSize.WithLabelValues(handler).Observe(float64(max(reqSize, 0)))
	h.respSize.WithLabelValues(handler).Observe(float64(max(respSize, 0)))
	h.highr.Observe(d.Seconds())
	h.lowr.WithLabelValues(handler, method).Observe(d.Seconds())
}
