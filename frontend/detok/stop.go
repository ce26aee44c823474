package detok

import (
	"strings"
	"unicode/utf8"
)

// StopChecker cuts a text stream at the first stop string. Build it with
// NewStopChecker; it is not safe for concurrent use.
//
// The stop string that completes earliest wins; when two complete at the same
// character the one that starts earlier (the longer) wins, whatever their
// order in the list. Unless the stop string is included in the output,
// Push holds back the longest tail of the text that is a proper prefix of
// some stop string (so at most maxLen(stop)-1 bytes), and releases it as soon
// as it can no longer begin a match.
type StopChecker struct {
	stops   []string // non-empty stop strings
	include bool     // include the matched stop string in the output
	maxLen  int      // longest stop string, bytes

	// buf is text already pushed that may still take part in a match. Without
	// include it is the held-back tail, none of it emitted. With include it
	// is the last maxLen-1 bytes of emitted text plus nothing else, kept as
	// search context; numEmitted is then len(buf) between calls.
	buf        string
	numEmitted int // bytes at the start of buf already emitted

	stopped bool
	which   string // the stop string that matched, once stopped
}

// NewStopChecker returns a checker for stops; empty strings in stops are
// ignored (request validation rejects them). includeStopStr keeps the matched
// stop string at the end of the output (include_stop_str_in_output). With no
// stop strings Push returns every delta unchanged.
func NewStopChecker(stops []string, includeStopStr bool) *StopChecker {
	s := &StopChecker{include: includeStopStr}
	for _, stop := range stops {
		if stop == "" {
			continue
		}
		s.stops = append(s.stops, stop)
		s.maxLen = max(s.maxLen, len(stop))
	}
	return s
}

// Push appends delta to the stream and returns the text that is safe to emit
// now. When a stop string completes, stopped is true, which is that string,
// and emit ends just before it (or just after it, with includeStopStr); the
// text after the stop string is dropped. Once stopped, Push returns ("", true,
// which) for any further delta.
func (s *StopChecker) Push(delta string) (emit string, stopped bool, which string) {
	if s.stopped {
		return "", true, s.which
	}
	if len(s.stops) == 0 {
		return delta, false, ""
	}
	s.buf += delta

	if start, end, stop, ok := s.earliest(); ok {
		cut := start
		if s.include {
			cut = end
		}
		emit = s.buf[s.numEmitted:cut]
		s.stopped, s.which = true, stop
		s.buf, s.numEmitted = "", 0
		return emit, true, stop
	}

	if s.include {
		emit = s.buf[s.numEmitted:]
		if keep := s.maxLen - 1; len(s.buf) > keep {
			s.buf = s.buf[len(s.buf)-keep:]
		}
		s.numEmitted = len(s.buf)
		return emit, false, ""
	}
	cut := len(s.buf) - s.holdback()
	for cut > 0 && cut < len(s.buf) && !utf8.RuneStart(s.buf[cut]) {
		cut-- // never split a character (only possible for stop strings that are not valid UTF-8)
	}
	emit, s.buf = s.buf[:cut], s.buf[cut:]
	return emit, false, ""
}

// Flush returns the held-back text at the natural end of generation (no stop
// string matched). It returns "" once stopped, and the checker is empty
// afterwards.
func (s *StopChecker) Flush() string {
	if s.stopped {
		return ""
	}
	emit := s.buf[s.numEmitted:]
	s.buf, s.numEmitted = "", 0
	return emit
}

// Stopped reports whether a stop string has matched, and which.
func (s *StopChecker) Stopped() (which string, ok bool) { return s.which, s.stopped }

// earliest finds the match in buf that completes first; ties go to the
// earlier start. start and end are byte offsets into buf.
func (s *StopChecker) earliest() (start, end int, stop string, ok bool) {
	for _, st := range s.stops {
		i := strings.Index(s.buf, st)
		if i < 0 {
			continue
		}
		e := i + len(st)
		if !ok || e < end || (e == end && i < start) {
			start, end, stop, ok = i, e, st, true
		}
	}
	return start, end, stop, ok
}

// holdback returns the length of the longest tail of buf that is a proper
// prefix of some stop string.
func (s *StopChecker) holdback() int {
	for k := min(len(s.buf), s.maxLen-1); k > 0; k-- {
		tail := s.buf[len(s.buf)-k:]
		for _, st := range s.stops {
			if len(st) > k && st[:k] == tail {
				return k
			}
		}
	}
	return 0
}
