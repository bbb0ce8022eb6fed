package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/report"
)

var (
	// ErrBusy: an execution is already running on this Proc. The caller
	// decides whether to queue or refuse.
	ErrBusy = errors.New("an execution is already running in this worker")
	// ErrClosed: the Proc was closed, or its worker has died (the error's
	// text says why); start a new one.
	ErrClosed = errors.New("worker is closed")
)

// hostSlack is how long the client waits beyond the timeout and the grace
// period for the worker-host's answer before it kills the host itself.
const hostSlack = 5 * time.Second

// Proc is one running worker-host and its worker. Its methods are safe for
// concurrent use; one execution runs at a time.
type Proc struct {
	cfg     HostConfig
	log     zerolog.Logger
	cmd     *exec.Cmd
	hostPid int
	info    Info

	inW     *os.File // the host's stdin
	writeMu sync.Mutex

	results  chan *hostMessage
	ready    chan *hostMessage // "ready" or "fatal"
	msgsDone chan struct{}     // the host's stdout reached EOF
	logsDone chan struct{}     // the host's stderr reached EOF
	exited   chan struct{}     // the host was reaped

	mu         sync.Mutex
	busy       bool
	closed     bool
	lost       string   // why the worker ended, as the host said
	stderrTail []string // the host's last non-JSON stderr lines (a Go panic)
	waitErr    error

	nextID    atomic.Int64
	closeOnce sync.Once
	closeErr  error
}

// Start starts a worker-host for cfg (this binary re-executed with HostArg)
// and returns when the worker is ready, its preloads done. The host's log
// lines are forwarded to log.
//
// The host dies with the calling process: it is forked from a goroutine that
// holds its OS thread for the host's whole life, so its parent-death signal
// (SIGKILL) fires only when this process dies, and the worker dies with the
// host (PTRACE_O_EXITKILL). As a second line, the host stops its worker when
// its stdin (held by this process) reaches EOF.
func Start(ctx context.Context, cfg HostConfig, log zerolog.Logger) (*Proc, error) {
	started := time.Now()
	if cfg.Grace <= 0 {
		cfg.Grace = defaultGrace
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = defaultTimeout
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start worker-host: find our own executable: %w", err)
	}
	cfgLine, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("start worker-host: encode the configuration: %w", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start worker-host: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("start worker-host: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("start worker-host: %w", err)
	}
	cmd := exec.Command(self, HostArg)
	cmd.Args[0] = "tracecell-worker-host"
	cmd.Env = hostEnviron(os.Environ(), cfg.Settings.KeepEnv)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setsid: true}
	p := &Proc{
		cfg: cfg, log: log, cmd: cmd, inW: inW,
		results: make(chan *hostMessage, 1), ready: make(chan *hostMessage, 1),
		msgsDone: make(chan struct{}), logsDone: make(chan struct{}), exited: make(chan struct{}),
	}
	startErr := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that forked the host exits, not
		// the process: this goroutine keeps its thread until the host is
		// reaped, and never unlocks it, so Go retires the thread after.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			startErr <- err
			close(p.exited)
			return
		}
		startErr <- nil
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.exited)
	}()
	err = <-startErr
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("start worker-host %s: %w", self, err)
	}
	p.hostPid = cmd.Process.Pid
	p.log = log.With().Int("host_pid", p.hostPid).Logger()
	go p.readLogs(errR)
	go p.readMessages(outR)

	if err := p.write(cfgLine); err != nil {
		p.Close()
		return nil, fmt.Errorf("worker-host %d: send the configuration: %w", p.hostPid, err)
	}
	select {
	case m := <-p.ready:
		if m.Type == "fatal" {
			p.Close()
			return nil, fmt.Errorf("worker-host %d: %s", p.hostPid, m.Reason)
		}
		p.info = *m.Info
		p.info.StartupMS = float64(time.Since(started).Microseconds()) / 1000
	case <-p.msgsDone:
		p.Close()
		return nil, fmt.Errorf("worker-host %d exited before the worker was ready: %s", p.hostPid, p.lostReason())
	case <-ctx.Done():
		p.kill()
		p.Close()
		return nil, fmt.Errorf("worker-host %d: start: %w", p.hostPid, ctx.Err())
	}
	p.log.Debug().Int("worker_pid", p.info.WorkerPid).Float64("startup_ms", p.info.StartupMS).Msg("worker ready")
	return p, nil
}

