package cpu

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that Close stops every worker goroutine.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
