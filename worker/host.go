package worker

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/tracer"
)

// HostArg is the hidden first argument that turns a tracecell (or test)
// binary into a worker-host (see the package comment).
const HostArg = "__tracecell_worker_host"

//go:embed worker.py
var workerPy []byte

// Defaults for the zero values of HostConfig.
const (
	defaultMaxOutput    = 1 << 20
	defaultGrace        = 2 * time.Second
	defaultTimeout      = 60 * time.Second
	defaultMaxArtifacts = 200
	// maxDenials caps Result.Denials per execution; the rest are counted
	// in a note. maxDenialBytes caps their size (paths and argv, which the
	// code chooses: 1000 denials of 4 KiB paths are megabytes of JSON).
	maxDenials     = 1000
	maxDenialBytes = 2 << 20
	// maxWorkerLine caps one message from worker.py on fd 4. The code runs
	// in that process and can write to fd 4 itself: a longer line is a
	// protocol violation and the worker is killed (session lost). A real
	// response is far smaller (worker.py caps the repr and the error).
	maxWorkerLine = 8 << 20
	// Caps on the fields of a response the host passes on (worker.py keeps
	// below them; a forged response may not).
	maxResultChars = 64 << 10
	maxErrorChars  = 256 << 10
	maxNotes       = 64
	maxNoteChars   = 4 << 10
	maxPathChars   = 4 << 10
	// markerWait is how long the host waits for an execution's markers on
	// stdout/stderr after the worker's response (they were written before
	// it, so this is only a guard against a stuck reader).
	markerWait = 5 * time.Second
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == HostArg {
		// Not dumpable before anything else: the host holds the session's
		// configuration, and its /proc is no other program's to read.
		if err := tracer.HideProc(); err != nil {
			fmt.Fprintf(os.Stderr, "tracecell worker-host %d: %v\n", os.Getpid(), err)
			os.Exit(125)
		}
		tracer.LimitHeap()
		os.Exit(hostMain())
	}
}