// write sends one JSON line to the host.
func (p *Proc) write(line []byte) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if _, err := p.inW.Write(append(line, '\n')); err != nil {
		return err
	}
	return nil
}

func (p *Proc) send(r *hostRequest) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return p.write(b)
}

func (p *Proc) readMessages(r *os.File) {
	defer close(p.msgsDone)
	defer r.Close()
	max := p.cfg.MaxOutput
	if max <= 0 {
		max = defaultMaxOutput
	}
	if readJSONLines(r, p.log, "the worker-host", maxHostLine(max), false, func(m *hostMessage) error { p.dispatch(m); return nil }) != nil {
		// The host broke the protocol: it is of no further use.
		p.setLost(fmt.Sprintf("worker-host %d sent a message longer than %d bytes; it was killed", p.hostPid, maxHostLine(max)))
		go p.kill()
	}
}

// errLineTooLong: a message line was longer than its reader's cap.
var errLineTooLong = errors.New("message line too long")

// readJSONLines decodes one JSON object per line of r and hands each to f,
// until r ends. A line longer than max bytes is not buffered: reading stops
// and errLineTooLong is returned (the sender is broken or hostile: the
// worker's fd 4 is writable by the code it runs, and a line it never ends
// would otherwise grow the reader's memory without bound).
//
// A line that does not decode into T is logged (naming its sender) and
// skipped unless strict: then unknown fields are refused too, and reading
// stops with the decoding error, as it does with the first error f returns
// (the sender broke the protocol: nothing it says after is believed).
func readJSONLines[T any](r io.Reader, log zerolog.Logger, from string, max int, strict bool, f func(*T) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			log.Error().Int("max_bytes", max).Msg("message from " + from + " longer than the cap; no longer reading it")
			return errLineTooLong
		}
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			m := new(T)
			dec := json.NewDecoder(bytes.NewReader(line))
			if strict {
				dec.DisallowUnknownFields()
			}
			jerr := dec.Decode(m)
			if jerr == nil && len(bytes.TrimSpace(line[dec.InputOffset():])) > 0 {
				jerr = errors.New("more than one JSON value on the line")
			}
			switch {
			case jerr != nil && strict:
				return fmt.Errorf("a message that is not the protocol's (%d bytes): %w", len(line), jerr)
			case jerr != nil:
				log.Error().Err(jerr).Int("bytes", len(line)).Msg("bad message from " + from)
			default:
				if ferr := f(m); ferr != nil {
					return ferr
				}
			}
		}
		if err != nil {
			return nil
		}
		if cap(line) > 1<<20 {
			line = nil // do not keep a large buffer for small lines
		} else {
			line = line[:0]
		}
	}
}

// maxHostLine caps one message line from the worker-host, a backstop: a
// result holds stdout and stderr (each at most maxOutput bytes) and what
// the host has capped already (the worker's response, the denials), at up
// to 6 bytes of JSON per byte (\u0000, \ufffd).
func maxHostLine(maxOutput int) int {
	return 6*(2*maxOutput+maxWorkerLine+maxDenialBytes) + 4<<20
}

func (p *Proc) dispatch(m *hostMessage) {
	switch m.Type {
	case "ready":
		if m.Info == nil {
			m = &hostMessage{Type: "fatal", Reason: "ready without info"}
		}
		p.ready <- m
	case "fatal":
		p.setLost(m.Reason)
		select {
		case p.ready <- m:
		default:
		}
	case "exit":
		p.setLost(m.Reason)
	case "result":
		if m.Result == nil {
			p.log.Error().Int64("id", m.ID).Msg("result without a body from the worker-host")
			return
		}
		if m.Result.SessionLost {
			p.setLost(m.Result.LostReason)
		}
		select {
		case p.results <- m:
		default:
			p.log.Error().Int64("id", m.ID).Msg("unexpected result from the worker-host (dropped)")
		}
	default:
		p.log.Error().Str("type", m.Type).Msg("unknown message from the worker-host")
	}
}

func (p *Proc) setLost(reason string) {
	p.mu.Lock()
	if p.lost == "" {
		p.lost = reason
	}
	p.mu.Unlock()
}

