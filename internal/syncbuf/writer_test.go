package syncbuf

import (
	"sync/atomic"
	"testing"
	"time"
)

// overlapDetector fails when two Writes run at once.
type overlapDetector struct {
	in, overlaps atomic.Int32
}

func (o *overlapDetector) Write(p []byte) (int, error) {
	if o.in.Add(1) > 1 {
		o.overlaps.Add(1)
	}
	time.Sleep(10 * time.Microsecond)
	o.in.Add(-1)
	return len(p), nil
}

// TestWriterSerialises: writes from many goroutines never overlap in the
// underlying writer (they do without Writer: the detector sees it).
func TestWriterSerialises(t *testing.T) {
	run := func(w interface{ Write([]byte) (int, error) }) {
		inParallel(8, 200, func() { w.Write([]byte("line\n")) })
	}
	bare := &overlapDetector{}
	run(bare)
	if bare.overlaps.Load() == 0 {
		t.Skip("the writes never overlapped unserialised here: nothing to show")
	}
	d := &overlapDetector{}
	run(&Writer{W: d})
	if n := d.overlaps.Load(); n != 0 {
		t.Fatalf("%d overlapping writes through Writer", n)
	}
}
