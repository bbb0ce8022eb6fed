// The worker-host's start: the plan, worker.py, the pipes, the tracer, the
// hello and the preload.

package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/tracer"
)

// start writes worker.py, starts it under the tracer and waits for its
// hello and the preload.
func (h *host) start() (*Info, error) {
	sbx, err := h.sandbox()
	if err != nil {
		return nil, err
	}
	name := scriptDirName()
	plan, base, err := h.planWorker(sbx, name)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(base, name)
	removeStaleScriptDirs(base, time.Now())
	if _, err := writeScript(dir, workerPy); err != nil {
		return nil, fmt.Errorf("worker-host %d: write worker.py: %w", os.Getpid(), err)
	}
	defer os.RemoveAll(dir) // ours: writeScript made it (never what was there)
	tcfg, err := h.tracerConfig(plan)
	if err != nil {
		return nil, err
	}
	pipes, err := h.openPipes()
	if err != nil {
		return nil, err
	}
	startedPid := h.runTracer(tcfg, pipes)
	hello, err := h.awaitHello(startedPid)
	if err != nil {
		return nil, err
	}
	info := &Info{
		HostPid: os.Getpid(), WorkerPid: h.workerPid, Python: hello.Python, PythonVersion: hello.Version,
		Sandbox: sbx, Started: time.Now().UTC(), Preloaded: []string{},
	}
	if err := h.preload(info); err != nil {
		return nil, err
	}
	// Events during start-up (none expected) are not any execution's.
	h.takeEvents()
	return info, nil
}

// sandbox is the session's sandbox, checked and resolved.
func (h *host) sandbox() (string, error) {
	sbx := h.cfg.Sandbox
	if sbx == "" {
		return "", fmt.Errorf("worker-host %d: no sandbox given", os.Getpid())
	}
	if st, err := os.Stat(sbx); err != nil || !st.IsDir() {
		return "", fmt.Errorf("worker-host %d: sandbox %s is not an existing directory", os.Getpid(), sbx)
	}
	sbx, err := filepath.EvalSymlinks(sbx)
	if err != nil {
		return "", fmt.Errorf("worker-host %d: sandbox: %w", os.Getpid(), err)
	}
	sbx, _ = filepath.Abs(sbx)
	return sbx, nil
}

// planWorker builds the worker's plan and picks the base directory that
// worker.py's private directory (name) goes under.
//
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
func (h *host) planWorker(sbx, name string) (*config.Plan, string, error) {
	bases := scriptBases()
	first := bases[0]
	if r, err := filepath.EvalSymlinks(first); err == nil {
		first = r
	}
	plan, err := h.workerPlan(sbx, filepath.Join(first, name))
	if err != nil {
		return nil, "", err
	}
	base, err := pickScriptBase(bases, append(append([]string{}, plan.Policy.WriteRoots...), plan.Policy.Scratch...), plan.Policy.DenyRead)
	if err != nil {
		return nil, "", fmt.Errorf("worker-host %d: %w", os.Getpid(), err)
	}
	if base != first {
		if plan, err = h.workerPlan(sbx, filepath.Join(base, name)); err != nil {
			return nil, "", err
		}
	}
	return plan, base, nil
}

// workerPlan is the plan of a worker in the sandbox sbx that runs worker.py
// from dir: the session's settings with the worker's own.
func (h *host) workerPlan(sbx, dir string) (*config.Plan, error) {
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
	// sandbox and artifacts inside it). A --python that is a wrapper script
	// gets these as its arguments and must pass them on.
	argv := []string{py, "-I", "-u", "-B", filepath.Join(dir, "worker.py")}
	plan, err := config.Build(&s, argv, os.Environ())
	if err != nil {
		return nil, fmt.Errorf("worker-host %d: %w", os.Getpid(), err)
	}
	for _, w := range plan.Warnings {
		// What `tracecell run` prints before it starts (a pyenv shim
		// --python that will be refused its exec, and the fix): the
		// operator of serve and mcp reads it in the server's log.
		h.log.Warn().Str("python", py).Msg(w)
	}
	return plan, nil
}

// tracerConfig adds the session's policy to the plan and returns its
// tracer configuration (config.Plan.TracerConfig); it keeps the limits
// describeExit names.
func (h *host) tracerConfig(plan *config.Plan) (*tracer.Config, error) {
	plan.Policy.Unreachable = h.cfg.Unreachable
	// A worker is one session among others that share the scratch
	// directories (/dev/shm): what another session made there (its
	// multiprocessing shared memory) is not this one's to read.
	plan.Policy.PrivateScratch = true
	// The plan's start chain goes to the tracer as for `tracecell run`: a
	// --python that is a "#!/usr/bin/env NAME" wrapper script starts, env's
	// one exec of NAME being the chain's. The tracer allows that exec once,
	// as the root's first after the initial one; the session's code runs
	// later and is refused every exec.
	tcfg, err := plan.TracerConfig()
	if err != nil {
		return nil, fmt.Errorf("worker-host %d: %w", os.Getpid(), err)
	}
	h.memLimit = plan.RlimitCur(unix.RLIMIT_AS)
	h.cpuLimit = plan.RlimitCur(unix.RLIMIT_CPU)
	return tcfg, nil
}

