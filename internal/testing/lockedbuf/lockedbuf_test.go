package lockedbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWriteRead: writers and a reader at once lose no write
// (run under -race to check the locking itself).
func TestConcurrentWriteRead(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	const writers, lines = 4, 200
	for range writers {
		wg.Go(func() {
			for range lines {
				b.Write([]byte("line\n"))
			}
		})
	}
	stop, read := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(read)
		for {
			select {
			case <-stop:
				return
			default:
				_ = b.String()
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-read
	if got := b.String(); got != strings.Repeat("line\n", writers*lines) {
		t.Errorf("got %d bytes, want %d", len(got), writers*lines*5)
	}
}