// hostRequest is a message from the client (Proc) to the worker-host, one
// JSON line on the host's stdin.
type hostRequest struct {
	Op      string        `json:"op"` // "execute", "interrupt", "cancel", "shutdown"
	ID      int64         `json:"id,omitempty"`
	Code    string        `json:"code,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
}

// hostMessage is a message from the worker-host to the client, one JSON line
// on the host's stdout.
type hostMessage struct {
	Type   string  `json:"type"` // "ready", "result", "exit", "fatal"
	ID     int64   `json:"id,omitempty"`
	Info   *Info   `json:"info,omitempty"`
	Result *Result `json:"result,omitempty"`
	// Reason: for "exit", why the worker died; for "fatal", the error.
	Reason string `json:"reason,omitempty"`
}

func hostMain() int {
	log := zerolog.New(os.Stderr).With().Timestamp().Int("host_pid", os.Getpid()).Logger()
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	h := &host{log: log, out: json.NewEncoder(os.Stdout)}
	line, err := in.ReadBytes('\n')
	if err != nil && len(line) == 0 {
		h.fatal(fmt.Errorf("worker-host %d: read the configuration: %w", os.Getpid(), err))
		return 1
	}
	if err := json.Unmarshal(line, &h.cfg); err != nil {
		h.fatal(fmt.Errorf("worker-host %d: decode the configuration: %w", os.Getpid(), err))
		return 1
	}
	return h.run(in)
}

// host is the worker-host: it owns the tracer, the worker's control pipes
// and its output pipes.
type host struct {
	cfg HostConfig
	log zerolog.Logger
	out *json.Encoder

	workerPid int
	memLimit  uint64
	cpuLimit  uint64

	reqW   *os.File
	resps  chan *workerMsg
	stdout *stream
	stderr *stream

	runDone   chan runOutcome
	ran       *runOutcome // what runDone gave, once taken during start (waitRun)
	cancelRun context.CancelFunc

	evMu      sync.Mutex
	events    []report.Event
	evBytes   int
	evDropped int
	// evCarried counts the denials the current execution took over from
	// the time no execution ran (takeIdle): they count against its cap.
	evCarried int
	walks     report.ExecWalks // guarded by evMu

	// protoErr gets why the worker broke the fd 4 protocol.
	protoErr chan string

	cur *execState
	// lostWhy is why the host killed an idle worker.
	lostWhy string
}

type runOutcome struct {
	res *tracer.Result
	err error
}

type execState struct {
	id        int64
	token     string
	started   time.Time
	timer     *time.Timer
	grace     *time.Timer
	timedOut  bool
	cancelled bool
	// running is set when the worker said the code runs; an interrupt
	// before that waits for it (the worker would ignore it).
	running    bool
	intPending bool
	killed     bool
	killReason string
	// idle and idleDropped are the denials listed and counted while no
	// execution ran, before this one started (takeIdle): code an earlier
	// execution left running (a thread, a process) made them.
	idle        []report.Event
	idleDropped int
}

func (h *host) send(m *hostMessage) {
	if err := h.out.Encode(m); err != nil {
		h.log.Error().Err(err).Msg("write to the client")
	}
}

func (h *host) fatal(err error) {
	h.log.Error().Err(err).Msg("worker-host failed")
	h.send(&hostMessage{Type: "fatal", Reason: err.Error()})
}

// run starts the worker and serves the client until the worker dies or the
// client goes away. It returns the host's exit status.
func (h *host) run(in *bufio.Reader) int {
	if h.cfg.MaxOutput <= 0 {
		h.cfg.MaxOutput = defaultMaxOutput
	}
	if h.cfg.Grace <= 0 {
		h.cfg.Grace = defaultGrace
	}
	if h.cfg.DefaultTimeout <= 0 {
		h.cfg.DefaultTimeout = defaultTimeout
	}
	if h.cfg.MaxArtifacts <= 0 {
		h.cfg.MaxArtifacts = defaultMaxArtifacts
	}
	started := time.Now()
	info, err := h.start()
	if err != nil {
		h.fatal(err)
		if h.cancelRun != nil {
			h.cancelRun()
			h.waitRun()
		}
		return 1
	}
	info.StartupMS = float64(time.Since(started).Microseconds()) / 1000
	h.send(&hostMessage{Type: "ready", Info: info})
	h.log.Debug().Int("worker_pid", h.workerPid).Float64("startup_ms", info.StartupMS).Msg("worker ready")

	client := make(chan *hostRequest)
	go func() {
		defer close(client)
		for {
			line, err := in.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var r hostRequest
				if jerr := json.Unmarshal(line, &r); jerr != nil {
					h.log.Error().Err(jerr).Msg("bad request from the client")
				} else {
					client <- &r
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return h.loop(client)
}

// describeExit says in one line why the worker ended.
func (h *host) describeExit(r *tracer.Result) string {
	if r == nil {
		return fmt.Sprintf("worker %d ended", h.workerPid)
	}
	if r.Signal != 0 {
		name := unix.SignalName(r.Signal)
		if name == "" {
			name = fmt.Sprintf("signal %d", int(r.Signal))
		}
		s := "worker killed by " + name
		switch r.Signal {
		case syscall.SIGKILL:
			if h.memLimit > 0 {
				s += fmt.Sprintf(": out of memory? (memory limit %s)", formatSize(h.memLimit))
			} else {
				s += ": out of memory? (or killed by another process)"
			}
		case syscall.SIGXCPU:
			s += fmt.Sprintf(": CPU time limit (%ds) reached", h.cpuLimit)
		case syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGABRT, syscall.SIGILL, syscall.SIGFPE:
			s += " (a crash, usually in C code; the Python stack is on stderr)"
		}
		return s
	}
	return fmt.Sprintf("worker exited with status %d (os._exit?)", r.ExitCode)
}

func formatSize(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
