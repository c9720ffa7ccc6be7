package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWriters: two writers at once (as an exec's stdout and
// stderr copies are) lose no byte; under -race this also shows the
// writes and reads are serialized.
func TestConcurrentWriters(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for _, s := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				_, _ = b.Write([]byte(s))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	got := b.String()
	if len(got) != 2000 || strings.Count(got, "a") != 1000 {
		t.Fatalf("got %d bytes, %d of them a; want 2000 and 1000", len(got), strings.Count(got, "a"))
	}
	b.Reset()
	if b.String() != "" {
		t.Fatalf("after Reset: %q", b.String())
	}
}
