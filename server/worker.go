package server

import (
	"context"

	"github.com/tracecell/tracecell/worker"
)

// Worker is what the server needs of one running Python worker. The real
// one is *worker.Proc (see RealStarter); tests use a fake.
type Worker interface {
	// Execute runs one request. A dead worker gives a Result with
	// SessionLost set and a nil error; an error means the request could not
	// be sent at all (busy, closed).
	Execute(ctx context.Context, req worker.ExecRequest) (*worker.Result, error)
	Interrupt() error
	Info() worker.Info
	Alive() bool
	Done() <-chan struct{}
	// Close kills the worker's whole tree; idempotent.
	Close() error
}

// Starter starts a worker for cfg and returns once it is ready (preload
// done).
type Starter func(ctx context.Context, cfg worker.HostConfig) (Worker, error)
