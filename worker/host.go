package worker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/policy"
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

// markerPrefix starts the end-of-execution marker the worker writes to fds
// 1 and 2 (worker.py MARKER_PREFIX); a 16-hex-digit token and \x1e follow.
var markerPrefix = []byte("\x1eTRACECELL-END-")

const tokenLen = 16

var markerLen = len(markerPrefix) + tokenLen + 1

func init() {
	if len(os.Args) > 1 && os.Args[1] == HostArg {
		// Not dumpable before anything else: the host holds the session's
		// configuration, and its /proc is no other program's to read.
		if err := tracer.HideProc(); err != nil {
			fmt.Fprintf(os.Stderr, "tracecell worker-host %d: %v\n", os.Getpid(), err)
			os.Exit(125)
		}
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

// workerMsg is any message worker.py writes on fd 4.
type workerMsg struct {
	Hello   bool   `json:"hello"`
	Pid     int    `json:"pid"`
	Python  string `json:"python"`
	Version string `json:"version"`

	Preloaded     []string          `json:"preloaded"`
	PreloadErrors map[string]string `json:"errors"`

	Started    *int64     `json:"started"` // the user's code starts now: it may be interrupted
	ID         *int64     `json:"id"`
	Result     *string    `json:"result"`
	Error      *ExecError `json:"error"`
	Artifacts  []Artifact `json:"artifacts"`
	DurationMS float64    `json:"duration_ms"`
	Truncated  bool       `json:"truncated"`
	Notes      []string   `json:"notes"`
	Markers    []bool     `json:"markers"`
}

// workerRequest is a message to worker.py on fd 3.
type workerRequest struct {
	Op           string   `json:"op"`
	ID           int64    `json:"id,omitempty"`
	Code         string   `json:"code,omitempty"`
	Token        string   `json:"token"`
	MaxArtifacts int      `json:"max_artifacts,omitempty"`
	Modules      []string `json:"modules,omitempty"`
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

// start writes worker.py, starts it under the tracer and waits for its
// hello and the preload.
func (h *host) start() (*Info, error) {
	sbx := h.cfg.Sandbox
	if sbx == "" {
		return nil, fmt.Errorf("worker-host %d: no sandbox given", os.Getpid())
	}
	if st, err := os.Stat(sbx); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("worker-host %d: sandbox %s is not an existing directory", os.Getpid(), sbx)
	}
	sbx, err := filepath.EvalSymlinks(sbx)
	if err != nil {
		return nil, fmt.Errorf("worker-host %d: sandbox: %w", os.Getpid(), err)
	}
	sbx, _ = filepath.Abs(sbx)

	// worker.py lives outside the sandbox, in a private directory, only
	// until the interpreter has read it (the hello). That directory must lie
	// where no tree can write: the untraced worker-host writes the script
	// there, and every later worker runs it. In a writable root (TMPDIR
	// inside a --write root, serve --write /tmp) a running session could
	// replace worker.py for the workers of other sessions, or plant a symlink
	// at its name that the host would write through. So the plan is built
	// first, its writable roots and scratch directories name where the
	// directory may not go, and the script is written with
	// O_CREAT|O_EXCL|O_NOFOLLOW through the directory's fd.
	name := scriptDirName()
	build := func(dir string) (*config.Plan, error) {
		s := h.cfg.Settings
		s.Write = append([]string{sbx}, s.Write...)
		s.Cwd = sbx
		s.Timeout = 0 // per-execution timeouts are the host's
		s.Report, s.Trace = "", ""
		env := map[string]string{}
		for k, v := range s.Env {
			env[k] = v
		}
		if _, ok := env["MPLBACKEND"]; !ok {
			env["MPLBACKEND"] = "Agg"
		}
		if _, ok := env["MPLCONFIGDIR"]; !ok {
			// matplotlib's font cache (fontlist-v*.json, written on first
			// import) goes under TMPDIR, tracecell's own .tmp, not .config:
			// the model lists the sandbox (os.listdir, the files API) and
			// should find only what its code made there.
			env["MPLCONFIGDIR"] = filepath.Join(sbx, ".tmp", "matplotlib")
		}
		s.Env = env
		if len(s.Read) > 0 {
			// Reads are restricted: the interpreter must still read worker.py.
			s.Read = append(append([]string{}, s.Read...), dir)
		}
		py := h.cfg.Python
		if py == "" {
			py = "python3"
			if _, err := os.Stat("/usr/bin/python3"); err == nil {
				py = "/usr/bin/python3"
			}
		}
		// -I: isolated (Python 3.4+): no user site-packages, no PYTHON*
		// variables, not the script's directory on sys.path. HOME is the
		// sandbox, so a usercustomize.py or .pth that the code left under
		// ~/.local would otherwise run in the next worker before worker.py
		// (worker.py puts the sandbox and PYTHONPATH on sys.path after its
		// hello). -u: unbuffered stdout/stderr, so the order of Python's and C's
		// writes is kept; -B: no .pyc writes (they would be denials outside the
		// sandbox and artifacts inside it).
		argv := []string{py, "-I", "-u", "-B", filepath.Join(dir, "worker.py")}
		plan, err := config.Build(&s, argv, os.Environ())
		if err != nil {
			return nil, fmt.Errorf("worker-host %d: %w", os.Getpid(), err)
		}
		return plan, nil
	}
	bases := scriptBases()
	first := bases[0]
	if r, err := filepath.EvalSymlinks(first); err == nil {
		first = r
	}
	plan, err := build(filepath.Join(first, name))
	if err != nil {
		return nil, err
	}
	base, err := pickScriptBase(bases, append(append([]string{}, plan.Policy.WriteRoots...), plan.Policy.Scratch...), plan.Policy.DenyRead)
	if err != nil {
		return nil, fmt.Errorf("worker-host %d: %w", os.Getpid(), err)
	}
	dir := filepath.Join(base, name)
	if base != first {
		if plan, err = build(dir); err != nil {
			return nil, err
		}
	}
	removeStaleScriptDirs(base, time.Now())
	if _, err := writeScript(dir, workerPy); err != nil {
		return nil, fmt.Errorf("worker-host %d: write worker.py: %w", os.Getpid(), err)
	}
	defer os.RemoveAll(dir) // ours: writeScript made it (never what was there)
	plan.Policy.Unreachable = h.cfg.Unreachable
	// A worker is one session among others that share the scratch
	// directories (/dev/shm): what another session made there (its
	// multiprocessing shared memory) is not this one's to read.
	plan.Policy.PrivateScratch = true
	pol, err := policy.New(plan.Policy)
	if err != nil {
		return nil, fmt.Errorf("worker-host %d: policy: %w", os.Getpid(), err)
	}
	for _, r := range plan.Rlimits {
		switch r.Resource {
		case unix.RLIMIT_AS:
			h.memLimit = r.Cur
		case unix.RLIMIT_CPU:
			h.cpuLimit = r.Cur
		}
	}

	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("worker-host %d: request pipe: %w", os.Getpid(), err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("worker-host %d: response pipe: %w", os.Getpid(), err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("worker-host %d: stdout pipe: %w", os.Getpid(), err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("worker-host %d: stderr pipe: %w", os.Getpid(), err)
	}
	h.reqW = reqW
	h.stdout = newStream("stdout", outR, h.cfg.MaxOutput)
	h.stderr = newStream("stderr", errR, h.cfg.MaxOutput)
	go h.stdout.read()
	go h.stderr.read()
	h.resps = make(chan *workerMsg, 4)
	h.protoErr = make(chan string, 1)
	go h.readResponses(respR)

	// The worker's pid is the tracer's: it forked the process. The pid in
	// the hello is the worker's own claim, which code that ran before it
	// can forge (and signalling a forged pid at a timeout would interrupt
	// any process of the user: the server itself).
	startedPid := make(chan int, 1)
	tcfg := &tracer.Config{
		OnStart: func(pid int) { startedPid <- pid },
		Path:    plan.Path, Argv: plan.Argv, Env: plan.Env, Dir: plan.Cwd, Policy: pol,
		MaxProcs: plan.MaxProcs, NoFreeze: plan.NoFreeze, KeepCaps: plan.KeepCaps, OnEvent: h.onEvent,
		Stdin: nil, Stdout: outW, Stderr: errW,
		ExtraFiles: []*os.File{reqR, respW},
		Log:        h.log,
		// The tracer keeps its own list for a run's report; a session's
		// denials are collected per execution by onEvent instead.
		MaxDenials: 1,
	}
	for _, r := range plan.Rlimits {
		tcfg.Rlimits = append(tcfg.Rlimits, tracer.Rlimit{Resource: r.Resource, Cur: r.Cur, Max: r.Max})
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancelRun = cancel
	h.runDone = make(chan runOutcome, 1)
	go func() {
		res, err := tracer.Run(ctx, tcfg)
		// The worker's tree is gone: close our ends so that the readers see
		// EOF once they have drained the pipes.
		outW.Close()
		errW.Close()
		reqR.Close()
		respW.Close()
		h.runDone <- runOutcome{res, err}
	}()

	// The hello.
	var hello *workerMsg
	select {
	case m, ok := <-h.resps:
		if !ok {
			// fd 4 ended: the worker died (or broke the protocol).
			return nil, h.endedEarly("the worker did not say hello")
		}
		if !m.Hello {
			h.cancelRun()
			return nil, h.startFailure(h.waitRun(), "the worker's first message was not its hello; it was killed")
		}
		hello = m
	case why := <-h.protoErr:
		h.cancelRun()
		h.waitRun()
		return nil, fmt.Errorf("worker-host %d: start the worker: %s", os.Getpid(), why)
	case o := <-h.runDone:
		h.ran = &o
		return nil, h.startFailure(o, "the worker did not start")
	}
	select {
	case h.workerPid = <-startedPid:
	default:
		// The tracer reports the pid before the process runs: a hello
		// without it came from no process of ours.
		return nil, fmt.Errorf("worker-host %d: a hello before the tracer started the worker", os.Getpid())
	}
	if hello.Pid != h.workerPid {
		h.log.Warn().Int("worker_pid", h.workerPid).Int("claimed_pid", hello.Pid).
			Msg("the worker's hello names another pid than the process the tracer started (start-up code changed it?); the tracer's is used")
	}
	info := &Info{
		HostPid: os.Getpid(), WorkerPid: h.workerPid, Python: hello.Python, PythonVersion: hello.Version,
		Sandbox: sbx, Started: time.Now().UTC(), Preloaded: []string{},
	}
	if len(h.cfg.Preload) > 0 {
		token := newToken()
		h.expectMarker(token)
		h.writeRequest(&workerRequest{Op: "preload", Modules: h.cfg.Preload, Token: token})
		var m *workerMsg
		select {
		case m = <-h.resps:
		case why := <-h.protoErr:
			h.cancelRun()
			h.waitRun()
			return nil, fmt.Errorf("worker %d: preload: %s", h.workerPid, why)
		case o := <-h.runDone:
			h.ran = &o
			return nil, h.startFailure(o, "the worker died while preloading "+fmt.Sprint(h.cfg.Preload))
		}
		if m == nil {
			return nil, h.endedEarly("the worker died while preloading " + fmt.Sprint(h.cfg.Preload))
		}
		if m.Hello || m.Started != nil || m.ID != nil || (m.Preloaded == nil && m.Error == nil) {
			h.cancelRun()
			h.waitRun()
			return nil, fmt.Errorf("worker %d: preload: the worker answered with another message than the preload's (the code of a module wrote to fd 4?)", h.workerPid)
		}
		m.Preloaded, m.PreloadErrors = h.checkPreload(m.Preloaded, m.PreloadErrors)
		out, _, _ := h.stdout.take(markerWait)
		errb, _, _ := h.stderr.take(markerWait)
		if len(out) > 0 || len(errb) > 0 {
			h.log.Debug().Bytes("stdout", out).Bytes("stderr", errb).Msg("output of the preload (discarded)")
		}
		if m.Preloaded != nil {
			info.Preloaded = m.Preloaded
		}
		if len(m.PreloadErrors) > 0 {
			info.PreloadErrors = m.PreloadErrors
			h.log.Warn().Interface("errors", m.PreloadErrors).Msg("some modules could not be preloaded")
		}
		if m.Error != nil {
			return nil, fmt.Errorf("worker %d: preload: %s", h.workerPid, m.Error.Message)
		}
	}
	// Events during start-up (none expected) are not any execution's.
	h.takeEvents()
	return info, nil
}

// endedEarly is the start-up error once the worker's fd 4 reached EOF:
// the protocol violation that ended the reading, or how the worker ended
// (this host holds a write end of fd 4 until the tracer returns, so EOF
// means the tree is gone).
func (h *host) endedEarly(what string) error {
	select {
	case why := <-h.protoErr:
		h.cancelRun()
		h.waitRun()
		return fmt.Errorf("worker-host %d: start the worker: %s", os.Getpid(), why)
	default:
	}
	return h.startFailure(h.waitRun(), what)
}

// waitRun waits for the tracer's end during start-up (once: the outcome is
// kept for the next caller).
func (h *host) waitRun() runOutcome {
	if h.ran == nil {
		o := <-h.runDone
		h.ran = &o
	}
	return *h.ran
}

// checkPreload keeps of a preload response only the modules the host asked
// for, with their errors capped: the response is the worker's word, and a
// module's import code runs in the worker.
func (h *host) checkPreload(done []string, errs map[string]string) ([]string, map[string]string) {
	asked := map[string]bool{}
	for _, m := range h.cfg.Preload {
		asked[m] = true
	}
	var ok []string
	for _, m := range done {
		if asked[m] && !slices.Contains(ok, m) {
			ok = append(ok, m)
		}
	}
	var bad map[string]string
	for m, e := range errs {
		if !asked[m] {
			continue
		}
		if bad == nil {
			bad = map[string]string{}
		}
		if len(e) > maxNoteChars {
			e = string(trimPartialRune([]byte(e[:maxNoteChars]), true)) + "\u2026"
		}
		bad[m] = e
	}
	return ok, bad
}

func (h *host) startFailure(o runOutcome, what string) error {
	if o.err != nil {
		return fmt.Errorf("worker-host %d: start the worker: %w", os.Getpid(), o.err)
	}
	errb, _, _ := h.stderr.takeAll(markerWait)
	msg := fmt.Sprintf("worker-host %d: %s: %s", os.Getpid(), what, h.describeExit(o.res))
	if tail := lastLines(errb, 5); tail != "" {
		msg += ": " + tail
	}
	return errors.New(msg)
}

// lastLines returns the last n lines of b on one line.
func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("; ")))
}

// readResponses reads the worker's messages on fd 4. Everything on it is
// untrusted input: the code runs in the worker and can write to fd 4. A
// message that is not the protocol's (too long, not JSON, unknown fields,
// wrong types, values out of range) ends the worker with the reason, never
// the host or the server.
func (h *host) readResponses(r *os.File) {
	defer close(h.resps)
	defer r.Close()
	err := readJSONLines(r, h.log, "the worker", maxWorkerLine, true, func(m *workerMsg) error {
		if err := checkWorkerMsg(m); err != nil {
			return err
		}
		h.resps <- m
		return nil
	})
	switch {
	case errors.Is(err, errLineTooLong):
		h.protoErr <- fmt.Sprintf("the worker wrote a message longer than %d bytes on its control pipe (fd %d): the code wrote to it; the worker was killed", maxWorkerLine, 4)
	case err != nil:
		h.protoErr <- fmt.Sprintf("the worker broke the protocol on its control pipe (fd %d): %v; the code wrote to it? The worker was killed", 4, err)
	}
}

var versionRE = regexp.MustCompile(`^[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}$`)

// checkWorkerMsg checks what one message of the worker may hold on its own
// (the host checks it against its state when it acts on it): exactly one of
// a hello, a started notice or a response, with values in range.
func checkWorkerMsg(m *workerMsg) error {
	resp := m.ID != nil || m.Result != nil || m.Error != nil || m.Artifacts != nil || m.DurationMS != 0 ||
		m.Truncated || m.Notes != nil || m.Markers != nil || m.Preloaded != nil || m.PreloadErrors != nil
	hello := m.Hello || m.Pid != 0 || m.Python != "" || m.Version != ""
	kinds := 0
	for _, k := range []bool{hello, m.Started != nil, resp} {
		if k {
			kinds++
		}
	}
	if kinds != 1 {
		return errors.New("a message that is not exactly one of a hello, a started notice and a response")
	}
	switch {
	case hello:
		if !m.Hello || m.Pid <= 0 || m.Python == "" || len(m.Python) > maxPathChars || !versionRE.MatchString(m.Version) {
			return fmt.Errorf("a malformed hello (pid %d, python %d bytes, version %q)", m.Pid, len(m.Python), trimForLog(m.Version))
		}
	case resp:
		if m.DurationMS < 0 {
			return fmt.Errorf("a response with a negative duration (%g ms)", m.DurationMS)
		}
		if len(m.Markers) > 2 {
			return fmt.Errorf("a response with %d markers, want at most 2", len(m.Markers))
		}
		for _, a := range m.Artifacts {
			if a.Path == "" || strings.HasPrefix(a.Path, "/") || slices.Contains(strings.Split(a.Path, "/"), "..") {
				return fmt.Errorf("an artifact path %q that is not inside the sandbox", trimForLog(a.Path))
			}
			if a.Size < 0 || (a.Change != "created" && a.Change != "modified") || (a.Kind != "file" && a.Kind != "figure") {
				return fmt.Errorf("a malformed artifact (size %d, change %q, kind %q)", a.Size, trimForLog(a.Change), trimForLog(a.Kind))
			}
		}
	}
	return nil
}

// trimForLog shortens a value of a rejected message for an error text.
func trimForLog(s string) string {
	if len(s) > 64 {
		return string(trimPartialRune([]byte(s[:64]), true)) + "\u2026"
	}
	return s
}

func (h *host) writeRequest(r *workerRequest) {
	b, _ := json.Marshal(r)
	b = append(b, '\n')
	// A large request must not block the loop if the worker is stuck: the
	// write finishes or fails (EPIPE) when the worker reads or dies.
	go func() {
		if _, err := h.reqW.Write(b); err != nil {
			h.log.Debug().Err(err).Msg("write a request to the worker")
		}
	}()
}

func (h *host) onEvent(ev *report.Event) {
	if ev.Decision == report.Allow {
		return
	}
	size := len(ev.Exe) + len(ev.Address) + len(ev.Reason)
	for _, a := range ev.Argv {
		size += len(a)
	}
	for _, p := range ev.Paths {
		size += len(p.Given) + len(p.Resolved) + len(p.Base) + len(p.Special)
	}
	h.evMu.Lock()
	kept := len(h.events) < maxDenials && h.evBytes+size <= maxDenialBytes
	merged := false
	if kept {
		// One event per PATH search of a refused program (report.ExecWalks);
		// a merged try still adds its path to the listed bytes.
		h.events, merged = h.walks.Add(h.events, ev)
		h.evBytes += size
	} else {
		h.evDropped++
	}
	h.evMu.Unlock()
	if !kept || merged {
		// Logged as a count when the execution ends: a loop of denied
		// calls would otherwise write megabytes per second to the
		// server's log for as long as it runs. A PATH search is logged
		// once, at its first try.
		return
	}
	var given, resolved []string
	for _, p := range ev.Paths {
		given = append(given, p.Given)
		resolved = append(resolved, p.Resolved)
	}
	e := h.log.Warn().Str("decision", ev.Decision).Str("syscall", ev.Syscall).Str("kind", ev.Kind.String()).
		Int("pid", ev.Pid).Str("program", ev.Program)
	if len(ev.Paths) > 0 {
		e = e.Strs("given", given).Strs("paths", resolved)
	}
	if ev.Address != "" {
		e = e.Str("address", ev.Address)
	}
	e.Str("rule", ev.Rule).Str("errno", ev.Errno).Msg(ev.Reason)
}

func (h *host) takeEvents() ([]report.Event, int) {
	h.evMu.Lock()
	defer h.evMu.Unlock()
	ev, n := h.events, h.evDropped
	h.events, h.evDropped, h.evBytes = nil, 0, 0
	h.walks = report.ExecWalks{}
	return ev, n
}

func (h *host) expectMarker(token string) {
	m := append(append(append([]byte{}, markerPrefix...), token...), 0x1e)
	h.stdout.expect(m)
	h.stderr.expect(m)
}

func newToken() string {
	var b [tokenLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// interruptCur interrupts the current execution's code, now if it runs,
// else as soon as it starts.
func (h *host) interruptCur() {
	if !h.cur.running {
		h.cur.intPending = true
		return
	}
	h.interrupt()
}

func (h *host) interrupt() {
	if h.workerPid <= 0 {
		return
	}
	// The pid is the tracer's (OnStart): the process it forked from this
	// one. Once the tracer has reaped it (the worker exited; its tree may
	// run on) the pid is free for any process of the system: signal it
	// only while it is still our child.
	if procfs.Field(h.workerPid, 4) != strconv.Itoa(os.Getpid()) {
		h.log.Debug().Int("worker_pid", h.workerPid).Msg("interrupt: the worker is no longer this host's child")
		return
	}
	if err := unix.Kill(h.workerPid, unix.SIGINT); err != nil {
		h.log.Debug().Err(err).Msg("interrupt the worker")
	}
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

func timerC(t *time.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

// loop serves the client. It returns the host's exit status.
func (h *host) loop(client <-chan *hostRequest) int {
	for {
		var timeoutC, graceC <-chan time.Time
		if h.cur != nil {
			timeoutC, graceC = timerC(h.cur.timer), timerC(h.cur.grace)
		}
		select {
		case r, ok := <-client:
			if !ok {
				h.log.Debug().Msg("client gone: stopping the worker")
				h.cancelRun()
				<-h.runDone
				return 0
			}
			switch r.Op {
			case "execute":
				if h.cur != nil {
					h.send(&hostMessage{Type: "result", ID: r.ID, Reason: "busy", Result: &Result{
						Error: &ExecError{Name: "Busy", Message: "another execution is running"}}})
					continue
				}
				h.startExec(r)
			case "interrupt":
				if h.cur != nil {
					h.interruptCur()
				}
			case "cancel":
				if h.cur != nil && h.cur.grace == nil {
					h.cur.cancelled = true
					h.interruptCur()
					h.cur.grace = time.NewTimer(h.cfg.Grace)
				}
			case "shutdown":
				h.cancelRun()
				<-h.runDone
				return 0
			default:
				h.log.Error().Str("op", r.Op).Msg("unknown request from the client")
			}
		case <-timeoutC:
			h.cur.timer = nil
			h.cur.timedOut = true
			h.interruptCur()
			if h.cur.grace == nil {
				h.cur.grace = time.NewTimer(h.cfg.Grace)
			}
		case <-graceC:
			h.cur.grace = nil
			h.cur.killed = true
			why := "timeout"
			if !h.cur.timedOut {
				why = "cancelled"
			}
			h.cur.killReason = fmt.Sprintf("%s: did not stop within %s of the interrupt; the worker was killed", why, h.cfg.Grace)
			h.log.Warn().Int64("id", h.cur.id).Msg(h.cur.killReason)
			h.cancelRun()
		case m, ok := <-h.resps:
			if !ok {
				h.resps = nil // the worker closed fd 4: wait for its end
				continue
			}
			if m.Started != nil {
				if h.cur == nil || *m.Started != h.cur.id || h.cur.running {
					h.violation(fmt.Sprintf("the worker said execution %d started while %s: the code wrote to its control pipe (fd 4); the worker was killed", *m.Started, h.curText()))
					continue
				}
				h.cur.running = true
				if h.cur.intPending {
					h.interrupt()
				}
				continue
			}
			if m.Hello || h.cur == nil || m.ID == nil || *m.ID != h.cur.id {
				what := "a second hello"
				if !m.Hello {
					what = "a response to no execution running"
					if m.ID != nil {
						what = fmt.Sprintf("a response to execution %d", *m.ID)
					}
				}
				h.violation(fmt.Sprintf("the worker sent %s while %s: the code wrote to its control pipe (fd 4); the worker was killed", what, h.curText()))
				continue
			}
			h.finishExec(m, nil)
		case why := <-h.protoErr:
			h.violation(why)
		case o := <-h.runDone:
			reason := h.describeExit(o.res)
			if h.lostWhy != "" {
				reason = h.lostWhy
			}
			if o.err != nil {
				reason = fmt.Sprintf("worker %d: tracer failed: %v", h.workerPid, o.err)
			}
			if h.cur != nil {
				if h.cur.killed {
					reason = h.cur.killReason
				}
				h.finishExec(nil, &reason)
			} else {
				h.log.Warn().Msg(reason)
				h.send(&hostMessage{Type: "exit", Reason: reason})
			}
			return 0
		}
	}
}

// violation ends the worker for breaking the protocol; why is the reason
// the execution's result (or the exit message) gives.
func (h *host) violation(why string) {
	h.log.Warn().Msg(why)
	if h.cur != nil {
		if !h.cur.killed {
			h.cur.killed = true
			h.cur.killReason = why
		}
	} else if h.lostWhy == "" {
		h.lostWhy = why
	}
	h.cancelRun()
}

// curText says which execution runs, for a violation's reason.
func (h *host) curText() string {
	if h.cur == nil {
		return "none was running"
	}
	return fmt.Sprintf("execution %d was running", h.cur.id)
}

func (h *host) startExec(r *hostRequest) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = h.cfg.DefaultTimeout
	}
	st := &execState{id: r.ID, token: newToken(), started: time.Now()}
	h.expectMarker(st.token)
	h.writeRequest(&workerRequest{Op: "execute", ID: r.ID, Code: r.Code, Token: st.token, MaxArtifacts: h.cfg.MaxArtifacts})
	st.timer = time.NewTimer(timeout)
	h.cur = st
}

// finishExec sends the result of the current execution: from the worker's
// response m, or, when the worker died (lost != nil), from what was captured.
func (h *host) finishExec(m *workerMsg, lost *string) {
	st := h.cur
	h.cur = nil
	stopTimer(st.timer)
	stopTimer(st.grace)
	res := &Result{TimedOut: st.timedOut}
	var out, errb []byte
	var dOut, dErr int64
	if m != nil {
		res.Result, res.Error, res.Artifacts = m.Result, m.Error, m.Artifacts
		res.DurationMS, res.Truncated, res.Notes = m.DurationMS, m.Truncated, m.Notes
		h.clampResponse(res)
		var okOut, okErr bool
		out, dOut, okOut = h.stdout.take(markerWait)
		errb, dErr, okErr = h.stderr.take(markerWait)
		if !okOut || !okErr {
			res.Notes = append(res.Notes, "the end of this execution's output was not seen on stdout or stderr; some output may appear in the next execution")
		}
	} else {
		res.SessionLost = true
		res.LostReason = *lost
		res.DurationMS = float64(time.Since(st.started).Microseconds()) / 1000
		out, dOut, _ = h.stdout.takeAll(markerWait)
		errb, dErr, _ = h.stderr.takeAll(markerWait)
	}
	for _, s := range []struct {
		name    string
		dropped int64
	}{{"stdout", dOut}, {"stderr", dErr}} {
		if s.dropped > 0 {
			res.Truncated = true
			res.Notes = append(res.Notes, fmt.Sprintf("%s truncated: %d bytes beyond the limit of %d were dropped", s.name, s.dropped, h.cfg.MaxOutput))
		}
	}
	res.Stdout, res.Stderr = string(trimPartialRune(out, dOut > 0)), string(trimPartialRune(errb, dErr > 0))
	ev, dropped := h.takeEvents()
	res.Denials = ev
	if res.Denials == nil {
		res.Denials = []report.Event{}
	}
	if res.Artifacts == nil {
		res.Artifacts = []Artifact{}
	}
	if dropped > 0 {
		h.log.Warn().Int64("id", st.id).Int("denials_not_logged", dropped).Int("denials_logged", len(ev)).
			Msg("more denials in this execution than the per-execution cap: the rest were counted, not logged one by one")
		res.Truncated = true
		res.Notes = append(res.Notes, fmt.Sprintf("%d more denials were not listed", dropped))
	}
	if len(res.Notes) == 0 {
		res.Notes = nil
	}
	h.send(&hostMessage{Type: "result", ID: st.id, Result: res})
}

// clampResponse caps what the worker's response put in res. worker.py
// keeps within these caps; a response the code forged on fd 4 may not,
// and nothing from it may exceed what the server's limits promise.
func (h *host) clampResponse(res *Result) {
	cut := false
	clip := func(s *string, max int, keepTail bool) {
		if len(*s) <= max {
			return
		}
		cut = true
		if keepTail {
			*s = "\u2026" + string(trimPartialRuneFront([]byte((*s)[len(*s)-max:])))
		} else {
			*s = string(trimPartialRune([]byte((*s)[:max]), true)) + "\u2026"
		}
	}
	if res.Result != nil {
		r := *res.Result
		clip(&r, maxResultChars, false)
		res.Result = &r
	}
	if e := res.Error; e != nil {
		c := *e
		clip(&c.Name, 1024, false)
		clip(&c.Message, maxErrorChars, false)
		clip(&c.Traceback, maxErrorChars, true)
		res.Error = &c
	}
	if len(res.Notes) > maxNotes {
		res.Notes, cut = res.Notes[:maxNotes], true
	}
	for i := range res.Notes {
		clip(&res.Notes[i], maxNoteChars, false)
	}
	if len(res.Artifacts) > h.cfg.MaxArtifacts {
		res.Artifacts, cut = res.Artifacts[:h.cfg.MaxArtifacts], true
	}
	for i := range res.Artifacts {
		a := &res.Artifacts[i]
		clip(&a.Path, maxPathChars, false)
		clip(&a.Change, 16, false)
		clip(&a.Kind, 16, false)
		clip(&a.MIME, 128, false)
	}
	if cut {
		res.Truncated = true
		res.Notes = append(res.Notes, "the worker's response was larger than the host's caps and was cut")
	}
}

// trimPartialRuneFront drops the continuation bytes a cut left at the
// start of b.
func trimPartialRuneFront(b []byte) []byte {
	for i := 0; i < len(b) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}

// trimPartialRune drops an incomplete UTF-8 sequence that truncation left
// at the end of b.
func trimPartialRune(b []byte, truncated bool) []byte {
	if !truncated || len(b) == 0 {
		return b
	}
	j := len(b) - 1
	for j > 0 && j > len(b)-utf8.UTFMax && !utf8.RuneStart(b[j]) {
		j--
	}
	if !utf8.FullRune(b[j:]) {
		return b[:j]
	}
	return b
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

// stream is one of the worker's output pipes, split into executions at
// their markers. It is always drained, so the worker never blocks on it.
type stream struct {
	name string
	r    *os.File
	max  int

	mu      sync.Mutex
	pending []byte // read, not yet assigned: possibly the start of a marker
	buf     []byte // the current execution's output (at most max)
	dropped int64
	marker  []byte        // the current execution's marker, nil if none
	found   chan struct{} // closed when marker was seen
	done    []byte        // output up to the marker
	doneDr  int64
	eof     chan struct{}
}

func newStream(name string, r *os.File, max int) *stream {
	return &stream{name: name, r: r, max: max, eof: make(chan struct{})}
}

func (s *stream) read() {
	defer close(s.eof)
	defer s.r.Close()
	chunk := make([]byte, 64<<10)
	for {
		n, err := s.r.Read(chunk)
		s.mu.Lock()
		s.pending = append(s.pending, chunk[:n]...)
		if err != nil {
			s.scan()
			s.add(s.pending)
			s.pending = nil
			s.mu.Unlock()
			if err != io.EOF {
				// Not expected on a pipe; the stream ends either way.
				fmt.Fprintf(os.Stderr, "%s: %v\n", s.name, err)
			}
			return
		}
		s.scan()
		s.mu.Unlock()
	}
}

// add appends to the current output up to the cap. Precondition: s.mu held.
func (s *stream) add(b []byte) {
	if room := s.max - len(s.buf); room > 0 {
		if len(b) <= room {
			s.buf = append(s.buf, b...)
			return
		}
		s.buf = append(s.buf, b[:room]...)
		b = b[room:]
	}
	s.dropped += int64(len(b))
}

// scan assigns pending bytes: up to the marker to the finished execution,
// the rest to the next one, except a tail that may be the start of a marker.
// Precondition: s.mu held.
func (s *stream) scan() {
	if s.marker != nil {
		if i := bytes.Index(s.pending, s.marker); i >= 0 {
			s.add(s.pending[:i])
			s.done, s.doneDr = s.buf, s.dropped
			s.buf, s.dropped = nil, 0
			s.pending = append([]byte{}, s.pending[i+len(s.marker):]...)
			s.marker = nil
			close(s.found)
		}
	}
	keep := len(s.pending)
	for i := max(0, len(s.pending)-markerLen+1); i < len(s.pending); i++ {
		if s.pending[i] == markerPrefix[0] && couldBeMarker(s.pending[i:]) {
			keep = i
			break
		}
	}
	s.add(s.pending[:keep])
	s.pending = append(s.pending[:0], s.pending[keep:]...)
}

// couldBeMarker: b (shorter than a marker) may be the start of one.
func couldBeMarker(b []byte) bool {
	n := min(len(b), len(markerPrefix))
	if !bytes.Equal(b[:n], markerPrefix[:n]) {
		return false
	}
	for _, c := range b[n:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// expect starts an execution: its output ends at marker.
func (s *stream) expect(marker []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marker = marker
	s.found = make(chan struct{})
	s.done, s.doneDr = nil, 0
	s.scan()
}

// take waits up to d for the marker and returns the execution's output, the
// number of bytes dropped beyond the cap, and whether the marker was seen
// (if not, the output so far is returned and the marker forgotten).
func (s *stream) take(d time.Duration) ([]byte, int64, bool) {
	s.mu.Lock()
	found := s.found
	s.mu.Unlock()
	seen := true
	if found != nil {
		t := time.NewTimer(d)
		select {
		case <-found:
		case <-s.eof:
			select {
			case <-found:
			default:
				seen = false
			}
		case <-t.C:
			seen = false
		}
		t.Stop()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !seen {
		s.done, s.doneDr = s.buf, s.dropped
		s.buf, s.dropped = nil, 0
		s.marker, s.found = nil, nil
	}
	b, n := s.done, s.doneDr
	s.done, s.doneDr = nil, 0
	return b, n, seen
}

// takeAll waits up to d for the end of the stream (the worker died) and
// returns everything not yet taken.
func (s *stream) takeAll(d time.Duration) ([]byte, int64, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	ended := true
	select {
	case <-s.eof:
	case <-t.C:
		ended = false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := append(s.done, s.buf...)
	b = append(b, s.pending...)
	n := s.doneDr + s.dropped
	s.done, s.buf, s.pending, s.doneDr, s.dropped = nil, nil, nil, 0, 0
	s.marker = nil
	return b, n, ended
}
