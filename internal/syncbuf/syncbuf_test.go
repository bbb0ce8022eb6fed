package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// inParallel runs f times times in each of workers goroutines at once and
// waits for them all.
func inParallel(workers, times int, f func()) {
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < times; j++ {
				f()
			}
		}()
	}
	wg.Wait()
}

// TestConcurrentWrites: writers in parallel with a reader lose nothing
// (run with -race to see the locking matter).
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	inParallel(8, 100, func() {
		b.Write([]byte("x"))
		_ = b.String()
	})
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Fatalf("got %d bytes, want 800", len(got))
	}
}