// workerPipes are the worker's ends of its pipes, which the host holds
// until the tracer returns.
type workerPipes struct {
	stdout, stderr *os.File // write ends: the worker's fds 1 and 2
	requests       *os.File // read end of the request pipe: the worker's fd 3
	responses      *os.File // write end of the response pipe: the worker's fd 4
}

// openPipes makes the worker's pipes and starts reading the host's ends:
// output into h.stdout and h.stderr, responses into h.resps.
func (h *host) openPipes() (*workerPipes, error) {
	names := [...]string{"request", "response", "stdout", "stderr"}
	var ends [len(names)][2]*os.File // read and write end of each
	for i, name := range names {
		r, w, err := os.Pipe()
		if err != nil {
			for _, e := range ends[:i] {
				e[0].Close()
				e[1].Close()
			}
			return nil, fmt.Errorf("worker-host %d: %s pipe: %w", os.Getpid(), name, err)
		}
		ends[i] = [2]*os.File{r, w}
	}
	reqR, reqW := ends[0][0], ends[0][1]
	respR, respW := ends[1][0], ends[1][1]
	outR, outW := ends[2][0], ends[2][1]
	errR, errW := ends[3][0], ends[3][1]
	h.reqW = reqW
	h.stdout = newStream("stdout", outR, h.cfg.MaxOutput)
	h.stderr = newStream("stderr", errR, h.cfg.MaxOutput)
	go h.stdout.read()
	go h.stderr.read()
	h.resps = make(chan *workerMsg, 4)
	h.protoErr = make(chan string, 1)
	go h.readResponses(respR)
	return &workerPipes{stdout: outW, stderr: errW, requests: reqR, responses: respW}, nil
}

// runTracer wires tcfg to the host and the pipes and runs the worker under
// the tracer; its end arrives on h.runDone. The pid the tracer forked
// arrives on the channel returned.
func (h *host) runTracer(tcfg *tracer.Config, p *workerPipes) <-chan int {
	// The worker's pid is the tracer's: it forked the process. The pid in
	// the hello is the worker's own claim, which code that ran before it
	// can forge (and signalling a forged pid at a timeout would interrupt
	// any process of the user: the server itself).
	startedPid := make(chan int, 1)
	tcfg.OnStart = func(pid int) { startedPid <- pid }
	tcfg.OnEvent = h.onEvent
	tcfg.Stdin, tcfg.Stdout, tcfg.Stderr = nil, p.stdout, p.stderr
	tcfg.ExtraFiles = []*os.File{p.requests, p.responses}
	tcfg.Log = h.log
	// The tracer keeps its own list for a run's report; a session's
	// denials are collected per execution by onEvent instead.
	tcfg.MaxDenials = 1
	ctx, cancel := context.WithCancel(context.Background())
	h.cancelRun = cancel
	h.runDone = make(chan runOutcome, 1)
	go func() {
		res, err := tracer.Run(ctx, tcfg)
		// The worker's tree is gone: close our ends so that the readers see
		// EOF once they have drained the pipes.
		p.stdout.Close()
		p.stderr.Close()
		p.requests.Close()
		p.responses.Close()
		h.runDone <- runOutcome{res, err}
	}()
	return startedPid
}

// awaitHello waits for the worker's hello and takes the worker's pid from
// the tracer (startedPid).
func (h *host) awaitHello(startedPid <-chan int) (*workerMsg, error) {
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
	return hello, nil
}

// preload has the worker import the session's preload modules and notes in
// info what it imported; nothing to do without modules.
func (h *host) preload(info *Info) error {
	if len(h.cfg.Preload) == 0 {
		return nil
	}
	token := newToken()
	h.expectMarker(token)
	h.writeRequest(&workerRequest{Op: "preload", Modules: h.cfg.Preload, Token: token})
	var m *workerMsg
	select {
	case m = <-h.resps:
	case why := <-h.protoErr:
		h.cancelRun()
		h.waitRun()
		return fmt.Errorf("worker %d: preload: %s", h.workerPid, why)
	case o := <-h.runDone:
		h.ran = &o
		return h.startFailure(o, "the worker died while preloading "+fmt.Sprint(h.cfg.Preload))
	}
	if m == nil {
		return h.endedEarly("the worker died while preloading " + fmt.Sprint(h.cfg.Preload))
	}
	if m.Hello || m.Started != nil || m.ID != nil || (m.Preloaded == nil && m.Error == nil) {
		h.cancelRun()
		h.waitRun()
		return fmt.Errorf("worker %d: preload: the worker answered with another message than the preload's (the code of a module wrote to fd 4?)", h.workerPid)
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
		return fmt.Errorf("worker %d: preload: %s", h.workerPid, m.Error.Message)
	}
	return nil
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