// readLogs forwards the host's zerolog lines to p.log and keeps the last
// lines that are not JSON (a Go panic) for the error messages.
func (p *Proc) readLogs(r *os.File) {
	defer close(p.logsDone)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var m map[string]any
		if len(line) > 0 && line[0] == '{' && json.Unmarshal(line, &m) == nil {
			lvl, _ := zerolog.ParseLevel(fmt.Sprint(m["level"]))
			msg, _ := m["message"].(string)
			delete(m, "level")
			delete(m, "message")
			delete(m, "time")
			delete(m, "host_pid")
			p.log.WithLevel(lvl).Fields(m).Msg(msg)
			continue
		}
		s := strings.TrimSpace(string(line))
		if s == "" {
			continue
		}
		p.log.Warn().Str("line", s).Msg("worker-host stderr")
		p.mu.Lock()
		p.stderrTail = append(p.stderrTail, s)
		if len(p.stderrTail) > 8 {
			p.stderrTail = p.stderrTail[len(p.stderrTail)-8:]
		}
		p.mu.Unlock()
	}
}

// lostReason says why the worker or its host ended.
func (p *Proc) lostReason() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lost != "" {
		return p.lost
	}
	if p.closed {
		return fmt.Sprintf("worker-host %d: the worker was closed", p.hostPid)
	}
	select {
	case <-p.exited:
	default:
		return fmt.Sprintf("worker-host %d closed its output", p.hostPid)
	}
	s := fmt.Sprintf("worker-host %d ended", p.hostPid)
	if st := p.cmd.ProcessState; st != nil {
		s = fmt.Sprintf("worker-host %d: %s", p.hostPid, st.String())
	} else if p.waitErr != nil {
		s = fmt.Sprintf("worker-host %d: %v", p.hostPid, p.waitErr)
	}
	if len(p.stderrTail) > 0 {
		s += ": " + strings.Join(p.stderrTail, "; ")
	}
	return s
}

// Info describes the worker.
func (p *Proc) Info() Info { return p.info }

// Done is closed when the worker-host has exited (the worker died, was
// killed, or Close was called).
func (p *Proc) Done() <-chan struct{} { return p.exited }

// Alive reports whether the worker can still execute code.
func (p *Proc) Alive() bool {
	p.mu.Lock()
	dead := p.closed || p.lost != ""
	p.mu.Unlock()
	if dead {
		return false
	}
	select {
	case <-p.exited:
		return false
	case <-p.msgsDone:
		return false
	default:
		return true
	}
}

// Interrupt sends the running execution a KeyboardInterrupt (nothing
// happens when none runs).
func (p *Proc) Interrupt() error {
	if !p.Alive() {
		return p.deadErr()
	}
	if err := p.send(&hostRequest{Op: "interrupt"}); err != nil {
		return fmt.Errorf("worker-host %d: interrupt: %w", p.hostPid, err)
	}
	return nil
}

func (p *Proc) deadErr() error {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return fmt.Errorf("worker-host %d: %s: %w", p.hostPid, p.lostReason(), ErrClosed)
}

// Execute runs req.Code in the worker's namespace and returns what it
// produced. At the timeout the code gets a KeyboardInterrupt; if it does not
// stop within the grace period, the worker is killed and the result says
// SessionLost. Cancelling ctx does the same (interrupt, kill after the
// grace period). A worker that dies during the execution gives a Result with
// SessionLost and its cause, not an error; errors are ErrBusy, ErrClosed (the
// worker is gone: start another) and failures to talk to the host.
func (p *Proc) Execute(ctx context.Context, req ExecRequest) (*Result, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	if p.busy {
		p.mu.Unlock()
		return nil, ErrBusy
	}
	p.busy = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.busy = false
		p.mu.Unlock()
	}()
	if !p.Alive() {
		return nil, p.deadErr()
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = p.cfg.DefaultTimeout
	}
	id := p.nextID.Add(1)
	// A result left over from an execution abandoned earlier must not be
	// taken for this one's.
	select {
	case <-p.results:
	default:
	}
	if err := p.send(&hostRequest{Op: "execute", ID: id, Code: req.Code, Timeout: timeout}); err != nil {
		return p.lostResult(false, fmt.Sprintf("worker-host %d: send the request: %v", p.hostPid, err)), nil
	}
	backstop := time.NewTimer(timeout + p.cfg.Grace + hostSlack)
	defer backstop.Stop()
	cancelled := false
	done := ctx.Done()
	for {
		select {
		case m := <-p.results:
			if m.ID != id {
				p.log.Error().Int64("id", m.ID).Int64("want", id).Msg("result for another execution (dropped)")
				continue
			}
			if m.Result.SessionLost {
				p.awaitExit()
			}
			return m.Result, nil
		case <-done:
			done = nil
			cancelled = true
			if err := p.send(&hostRequest{Op: "cancel", ID: id}); err != nil {
				p.log.Debug().Err(err).Msg("send cancel")
			}
			backstop.Reset(p.cfg.Grace + hostSlack)
		case <-p.msgsDone:
			select {
			case m := <-p.results:
				if m.ID == id {
					p.awaitExit()
					return m.Result, nil
				}
			default:
			}
			p.awaitExit()
			return p.lostResult(false, p.lostReason()), nil
		case <-backstop.C:
			why := "the timeout"
			if cancelled {
				why = "the cancellation"
			}
			reason := fmt.Sprintf("worker-host %d did not answer within %s of %s; it was killed", p.hostPid, p.cfg.Grace+hostSlack, why)
			p.log.Error().Msg(reason)
			p.setLost(reason)
			p.kill()
			return p.lostResult(!cancelled, reason), nil
		}
	}
}

