package worker

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// stream is one of the worker's output pipes, split into executions at
// their markers. It is always drained, so the worker never blocks on it.
type stream struct {
	name string
	r    *os.File
	max  int

	mu      sync.Mutex
	pending []byte // read, not yet assigned: possibly the start of a marker
	buf     []byte // the current execution's output (at most max)
	dropped int64
	marker  []byte        // the current execution's marker, nil if none
	found   chan struct{} // closed when marker was seen
	done    []byte        // output up to the marker
	doneDr  int64
	eof     chan struct{}
}

func newStream(name string, r *os.File, max int) *stream {
	return &stream{name: name, r: r, max: max, eof: make(chan struct{})}
}

func (s *stream) read() {
	defer close(s.eof)
	defer s.r.Close()
	chunk := make([]byte, 64<<10)
	for {
		n, err := s.r.Read(chunk)
		s.mu.Lock()
		s.pending = append(s.pending, chunk[:n]...)
		if err != nil {
			s.scan()
			s.add(s.pending)
			s.pending = nil
			s.mu.Unlock()
			if err != io.EOF {
				// Not expected on a pipe; the stream ends either way.
				fmt.Fprintf(os.Stderr, "%s: %v\n", s.name, err)
			}
			return
		}
		s.scan()
		s.mu.Unlock()
	}
}

// add appends to the current output up to the cap. Precondition: s.mu held.
func (s *stream) add(b []byte) {
	if room := s.max - len(s.buf); room > 0 {
		if len(b) <= room {
			s.buf = append(s.buf, b...)
			return
		}
		s.buf = append(s.buf, b[:room]...)
		b = b[room:]
	}
	s.dropped += int64(len(b))
}

// scan assigns pending bytes: up to the marker to the finished execution,
// the rest to the next one, except a tail that may be the start of a marker.
// Precondition: s.mu held.
func (s *stream) scan() {
	if s.marker != nil {
		if i := bytes.Index(s.pending, s.marker); i >= 0 {
			s.add(s.pending[:i])
			s.done, s.doneDr = s.buf, s.dropped
			s.buf, s.dropped = nil, 0
			s.pending = append([]byte{}, s.pending[i+len(s.marker):]...)
			s.marker = nil
			close(s.found)
		}
	}
	keep := len(s.pending)
	for i := max(0, len(s.pending)-markerLen+1); i < len(s.pending); i++ {
		if s.pending[i] == markerPrefix[0] && couldBeMarker(s.pending[i:]) {
			keep = i
			break
		}
	}
	s.add(s.pending[:keep])
	s.pending = append(s.pending[:0], s.pending[keep:]...)
}

// couldBeMarker: b (shorter than a marker) may be the start of one.
func couldBeMarker(b []byte) bool {
	n := min(len(b), len(markerPrefix))
	if !bytes.Equal(b[:n], markerPrefix[:n]) {
		return false
	}
	for _, c := range b[n:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// expect starts an execution: its output ends at marker.
func (s *stream) expect(marker []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marker = marker
	s.found = make(chan struct{})
	s.done, s.doneDr = nil, 0
	s.scan()
}

// take waits up to d for the marker and returns the execution's output, the
// number of bytes dropped beyond the cap, and whether the marker was seen
// (if not, the output so far is returned and the marker forgotten).
func (s *stream) take(d time.Duration) ([]byte, int64, bool) {
	s.mu.Lock()
	found := s.found
	s.mu.Unlock()
	seen := true
	if found != nil {
		t := time.NewTimer(d)
		select {
		case <-found:
		case <-s.eof:
			select {
			case <-found:
			default:
				seen = false
			}
		case <-t.C:
			seen = false
		}
		t.Stop()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !seen {
		s.done, s.doneDr = s.buf, s.dropped
		s.buf, s.dropped = nil, 0
		s.marker, s.found = nil, nil
	}
	b, n := s.done, s.doneDr
	s.done, s.doneDr = nil, 0
	return b, n, seen
}

// takeAll waits up to d for the end of the stream (the worker died) and
// returns everything not yet taken.
func (s *stream) takeAll(d time.Duration) ([]byte, int64, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	ended := true
	select {
	case <-s.eof:
	case <-t.C:
		ended = false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := append(s.done, s.buf...)
	b = append(b, s.pending...)
	n := s.doneDr + s.dropped
	s.done, s.buf, s.pending, s.doneDr, s.dropped = nil, nil, nil, 0, 0
	s.marker = nil
	return b, n, ended
}
