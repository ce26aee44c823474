package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// The frontends of one `tandem serve --api-server-count M` share a port
// (SO_REUSEPORT), so a scrape reaches one of them at random. vLLM's API
// servers answer it with every server's series added up (Prometheus
// multiprocess mode: counters and histograms summed, gauges the most
// recent). Tandem's do the same: each serves its own series on a Unix
// socket (OwnHandler), and the one scraped adds its peers' to its own.
// Engine series are not summed: every frontend has the same engine stats
// from the heartbeats, so the answering frontend's are each engine's own
// numbers, once.

// peerTimeout bounds one peer's answer; a peer that is slow or gone
// (restarting) is left out of that scrape.
const peerTimeout = 2 * time.Second

// peerGatherer reads a peer frontend's OwnHandler on a Unix socket.
type peerGatherer struct {
	client *http.Client
}

func peerGatherers(sockets []string) []prometheus.Gatherer {
	var gs []prometheus.Gatherer
	for _, path := range sockets {
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}
		gs = append(gs, &peerGatherer{client: &http.Client{Transport: tr, Timeout: peerTimeout}})
	}
	return gs
}

func (p *peerGatherer) Gather() ([]*dto.MetricFamily, error) {
	req, err := http.NewRequest(http.MethodGet, "http://peer/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("metrics: peer: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: peer: %s", resp.Status)
	}
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	var out []*dto.MetricFamily
	for {
		f := &dto.MetricFamily{}
		if err := dec.Decode(f); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("metrics: peer: %w", err)
		}
		out = append(out, f)
	}
}

// gatherPeers asks every peer at once; a peer that fails is left out.
func gatherPeers(peers []prometheus.Gatherer) [][]*dto.MetricFamily {
	out := make([][]*dto.MetricFamily, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Go(func() {
			if fams, err := p.Gather(); err == nil {
				out[i] = fams
			}
		})
	}
	wg.Wait()
	return out
}

// mergeFamilies adds the series of each of adds to base's: a series with
// the same name and labels is summed (counter and gauge values,
// histogram counts, sums and buckets of the same bound, summary counts
// and sums), any other is appended. base is changed in place; the result
// is sorted by name, as a Gatherer's is.
func mergeFamilies(base []*dto.MetricFamily, adds ...[]*dto.MetricFamily) []*dto.MetricFamily {
	byName := map[string]*dto.MetricFamily{}
	for _, f := range base {
		byName[f.GetName()] = f
	}
	for _, fams := range adds {
		for _, f := range fams {
			b := byName[f.GetName()]
			if b == nil {
				byName[f.GetName()] = f
				base = append(base, f)
				continue
			}
			if b.GetType() != f.GetType() {
				continue // not the same metric: keep this frontend's
			}
			series := map[string]*dto.Metric{}
			for _, m := range b.Metric {
				series[labelKey(m)] = m
			}
			for _, m := range f.Metric {
				if s := series[labelKey(m)]; s != nil {
					addMetric(s, m)
				} else {
					b.Metric = append(b.Metric, m)
					series[labelKey(m)] = m
				}
			}
		}
	}
	slices.SortFunc(base, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return base
}

func labelKey(m *dto.Metric) string {
	var b strings.Builder
	for _, l := range m.Label { // a Gatherer's are sorted by name
		b.WriteString(l.GetName())
		b.WriteByte(0)
		b.WriteString(l.GetValue())
		b.WriteByte(0)
	}
	return b.String()
}

// addMetric adds m's values to s (the same series of the same type).
func addMetric(s, m *dto.Metric) {
	switch {
	case s.Counter != nil && m.Counter != nil:
		s.Counter.Value = ptr(s.Counter.GetValue() + m.Counter.GetValue())
	case s.Gauge != nil && m.Gauge != nil:
		s.Gauge.Value = ptr(s.Gauge.GetValue() + m.Gauge.GetValue())
	case s.Untyped != nil && m.Untyped != nil:
		s.Untyped.Value = ptr(s.Untyped.GetValue() + m.Untyped.GetValue())
	case s.Summary != nil && m.Summary != nil:
		s.Summary.SampleCount = ptr(s.Summary.GetSampleCount() + m.Summary.GetSampleCount())
		s.Summary.SampleSum = ptr(s.Summary.GetSampleSum() + m.Summary.GetSampleSum())
	case s.Histogram != nil && m.Histogram != nil:
		h, o := s.Histogram, m.Histogram
		h.SampleCount = ptr(h.GetSampleCount() + o.GetSampleCount())
		h.SampleSum = ptr(h.GetSampleSum() + o.GetSampleSum())
		for _, ob := range o.Bucket {
			for _, hb := range h.Bucket {
				if hb.GetUpperBound() == ob.GetUpperBound() {
					hb.CumulativeCount = ptr(hb.GetCumulativeCount() + ob.GetCumulativeCount())
					break
				}
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }
