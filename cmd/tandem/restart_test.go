package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRestartPolicy(t *testing.T) {
	const s = time.Second
	type step struct {
		at   time.Duration // since the start
		ev   procEvent
		want action
	}
	ready := func(at time.Duration) step { return step{at, procReady, action{verdict: keepRunning}} }
	restart := func(at, delay time.Duration, n int) step {
		return step{at, procExited, action{verdict: restartAfter, delay: delay, numCrashes: n}}
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"exit before ready fails at once", []step{
			{0, procExited, action{verdict: giveUp, startFailed: true}},
		}},
		{"backoff doubles and gives up at the fifth crash in a minute", []step{
			ready(0), restart(1*s, 1*s, 1),
			ready(3 * s), restart(4*s, 2*s, 2),
			ready(7 * s), restart(8*s, 4*s, 3),
			ready(13 * s), restart(14*s, 8*s, 4),
			ready(23 * s), {24 * s, procExited, action{verdict: giveUp, numCrashes: 5}},
		}},
		{"a restart that dies before ready counts as a crash, not a start failure", []step{
			ready(0), restart(10*s, 1*s, 1),
			restart(11*s, 2*s, 2), // never ready again
			restart(13*s, 4*s, 3),
		}},
		{"a run that stayed up a minute resets the backoff", []step{
			ready(0), restart(1*s, 1*s, 1),
			restart(2*s, 2*s, 2), restart(4*s, 4*s, 3),
			ready(5 * s), restart(70*s, 1*s, 1), // up 65 s; the old crashes are out of the window
		}},
		{"crashes older than the window drop out", []step{
			ready(0), restart(1*s, 1*s, 1),
			ready(2 * s), restart(3*s, 2*s, 2),
			ready(5 * s), restart(6*s, 4*s, 3),
			ready(10 * s), restart(11*s, 8*s, 4),
			ready(20 * s), restart(62*s, 16*s, 4), // the crash at 1 s is out; up only 42 s: no reset
			ready(80 * s), restart(85*s, 30*s, 2), // only 62 s is in; the delay caps at 30 s
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newRestartPolicy()
			start := time.Unix(1000, 0)
			for i, st := range tt.steps {
				got := p.decide(start.Add(st.at), st.ev)
				if diff := cmp.Diff(st.want, got, cmp.AllowUnexported(action{})); diff != "" {
					t.Fatalf("step %d (at %s): (-want +got):\n%s", i, st.at, diff)
				}
			}
		})
	}
}

// TestRestartBackoffCap: the delay doubles to 30 s and stays there.
func TestRestartBackoffCap(t *testing.T) {
	p := newRestartPolicy()
	p.maxCrashes = 100
	now := time.Unix(1000, 0)
	p.decide(now, procReady)
	var delays []time.Duration
	for range 7 {
		now = now.Add(time.Second)
		delays = append(delays, p.decide(now, procExited).delay)
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30}
	for i := range want {
		want[i] *= time.Second
	}
	if diff := cmp.Diff(want, delays); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
}
