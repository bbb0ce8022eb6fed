package tracer

import (
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
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
// Hence two rules (spinBudget): no spin while as many of the tree's tasks
// may be running as there are CPUs (the tracer's spin would take one of
// theirs), and none after spinMissLimit waits in a row whose stop came
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
// But a task asleep in a call takes no CPU: tracecell's 8 threads × 300
// files on tmpfs, where most threads wait for the GIL, at load 1.3–1.7
// (20 interleaved runs): median 193.5 ms with no spin (8 tasks on 2
// CPUs), 186.9 ms with a 20 µs one, 178.0 ms spinning 100 µs; tracer CPU
// 107, 118, 122 ms. Under load (6–13) the floor tracer showed the
// opposite and by more (medians 0.84x bare without a spin, 1.49x with):
// what decides is whether a CPU is free. So the tree's count is capped by
// the machine's: the runnable tasks of /proc/loadavg less the tracer,
// read at most every spinRecount (3.0–3.6 µs a read, timed in a loop).
// Same workload, load 1.2–1.9, against the tree's count alone: medians
// 211 vs 240, 173.5 vs 194.6, 230 vs 238 ms (15, 15, 12 runs), tracer
// CPU 4–8 % higher. A thread spinning for work without stopping (the
// OpenBLAS one) is runnable, so the machine's count still sees it.

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

// spinRecount: how often the loop asks the machine how many tasks run.
const spinRecount = time.Millisecond

// loadavgRunning is the running count of a /proc/loadavg text ("0.52 0.58
// 0.59 3/467 12345": 3), -1 when there is none.
func loadavgRunning(b []byte) int {
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return -1
	}
	r, _, ok := strings.Cut(f[3], "/")
	n, err := strconv.Atoi(r)
	if !ok || err != nil {
		return -1
	}
	return n
}

// loadavg holds /proc/loadavg's descriptor plus one once it is open (0
// before). It is opened once for the process and read with pread at
// offset 0, which formats the file afresh: two system calls a millisecond
// fewer than opening and closing it (400 of each on the 3000-file
// benchmark). A failed open is tried again at the next read.
var loadavg atomic.Int64

// loadavgFD is /proc/loadavg's descriptor, -1 when it cannot be opened.
func loadavgFD() int {
	if v := loadavg.Load(); v > 0 {
		return int(v - 1)
	}
	fd, err := unix.Open("/proc/loadavg", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	if !loadavg.CompareAndSwap(0, int64(fd)+1) {
		unix.Close(fd) // another tracer of the process opened it first
		return int(loadavg.Load() - 1)
	}
	return fd
}

// machineRunning is how many tasks of the machine are runnable now: the
// running count of /proc/loadavg, nr_running() summed over the CPUs at
// the read (the reader included), -1 when it cannot be read.
func machineRunning() int {
	fd := loadavgFD()
	if fd < 0 {
		return -1
	}
	var buf [128]byte
	n, err := unix.Pread(fd, buf[:], 0)
	if err != nil || n <= 0 {
		return -1
	}
	return loadavgRunning(buf[:n])
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
	// running is the count of the tree's tasks that may be running, taken
	// at countedAt (budget); sample is machineRunning, or a test's.
	running   int
	countedAt time.Time
	sample    func() int
}

func newSpinPolicy() spinPolicy {
	return spinPolicy{cpus: runtime.NumCPU(), sample: machineRunning}
}

// budget is spinBudget for the tree's tasks that may be running at now:
// tasks, the tree's count, but no more than the machine runs besides the
// tracer (machineRunning, taken again every spinRecount): tasks asleep in
// a call (threads waiting for the GIL) take no CPU from the spin.
func (p *spinPolicy) budget(tasks int, now time.Time) time.Duration {
	if now.Sub(p.countedAt) >= spinRecount {
		p.countedAt = now
		p.running = tasks
		if n := p.sample(); n > 0 {
			p.running = min(tasks, n-1)
		}
	}
	return spinBudget(p.misses, p.running, p.cpus)
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
