package config

import (
	"fmt"
	"slices"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/tracer"
)

// TracerConfig compiles the plan's policy and returns the tracer
// configuration of the run: the command, its policy and its limits. It is
// the one place a plan becomes a tracer configuration, for `tracecell run`
// and the session worker alike; the caller adds how the run is wired to it
// (stdio, OnEvent, Log, OnStart, ExtraFiles, TraceAll, MaxDenials).
//
// Changes to p.Policy (a session's Unreachable or PrivateScratch) must be
// made before the call: the policy is compiled here.
func (p *Plan) TracerConfig() (*tracer.Config, error) {
	pol, err := policy.New(p.Policy)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return &tracer.Config{
		Path:         p.Path,
		Argv:         p.Argv,
		Env:          p.Env,
		Dir:          p.Cwd,
		Policy:       pol,
		Rlimits:      slices.Clone(p.Rlimits),
		Timeout:      p.Timeout,
		MaxProcs:     p.MaxProcs,
		InitialChain: p.InitialChain,
		NoFreeze:     p.NoFreeze,
		KeepCaps:     p.KeepCaps,
	}, nil
}

// RlimitCur is the soft limit of resource (unix.RLIMIT_*) in the plan, 0
// when the plan does not set it.
func (p *Plan) RlimitCur(resource int) uint64 {
	for _, r := range p.Rlimits {
		if r.Resource == resource {
			return r.Cur
		}
	}
	return 0
}
