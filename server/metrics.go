package server

import (
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
)

// metrics are exported in the Prometheus text format (version 0.0.4),
// written by hand: a few counters, gauges and one histogram.
type metrics struct {
	sessionsActive  atomic.Int64
	sessionsCreated atomic.Int64
	sessionsDeleted atomic.Int64
	sessionsReaped  atomic.Int64
	execSession     atomic.Int64
	execOneshot     atomic.Int64
	execTimedOut    atomic.Int64
	execLost        atomic.Int64
	execErrors      atomic.Int64 // code that raised
	denials         atomic.Int64
	workerRestarts  atomic.Int64
	workersStarted  atomic.Int64
	startFailures   atomic.Int64
	poolReady       atomic.Int64
	poolMisses      atomic.Int64
	copies          atomic.Int64
	copiedBytes     atomic.Int64

	// cell.go, drain.go
	lostEarlierBoot atomic.Int64
	lostDrain       atomic.Int64
	lostShutdown    atomic.Int64
	misrouted       atomic.Int64
	missNever       atomic.Int64
	missDeleted     atomic.Int64
	missExpired     atomic.Int64
	missLost        atomic.Int64
	missDraining    atomic.Int64

	hmu     sync.Mutex
	buckets []float64 // upper bounds, seconds
	counts  []uint64  // per bucket (not cumulative)
	sum     float64
	count   uint64
}

func (m *metrics) init() {
	m.buckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	m.counts = make([]uint64, len(m.buckets))
}

func (m *metrics) observe(seconds float64) {
	m.hmu.Lock()
	defer m.hmu.Unlock()
	for i, b := range m.buckets {
		if seconds <= b {
			m.counts[i]++
			break
		}
	}
	m.sum += seconds
	m.count++
}

func (m *metrics) write(w io.Writer, poolSize int) {
	g := func(name, help, typ string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", name, help, name, typ, name, v)
	}
	g("tracecell_sessions_active", "Sessions currently open.", "gauge", m.sessionsActive.Load())
	g("tracecell_sessions_created_total", "Sessions created.", "counter", m.sessionsCreated.Load())
	g("tracecell_sessions_deleted_total", "Sessions deleted by a client.", "counter", m.sessionsDeleted.Load())
	g("tracecell_sessions_reaped_total", "Sessions closed for being idle.", "counter", m.sessionsReaped.Load())
	fmt.Fprintf(w, "# HELP tracecell_executions_total Executions run, by kind (session or oneshot).\n# TYPE tracecell_executions_total counter\n")
	fmt.Fprintf(w, "tracecell_executions_total{kind=\"session\"} %d\n", m.execSession.Load())
	fmt.Fprintf(w, "tracecell_executions_total{kind=\"oneshot\"} %d\n", m.execOneshot.Load())
	g("tracecell_executions_timed_out_total", "Executions stopped by their timeout.", "counter", m.execTimedOut.Load())
	g("tracecell_executions_session_lost_total", "Executions whose worker died or was killed.", "counter", m.execLost.Load())
	g("tracecell_executions_raised_total", "Executions whose code raised an exception.", "counter", m.execErrors.Load())
	g("tracecell_denials_total", "Actions blocked (or audited) by the policy during executions.", "counter", m.denials.Load())
	g("tracecell_worker_restarts_total", "Workers replaced after a loss or a reset.", "counter", m.workerRestarts.Load())
	g("tracecell_workers_started_total", "Workers started (pool, sessions, restarts).", "counter", m.workersStarted.Load())
	g("tracecell_worker_start_failures_total", "Worker starts that failed.", "counter", m.startFailures.Load())
	g("tracecell_pool_size", "Warm workers the pool keeps (--pool-size).", "gauge", int64(poolSize))
	g("tracecell_pool_ready", "Warm workers ready now.", "gauge", m.poolReady.Load())
	g("tracecell_pool_misses_total", "Sessions or one-shot runs that found the pool empty and started a worker themselves.", "counter", m.poolMisses.Load())
	g("tracecell_copies_total", "Copies into sandboxes.", "counter", m.copies.Load())
	g("tracecell_copied_bytes_total", "Bytes copied into sandboxes.", "counter", m.copiedBytes.Load())

	m.hmu.Lock()
	defer m.hmu.Unlock()
	const h = "tracecell_execution_duration_seconds"
	fmt.Fprintf(w, "# HELP %s Wall time of executions as the server saw them.\n# TYPE %s histogram\n", h, h)
	var cum uint64
	for i, b := range m.buckets {
		cum += m.counts[i]
		fmt.Fprintf(w, "%s_bucket{le=\"%s\"} %d\n", h, fmtFloat(b), cum)
	}
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %s\n%s_count %d\n", h, m.count, h, fmtFloat(m.sum), h, m.count)
}

func fmtFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return fmt.Sprintf("%g", f)
}
