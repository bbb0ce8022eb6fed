package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/worker"
)

// fakeWorker understands a few "programs":
//
//	sleep:MS      run for MS milliseconds (interrupted by the timeout or Close)
//	die           the worker dies mid-execution (SessionLost)
//	deny:PATH     one denial of a write to PATH
//	set:K=V / get:K   namespace state
//	anything else echoes the code as the result
type fakeWorker struct {
	cfg     worker.HostConfig
	id      int
	mu      sync.Mutex
	ns      map[string]string
	running atomic.Bool
	dead    chan struct{}
	once    sync.Once
	closed  atomic.Bool
}

type fakeStarter struct {
	mu      sync.Mutex
	started []*fakeWorker
	fail    atomic.Bool
	delay   time.Duration
	n       atomic.Int64
}

func (f *fakeStarter) start(ctx context.Context, cfg worker.HostConfig) (Worker, error) {
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.fail.Load() {
		return nil, errors.New("fake start failure")
	}
	w := &fakeWorker{cfg: cfg, id: int(f.n.Add(1)), ns: map[string]string{}, dead: make(chan struct{})}
	f.mu.Lock()
	f.started = append(f.started, w)
	f.mu.Unlock()
	return w, nil
}

// alive counts workers not closed.
func (f *fakeStarter) alive() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, w := range f.started {
		if !w.closed.Load() {
			n++
		}
	}
	return n
}

func (w *fakeWorker) kill() { w.once.Do(func() { close(w.dead) }) }

func (w *fakeWorker) Execute(ctx context.Context, req worker.ExecRequest) (*worker.Result, error) {
	if w.closed.Load() {
		return nil, errors.New("fake: closed")
	}
	if !w.running.CompareAndSwap(false, true) {
		return nil, errors.New("fake: busy")
	}
	defer w.running.Store(false)
	start := time.Now()
	res := &worker.Result{}
	code := req.Code
	switch {
	case strings.HasPrefix(code, "sleep:"):
		var msec int
		fmt.Sscanf(code, "sleep:%d", &msec)
		timeout := req.Timeout
		if timeout == 0 {
			timeout = w.cfg.DefaultTimeout
		}
		select {
		case <-time.After(time.Duration(msec) * time.Millisecond):
		case <-time.After(timeout):
			res.TimedOut = true
		case <-w.dead:
			res.SessionLost, res.LostReason = true, "worker killed by SIGKILL"
		case <-ctx.Done():
			res.Error = &worker.ExecError{Name: "KeyboardInterrupt"}
		}
	case code == "die":
		w.kill()
		res.SessionLost, res.LostReason = true, "worker killed by SIGKILL"
	case code == "deny-past-cap":
		// A real worker lists at most 1000 denials and counts the rest.
		res.Denials = []report.Event{{Decision: "deny", Syscall: "openat", Rule: "outside-writable-roots"}}
		res.DenialsNotListed, res.Truncated = 1500, true
	case strings.HasPrefix(code, "deny:"):
		p := strings.TrimPrefix(code, "deny:")
		res.Denials = []report.Event{{Decision: "deny", Syscall: "openat", Rule: "outside-writable-roots"}}
		res.Denials[0].Paths = nil
		res.Stderr = "PermissionError: " + p
		res.Error = &worker.ExecError{Name: "PermissionError", Message: p}
	case strings.HasPrefix(code, "set:"):
		k, v, _ := strings.Cut(strings.TrimPrefix(code, "set:"), "=")
		w.mu.Lock()
		w.ns[k] = v
		w.mu.Unlock()
	case strings.HasPrefix(code, "get:"):
		w.mu.Lock()
		v, ok := w.ns[strings.TrimPrefix(code, "get:")]
		w.mu.Unlock()
		if !ok {
			res.Error = &worker.ExecError{Name: "NameError", Message: "name is not defined"}
		} else {
			res.Result = &v
		}
	default:
		c := code
		res.Result = &c
	}
	res.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	return res, nil
}

func (w *fakeWorker) Interrupt() error { return nil }
func (w *fakeWorker) Info() worker.Info {
	return worker.Info{HostPid: 1000 + w.id, WorkerPid: 2000 + w.id, Sandbox: w.cfg.Sandbox, Python: "/fake/python3"}
}
func (w *fakeWorker) Alive() bool {
	select {
	case <-w.dead:
		return false
	default:
		return !w.closed.Load()
	}
}
func (w *fakeWorker) Done() <-chan struct{} { return w.dead }
func (w *fakeWorker) Close() error {
	w.closed.Store(true)
	w.kill()
	return nil
}
