package tracer

import (
	"runtime"
	"time"
)

// The wait4 spin.
//
// After answering a stop the loop polls wait4 (WNOHANG) for a while before
// it blocks in wait4: a program that makes checked calls in a row stops
// again within microseconds, and waking a tracer asleep in wait4 costs a
// cross-CPU interrupt (expensive in virtual machines). The spin pays only
// when that stop comes within it and a CPU is free to spin on. Measured on
// a 2-vCPU VM (bench/results/2026-11-26-breakdown.md, "The spin"; the C
// floor tracer with the same spin):
//
//   - 3000 files on tmpfs, one thread, quiet machine (tracecell): no spin
//     1.13 s, 50 µs 0.92 s, 200 µs 0.85 s (bare 0.19 s): the next stop is
//     microseconds away and the spin catches it.
//   - 1000 files on ext4: ext4 spends ~400 µs per file, so every spin
//     times out: 54 of the floor's 75 µs of tracer CPU per checked call
//     were the spin (21 µs with it off), taken from the tree on 2 CPUs.
//   - 8 threads × 300 files on tmpfs: with 8 runnable threads on 2 vCPUs
//     the spin takes a CPU the tree needs: floor min 0.72x bare with a
//     100 µs spin, 0.60x without (medians 1.49x and 0.84x); pollWait4 was
//     61 % of tracecell's CPU there under --no-freeze.
//
// Hence two rules (spinBudget): no spin while the tree has as many tasks
// that may be running as there are CPUs (the tracer's spin would take one
// of theirs), and none after spinMissLimit waits in a row whose stop came
// later than spinFor (it would have timed out), until a stop comes within
// spinFor again: a blocking wait that returns that soon still tells.
//
// Every task is counted, not only those that stopped lately: a thread that
// makes no checked calls may still be running. After `import numpy` the
// helper thread of OpenBLAS waits for work in a sched_yield loop; 3000
// files on tmpfs after that import, counting only tasks that stopped in
// the last 20 ms (so spinning for the one thread that stops): median
// 456 ms, min 344 ms; counting both (no spin on 2 CPUs): 400 ms, 256 ms
// (15 interleaved runs, load 1.7–4). Without numpy, one thread, the spin
// wins: 294 ms against 324 ms with none (12 runs).
//
// The price of the CPU rule: tracecell's 8 threads × 300 files on tmpfs
// (most threads wait for the GIL, so fewer run than the rule counts) at
// load 1.3–1.7, 20 interleaved runs: median 193.5 ms with no spin (this
// rule), 186.9 ms with a 20 µs one, 178.0 ms spinning 100 µs; tracer CPU
// 107, 118, 122 ms. Under load (6–13) the floor tracer showed the
// opposite and by more (medians 0.84x bare without a spin, 1.49x with):
// which wins depends on whether the machine has a CPU to spare, which
// the tree's task count only approximates.

// spinFor is how long the loop polls for the next stop before it blocks,
// when it spins at all (spinBudget): it bounds the CPU the tracer burns
// per stop (the measurements above).
var spinFor = 100 * time.Microsecond

// spinMissLimit is how many waits in a row may end later than spinFor
// before the loop stops spinning. 2: one slow call (a first open of a
// file not cached) does not turn the spin off; a disk workload, whose
// every stop is >100 µs away, loses it after two.
const spinMissLimit = 2

// spinBudget is how long the loop polls wait4 before it blocks: spinFor,
// or 0 (block at once) when running, the tree's tasks that may be running
// (resumed by the tracer and not seen to stop since), leave no CPU of cpus
// for the spin, or when the last misses waits in a row all ended later
// than spinFor. A pure function of its inputs.
func spinBudget(misses, running, cpus int) time.Duration {
	if running >= cpus || misses >= spinMissLimit {
		return 0
	}
	return spinFor
}

// spinPolicy is the loop's state for spinBudget. Only the tracer thread
// uses it.
type spinPolicy struct {
	// cpus is the number of CPUs this process may run on (the affinity
	// mask at start, runtime.NumCPU): the tree inherits it.
	cpus int
	// misses counts the waits in a row whose stop came later than
	// spinFor after the wait began, up to spinMissLimit.
	misses int
}

func newSpinPolicy() spinPolicy { return spinPolicy{cpus: runtime.NumCPU()} }

// budget is spinBudget for running tasks that may be running.
func (p *spinPolicy) budget(running int) time.Duration {
	return spinBudget(p.misses, running, p.cpus)
}

// observe records that a wait's stop came waited after the wait began,
// whether the loop spun or blocked.
func (p *spinPolicy) observe(waited time.Duration) {
	switch {
	case waited <= spinFor:
		p.misses = 0
	case p.misses < spinMissLimit:
		p.misses++
	}
}
