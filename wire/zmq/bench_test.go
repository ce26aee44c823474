//go:build cgo

package zmq_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tandem-llm/tandem/wire/zmq"
)

// BenchmarkRoundTrip measures one DEALER → ROUTER → DEALER echo over ipc:// in one
// process, including both Conns' goroutine hand-offs.
func BenchmarkRoundTrip(b *testing.B) {
	for _, size := range []int{64, 4096} {
		b.Run(fmt.Sprintf("ipc/%dB", size), func(b *testing.B) {
			router, err := zmq.BindRouter("ipc://" + filepath.Join(b.TempDir(), "router"))
			if err != nil {
				b.Fatal(err)
			}
			defer router.Close()
			echoDone := make(chan struct{})
			go func() {
				defer close(echoDone)
				for msg := range router.Recv() {
					_ = router.Send(msg)
				}
			}()
			dealer, err := zmq.DialDealer(router.Endpoint())
			if err != nil {
				b.Fatal(err)
			}
			defer dealer.Close()
			payload := make([]byte, size)
			b.SetBytes(int64(size))
			for b.Loop() {
				if err := dealer.Send([][]byte{payload}); err != nil {
					b.Fatal(err)
				}
				<-dealer.Recv()
			}
			b.StopTimer()
			_ = dealer.Close()
			_ = router.Close()
			<-echoDone
		})
	}
}
