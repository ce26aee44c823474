//go:build !race

package conformance

// raceEnabled: the race detector slows our pure-Go forward pass ~14×.
const raceEnabled = false
