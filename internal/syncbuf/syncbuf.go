// Package syncbuf serialises writes that several goroutines make to one
// writer: Writer wraps any io.Writer (tracecell run's notices and the
// command's stderr copy share one when it is not a file), and Buffer is a
// bytes.Buffer that may also be read while they write (the tests' sink for
// loggers and the stderr of servers run in-process).
package syncbuf

import (
	"bytes"
	"io"
	"sync"
)

// Writer makes each Write to W whole and in turn.
type Writer struct {
	mu sync.Mutex
	W  io.Writer
}

// Write writes p to W under the lock.
func (l *Writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}

// Buffer is safe for concurrent Write and String. The zero value is empty
// and ready to use.
type Buffer struct {
	w Writer
	b bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.b.Write(p)
}

// String returns what has been written so far.
func (s *Buffer) String() string {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.b.String()
}
