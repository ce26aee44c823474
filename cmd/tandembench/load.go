package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/stat (100 on Linux x86).
const clockTicks = 100

// cpuSample is a snapshot of the machine's and this process's CPU time.
type cpuSample struct {
	at   time.Time
	busy float64 // seconds, all CPUs: user+nice+system+irq+softirq+steal from /proc/stat
	own  float64 // seconds: this process and its waited-for children (llamabench)
	ok   bool    // /proc/stat was readable
}

func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now()}
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) == nil && syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) == nil {
		s.own = tv(self.Utime) + tv(self.Stime) + tv(children.Utime) + tv(children.Stime)
	}
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return s
	}
	// user nice system idle iowait irq softirq steal
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return s
		}
		s.busy += v / clockTicks
	}
	s.ok = true
	return s
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// otherCPU is the share (0–1) of the machine's CPU time between a and b
// that other processes (and the hypervisor's steal) used: the busy time
// not ours, over wall time × cores. 0 when /proc/stat is unreadable.
func otherCPU(a, b cpuSample, cores int) float64 {
	wall := b.at.Sub(a.at).Seconds()
	if !a.ok || !b.ok || wall <= 0 || cores <= 0 {
		return 0
	}
	v := ((b.busy - a.busy) - (b.own - a.own)) / (wall * float64(cores))
	return min(max(v, 0), 1)
}

// Before each phase (not in --quick runs) quietMachine waits for the
// machine to settle: other processes (a build, the previous phase's
// processes shutting down) using under settleShare of the CPU over a
// settleWindow, for at most settleMax.
const (
	settleWindow = 2 * time.Second
	settleShare  = 0.10
	settleMax    = 3 * time.Minute
)

// quietMachine waits until the machine settles (or settleMax passed) and
// describes it, with the last window's other-CPU share.
func quietMachine(ctx context.Context, o options, stderr io.Writer) (Machine, error) {
	if o.quick {
		return machine(), nil
	}
	deadline := time.Now().Add(settleMax)
	for {
		a := sampleCPU()
		select {
		case <-ctx.Done():
			return Machine{}, ctx.Err()
		case <-time.After(settleWindow):
		}
		share := otherCPU(a, sampleCPU(), runtime.NumCPU())
		if share < settleShare || !time.Now().Before(deadline) {
			m := machine()
			m.OtherCPUStart = &share
			return m, nil
		}
		fmt.Fprintf(stderr, "tandembench: other processes use %.0f%% of the CPU; waiting for the machine to settle (at most %s more)\n",
			100*share, time.Until(deadline).Round(time.Second))
	}
}
