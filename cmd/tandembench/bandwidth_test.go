package main

import (
	"testing"
)

func TestReadSum(t *testing.T) {
	b := make([]uint64, 96)
	want := uint64(0)
	for i := range b {
		b[i] = uint64(i*i + 7)
		want ^= b[i]
	}
	if got := readSumGo(b); got != want {
		t.Errorf("readSumGo = %d, want %d", got, want)
	}
	if got := readSum(b); got != want {
		t.Errorf("readSum (%s) = %d, want %d", readKernel, got, want)
	}
}

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
}

// BenchmarkBandwidth measures 256 MiB reads, as the bench does with 1 GiB.
func BenchmarkBandwidth(b *testing.B) {
	for b.Loop() {
		bw := measureBandwidth(256<<20, []int{1, 2}, 1)
		b.ReportMetric(bw.GBps[1], "GB/s-1t")
		b.ReportMetric(bw.GBps[2], "GB/s-2t")
	}
}
