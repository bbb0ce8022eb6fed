package server

import (
	"context"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/tracecell/tracecell/worker"
)

// RealStarter starts real workers (a worker-host re-executed from this
// binary, the Python worker under the tracer). The binary must include
// package worker's init hook, which importing this package does.
//
// A pool worker is started before any session claims it, so its log lines
// (denials, the host's own messages) get the session id through a hook that
// reads the label the server sets when a session takes the worker.
func RealStarter(log zerolog.Logger) Starter {
	return func(ctx context.Context, cfg worker.HostConfig) (Worker, error) {
		rw := &realWorker{}
		l := log.With().Str("sandbox", cfg.Sandbox).Logger().Hook(zerolog.HookFunc(func(e *zerolog.Event, _ zerolog.Level, _ string) {
			if id := rw.label.Load(); id != nil {
				e.Str("session", *id)
			}
		}))
		p, err := worker.Start(ctx, cfg, l)
		if err != nil {
			return nil, err
		}
		rw.Proc = p
		return rw, nil
	}
}

type realWorker struct {
	*worker.Proc
	label atomic.Pointer[string]
}

func (w *realWorker) SetSession(id string) { w.label.Store(&id) }

// labeler is implemented by workers whose logs can carry the session id.
type labeler interface{ SetSession(id string) }

func labelWorker(w Worker, id string) {
	if l, ok := w.(labeler); ok {
		l.SetSession(id)
	}
}
