package main

import "testing"

func TestBandwidthOf(t *testing.T) {
	b := &Bandwidth{GBps: map[int]float64{1: 10, 2: 15}}
	for _, tt := range []struct {
		threads int
		want    float64
	}{{1, 10}, {2, 15}, {4, 15}} {
		if got := b.of(tt.threads); got != tt.want {
			t.Errorf("of(%d) = %g, want %g", tt.threads, got, tt.want)
		}
	}
	if (*Bandwidth)(nil).of(1) != 0 {
		t.Error("nil Bandwidth has a bandwidth")
	}
	b.merge(&Bandwidth{GBps: map[int]float64{1: 12, 2: 14}, Passes: 1})
	if b.GBps[1] != 12 || b.GBps[2] != 15 {
		t.Errorf("merge kept %v, want the best per thread count", b.GBps)
	}
}

// BenchmarkBandwidth measures 256 MiB reads, as the bench does with 1 GiB.
func BenchmarkBandwidth(b *testing.B) {
	for b.Loop() {
		bw := measureBandwidth(256<<20, []int{1, 2}, 1)
		b.ReportMetric(bw.GBps[1], "GB/s-1t")
		b.ReportMetric(bw.GBps[2], "GB/s-2t")
	}
}