func (p *Proc) lostResult(timedOut bool, reason string) *Result {
	p.setLost(reason)
	return &Result{SessionLost: true, TimedOut: timedOut, LostReason: reason,
		Denials: []report.Event{}, Artifacts: []Artifact{}}
}

// awaitExit waits for a host that lost its worker to exit (it does so on its
// own), killing it if it takes too long.
func (p *Proc) awaitExit() {
	select {
	case <-p.exited:
	case <-time.After(2 * time.Second):
		p.kill()
	}
	p.awaitWorkerGone()
}

// kill kills the host (its worker dies with it) and waits for it.
func (p *Proc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		p.log.Debug().Err(err).Msg("kill worker-host")
	}
	<-p.exited
}

// awaitWorkerGone waits until the worker process no longer runs: after the
// host is killed, the kernel kills the worker (PTRACE_O_EXITKILL) and init
// reaps it, a moment later.
func (p *Proc) awaitWorkerGone() {
	pid := p.info.WorkerPid
	if pid <= 0 {
		return
	}
	deadline := time.Now().Add(2 * time.Second)
	for procfs.Runs(pid) && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
}

// Close stops the worker and its host and waits for both; it leaves no
// process and no file descriptor behind. It is idempotent.
func (p *Proc) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		select {
		case <-p.exited:
		default:
			// Ask first: the host kills and reaps its tree itself.
			if p.send(&hostRequest{Op: "shutdown"}) == nil {
				select {
				case <-p.exited:
				case <-time.After(2 * time.Second):
				}
			}
			p.kill()
		}
		p.writeMu.Lock()
		p.inW.Close()
		p.writeMu.Unlock()
		<-p.msgsDone
		<-p.logsDone
		p.awaitWorkerGone()
		if pid := p.info.WorkerPid; pid > 0 && procfs.Runs(pid) {
			p.closeErr = fmt.Errorf("worker-host %d: worker %d still runs after its host was killed", p.hostPid, pid)
		}
	})
	return p.closeErr
}

// goRuntimeEnv are the Go runtime's own variables, which a worker-host (a Go
// program) honours like the server.
var goRuntimeEnv = []string{"GODEBUG", "GOTRACEBACK", "GOMAXPROCS", "GOGC", "GOMEMLIMIT"}

// hostEnviron is a worker-host's environment: what config.Build may pass on
// to the worker (config.KeptEnv, every LC_*, the session's --keep-env
// names), TMPDIR (the host's own temporary files: worker.py) and the Go
// runtime's variables. Nothing else of the server's environment (API keys,
// tokens) reaches the host, whose /proc is open to the user's other
// programs for its first milliseconds, before tracer.HideProc runs.
func hostEnviron(environ, keep []string) []string {
	names := map[string]bool{"TMPDIR": true}
	for _, group := range [][]string{config.KeptEnv, keep, goRuntimeEnv} {
		for _, k := range group {
			names[k] = true
		}
	}
	var env []string
	for _, kv := range environ {
		if k, _, ok := strings.Cut(kv, "="); ok && (names[k] || strings.HasPrefix(k, "LC_")) {
			env = append(env, kv)
		}
	}
	return env
}
