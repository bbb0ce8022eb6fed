// Package worker runs one stateful Python worker (worker.py, embedded) under
// the tracer and executes code in it, as a Jupyter kernel would, with every
// denial attributed to the execution that caused it.
//
// Process shape (one set per session):
//
//	tracecell serve ──(stdin/stdout JSON lines)──▶ tracecell worker-host ──ptrace──▶ python3 worker.py
//	                                                 │ owns the tracer, the worker's control
//	                                                 │ pipes (fd 3/4) and its stdout/stderr
//
// The worker-host is this binary re-executed (HostArg, an init() hook, the
// runc pattern), so a crash in one session's tracer cannot take the server
// down, and one tracer per process keeps wait4(-1) unambiguous. The
// worker-host dies with the server (Pdeathsig) and the worker with the
// worker-host (PTRACE_O_EXITKILL).
//
// This file is the contract between the server and this package.
package worker

import (
	"time"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
)

// HostConfig is everything a worker-host needs. Policy comes only from the
// operator (Settings); nothing in an execution request can widen it.
type HostConfig struct {
	// Settings is the operator's policy. The worker-host prepends Sandbox to
	// Settings.Write and runs with Cwd = Sandbox.
	Settings config.Settings `json:"settings"`
	// Sandbox is the session's sandbox directory; it must exist.
	Sandbox string `json:"sandbox"`
	// Python is the interpreter; "" means /usr/bin/python3 if it exists,
	// else python3 looked up in PATH.
	Python string `json:"python,omitempty"`
	// Preload are modules imported when the worker starts (numpy, pandas,
	// matplotlib.pyplot), before Start returns. A module that fails to
	// import is reported in Info.PreloadErrors, not fatal.
	Preload []string `json:"preload,omitempty"`
	// MaxOutput caps stdout and stderr per execution, each (bytes; 0: 1 MiB).
	// Beyond it output is dropped and Result.Truncated set.
	MaxOutput int `json:"max_output,omitempty"`
	// Grace is how long an interrupted execution may take to stop before
	// the worker's whole tree is killed (0: 2s).
	Grace time.Duration `json:"grace,omitempty"`
	// DefaultTimeout applies when an ExecRequest has none (0: 60s).
	DefaultTimeout time.Duration `json:"default_timeout,omitempty"`
	// MaxArtifacts caps the artifacts listed per execution (0: 200).
	MaxArtifacts int `json:"max_artifacts,omitempty"`
	// Unreachable are endpoints the worker's tree may never connect or
	// send to, whatever Settings.Net says: the server's own listeners.
	Unreachable []policy.Endpoint `json:"unreachable,omitempty"`
}

// ExecRequest is one execution.
type ExecRequest struct {
	Code    string        `json:"code"`
	Timeout time.Duration `json:"timeout,omitempty"` // 0: HostConfig.DefaultTimeout
}

// Result is what one execution produced; its JSON is the HTTP API's result
// shape.
type Result struct {
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// Result is the repr of the value of the last expression, as Jupyter
	// shows it; nil when the code does not end in an expression (or it is None).
	Result *string    `json:"result"`
	Error  *ExecError `json:"error"`
	// Denials are the tracer's denials (and audits) made while this
	// execution ran, in order.
	Denials []report.Event `json:"denials"`
	// DenialsNotListed counts the denials past the list's cap (1000 per
	// execution): counted by the tracer, not listed (Truncated is set and
	// a note says so).
	DenialsNotListed int        `json:"denials_not_listed,omitempty"`
	Artifacts        []Artifact `json:"artifacts"`
	// DurationMS is the wall time of the execution in the worker.
	DurationMS float64 `json:"duration_ms"`
	// TimedOut: the timeout fired (the code got a KeyboardInterrupt, or, if
	// it did not stop within the grace period, the tree was killed).
	TimedOut bool `json:"timed_out"`
	// SessionLost: the worker died or was killed; the namespace is gone.
	// LostReason says why in one line ("timeout: did not stop within 2s of
	// the interrupt; the worker was killed", "worker killed by SIGSEGV",
	// "worker exited with status 3 (os._exit?)", "worker killed by SIGKILL:
	// out of memory? (memory limit 2 GiB)").
	SessionLost bool   `json:"session_lost"`
	LostReason  string `json:"lost_reason,omitempty"`
	// Truncated is set when stdout or stderr exceeded MaxOutput, the
	// artifact list exceeded MaxArtifacts, the artifact scan stopped at its
	// cap (20000 sandbox entries), or more than 1000 denials were made.
	Truncated bool `json:"truncated"`
	// Notes are what the reader of the result should know that is not the
	// code's output, one line each: what was truncated and by how much, a
	// figure that could not be saved, sys.stdout or fd 1 replaced by the
	// code and restored by the worker.
	Notes []string `json:"notes,omitempty"`
}

// ExecError is an exception raised by the code.
type ExecError struct {
	Name      string `json:"name"`      // e.g. "ZeroDivisionError", "PermissionError"
	Message   string `json:"message"`   // str(exception)
	Traceback string `json:"traceback"` // formatted, the worker's own frames removed
}

// Artifact is a file created or changed in the sandbox by one execution, or
// a matplotlib figure the worker saved under outputs/.
type Artifact struct {
	Path   string `json:"path"` // relative to the sandbox, '/'-separated
	Size   int64  `json:"size"`
	Change string `json:"change"`         // "created" or "modified"
	Kind   string `json:"kind"`           // "file" or "figure"
	MIME   string `json:"mime,omitempty"` // by extension; "image/png" for figures
}

// Info describes a running worker.
type Info struct {
	HostPid       int               `json:"host_pid"`
	WorkerPid     int               `json:"worker_pid"`
	Python        string            `json:"python"`         // interpreter path
	PythonVersion string            `json:"python_version"` // "3.11.2"
	Sandbox       string            `json:"sandbox"`
	Preloaded     []string          `json:"preloaded"`
	PreloadErrors map[string]string `json:"preload_errors,omitempty"`
	Started       time.Time         `json:"started"`
	StartupMS     float64           `json:"startup_ms"` // Start until ready
}
