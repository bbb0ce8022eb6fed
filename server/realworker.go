package server

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/tracecell/tracecell/worker"
)

// RealStarter starts real workers (a worker-host re-executed from this
// binary, the Python worker under the tracer). The binary must include
// package worker's init hook, which importing this package does.
func RealStarter(log zerolog.Logger) Starter {
	return func(ctx context.Context, cfg worker.HostConfig) (Worker, error) {
		p, err := worker.Start(ctx, cfg, log.With().Str("sandbox", cfg.Sandbox).Logger())
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}
