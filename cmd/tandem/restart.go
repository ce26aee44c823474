package main

import "time"

// restartPolicy decides, for one supervised process, what serve does when
// the process reports ready or exits on its own. It is pure: the caller
// passes the time, so the tests need no sleeps.
//
//   - A process that exits before it ever reported ready failed to start:
//     a missing model, a port in use, a bad flag. Trying again gives the
//     same error, so serve gives up at once and says why.
//   - A process that crashes after it was ready is restarted after a
//     backoff that doubles from minBackoff to maxBackoff, and starts over
//     from minBackoff once a run stayed up for window.
//   - maxCrashes crashes within window (a restart that dies before it is
//     ready again counts too) make serve give up: something is wrong that
//     restarting does not fix.
type restartPolicy struct {
	minBackoff time.Duration // first restart delay
	maxBackoff time.Duration // cap of the doubling delay
	maxCrashes int           // crashes within window that end serve
	window     time.Duration // the crash-counting window, and how long a run must last to reset the backoff

	everReady bool          // some run reported ready
	readyAt   time.Time     // when the current run reported ready; zero before
	crashes   []time.Time   // crash times within window, oldest first
	backoff   time.Duration // the next restart delay
}

// newRestartPolicy is serve's policy: backoff 1 s … 30 s, give up after 5
// crashes within 60 s.
func newRestartPolicy() *restartPolicy {
	return &restartPolicy{minBackoff: time.Second, maxBackoff: 30 * time.Second, maxCrashes: 5, window: time.Minute}
}

// procEvent is what happened to the supervised process.
type procEvent int

const (
	procReady  procEvent = iota // it reported ready
	procExited                  // it exited without being asked to
)

// verdict is what the supervisor does next.
type verdict int

const (
	keepRunning  verdict = iota // nothing to do
	restartAfter                // start the process again after delay
	giveUp                      // stop everything and fail
)

// action is a decision and what the log and the error need to say.
type action struct {
	verdict     verdict
	delay       time.Duration // restartAfter: how long to wait
	numCrashes  int           // crashes within the window, this one included
	startFailed bool          // giveUp: the process never became ready
}

func (p *restartPolicy) decide(now time.Time, ev procEvent) action {
	if ev == procReady {
		p.everReady, p.readyAt = true, now
		return action{verdict: keepRunning}
	}
	if !p.everReady {
		return action{verdict: giveUp, startFailed: true}
	}
	if p.backoff == 0 || (!p.readyAt.IsZero() && now.Sub(p.readyAt) >= p.window) {
		p.backoff = p.minBackoff // first crash, or after a stable run
	}
	p.readyAt = time.Time{}
	kept := p.crashes[:0]
	for _, t := range p.crashes {
		if now.Sub(t) < p.window {
			kept = append(kept, t)
		}
	}
	p.crashes = append(kept, now)
	if len(p.crashes) >= p.maxCrashes {
		return action{verdict: giveUp, numCrashes: len(p.crashes)}
	}
	a := action{verdict: restartAfter, delay: p.backoff, numCrashes: len(p.crashes)}
	p.backoff = min(2*p.backoff, p.maxBackoff)
	return a
}
