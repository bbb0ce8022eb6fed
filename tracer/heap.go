package tracer

import (
	"os"
	"runtime/debug"
)

// heapLimit is the soft limit LimitHeap gives the Go runtime of a tracer
// process. A run's tracer holds a few megabytes, but what it keeps for the
// tree (the scratch ledger, the report's denials) is capped in entries and
// bytes, not in the garbage the Go collector leaves between cycles: with
// GOGC's default of 100 a tree that made the largest of those (3.5 KB
// names in /dev/shm up to the ledger's cap) took tracecell to 175 MB, 107
// MB with this limit. The limit only makes the collector run sooner as
// the heap nears it; it fails nothing.
const heapLimit = 96 << 20

// LimitHeap sets heapLimit as the runtime's soft memory limit unless the
// operator set GOMEMLIMIT. For the processes that trace (run, the session
// worker-host), not for the session server, whose heap grows with its
// sessions.
func LimitHeap() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(heapLimit)
	}
}
