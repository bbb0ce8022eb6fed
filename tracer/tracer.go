// Package tracer runs a command under ptrace with a seccomp-bpf filter and
// enforces a policy on the system calls the filter traps. It is the only
// package that calls ptrace.
//
// The shape is u-root's strace: Run(cfg) forks the command from the tracer
// thread (see fork_unsafe_linux.go), then one goroutine locked to one OS
// thread waits for every stop of every task in the tree and answers it.
package tracer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/arch"
	"github.com/tracecell/tracecell/decode"
	"github.com/tracecell/tracecell/filter"
	"github.com/tracecell/tracecell/internal/caps"
	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/pathres"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
	"github.com/tracecell/tracecell/syscalls"
)

// Rlimit is a resource limit applied to the tree before the exec. It is the
// one rlimit type of tracecell: config.Build makes the list, reports show it
// (as JSON: name, cur, max), and the child applies it (childSpec keeps the
// kernel's layout of it for the raw prlimit64 after the fork).
type Rlimit struct {
	// Name is how reports and `tracecell policy` call the limit
	// ("cpu_seconds"); the tracer does not use it.
	Name     string `json:"name"`
	Resource int    `json:"-"`   // unix.RLIMIT_*
	Cur      uint64 `json:"cur"` // soft limit
	Max      uint64 `json:"max"` // hard limit
}

// Config is one traced run.
type Config struct {
	Path   string   // executable, already looked up
	Argv   []string // argv[0] included
	Env    []string
	Dir    string // working directory of the command
	Policy *policy.Policy

	Rlimits  []Rlimit
	Timeout  time.Duration // 0: none
	MaxProcs int           // 0: unlimited; live processes of the tree, threads excluded

	// InitialChain are programs the root process may exec once, right
	// after the initial exec, as part of starting the command (the NAME of
	// a "#!/usr/bin/env NAME" script). Such an exec is reported as initial.
	InitialChain []string

	// TraceAll traps read-only opens too, so that OnEvent sees every open.
	TraceAll bool
	// OnEvent is called (on the tracer thread) for every recorded event:
	// every denial and audit; with TraceAll, every allowed checked call too.
	OnEvent func(*report.Event)

	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// ExtraFiles are open files the command inherits at fd 3, 4, ... (as
	// with os/exec). The tracer does not close them.
	ExtraFiles []*os.File
	Log        zerolog.Logger

	// NoFreeze turns off the race hardening (freeze.go): checked calls of a
	// tree with several tasks then run while the other tasks go on, which
	// is faster for threaded programs that write many files but lets a
	// hostile program race the check. Operators opt in with --no-freeze.
	NoFreeze bool
	// NoPathPage makes every checked call that needs it freeze the tree,
	// none run on a copy of its path in the path page (pathpage.go). For
	// tests of the freeze, and a way back should the page ever be in a
	// program's way.
	NoPathPage bool
	// MaxDenials caps Result.Denials (0: 10000). Counts stay exact.
	MaxDenials int
	// KeepCaps are the capabilities the tree may keep of those tracecell
	// has (caps.DefaultKeep is what the CLI and the session server use;
	// the zero value keeps none). Without capabilities (a non-root
	// tracecell) there is nothing to drop and this does nothing.
	KeepCaps caps.Set
	// OnStart, if set, is called once, on the tracer thread, with the pid
	// of the command's process as soon as it is traced, before it runs any
	// code of the command. It is the tracer's own knowledge (it forked that
	// process), for callers that signal the command: what the command says
	// about itself (a pid in a message) is its own claim, which its start-up
	// files can forge.
	OnStart func(pid int)
	// OnRunning, if set, is called once, on the tracer thread, right after
	// the command's own program was let go from its first exec: while it
	// loads, the tracer has nothing to answer, and a caller may do there
	// work it would otherwise do after the run (the CLI builds the report's
	// JSON encoders). Stops of the tree wait for it: it must be short and
	// must not block.
	OnRunning func()
}

// Result is what a run produced.
type Result struct {
	ExitCode int            // exit code, -1 when killed by a signal
	Signal   syscall.Signal // the signal that killed the command, 0 if it exited
	TimedOut bool
	// Interrupted is set when the run was stopped through the context.
	Interrupted bool
	Counts      report.Counts
	Denials     []report.Event
	Dropped     int
	ScratchLeft []string
	CPUUser     time.Duration
	CPUSystem   time.Duration
	PeakRSSKB   int64
	Wall        time.Duration
	// CapsDropped are the capabilities tracecell had and the tree did not
	// get (Config.KeepCaps); CapsKept those it kept.
	CapsDropped, CapsKept caps.Set
	// Freezes counts the checked calls that ran with the rest of the tree
	// stopped (freeze.go); 0 for a single-task tree.
	Freezes int
	// Copies counts the checked calls that ran on a copy of their path in
	// the path page instead (pathpage.go); PageMaps the page's mappings.
	Copies, PageMaps int
	// FrozenCopies counts the arguments of frozen calls that ran on a copy
	// in the path page (copy and freeze, pathpage.go).
	FrozenCopies int
}

// StartError is a failure to start the command, with the exit status the
// CLI should use (125 tracecell, 126 not executable, 127 not found).
type StartError struct {
	Status int
	Err    error
}

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Ptrace options, given to PTRACE_SEIZE (3.4) before the child loads the
// filter. Auto-attached children inherit them and the seized mode: their
// first stop, group-stops and PTRACE_INTERRUPT stops are PTRACE_EVENT_STOP.
const ptraceOptions = unix.PTRACE_O_TRACESECCOMP | // stop at SECCOMP_RET_TRACE
	unix.PTRACE_O_TRACEFORK | // follow fork() children
	unix.PTRACE_O_TRACEVFORK | // follow vfork() children (Python's subprocess)
	unix.PTRACE_O_TRACECLONE | // follow clone(): threads and processes
	unix.PTRACE_O_TRACEEXEC | // stop after a successful exec: enforce against /proc/<pid>/exe
	unix.PTRACE_O_TRACESYSGOOD | // syscall stops report SIGTRAP|0x80 (the probe; the end of a frozen call)
	unix.PTRACE_O_EXITKILL // the tree dies with tracecell (3.8)

// dirCacheMax bounds the directories a run's path walks remember.
const dirCacheMax = 4096

// Run starts cfg's command and traces it to the end. A non-nil error with a
// nil Result means the command never started (see StartError).
func Run(ctx context.Context, cfg *Config) (*Result, error) {
	if cfg.Policy == nil {
		return nil, &StartError{125, errors.New("no policy")}
	}
	if err := quietChildStops(); err != nil {
		return nil, &StartError{125, err}
	}
	if err := checkPtraceAllowed(); err != nil {
		return nil, &StartError{125, err}
	}
	if err := HideProc(); err != nil {
		return nil, &StartError{125, err}
	}
	pc := cfg.Policy.Config()
	// Never-reachable endpoints (the session server's sockets) are checked
	// whatever the net mode: connect and send are trapped then even under
	// --net allow.
	trapNet := pc.Net != policy.NetAllow || len(pc.Unreachable) > 0
	fopts := filter.Options{
		Table:         syscalls.Native(),
		TrapReadOpens: cfg.TraceAll || pc.ChecksReads(),
		TrapAllClones: cfg.MaxProcs > 0,
		TrapNet:       trapNet,
		PathPage:      usePathPage(cfg),
	}
	prog, err := filter.Raw(fopts)
	if err != nil {
		return nil, &StartError{125, fmt.Errorf("build seccomp filter: %w", err)}
	}
	probeNr, ok := syscalls.Native().Nr("mkdirat")
	if !ok {
		return nil, &StartError{125, errors.New("no mkdirat in the syscall table")}
	}
	cst, err := caps.Current()
	if err != nil {
		return nil, &StartError{125, err}
	}
	drop := cst.Plan(cfg.KeepCaps)
	if drop.NoSetpcap {
		// A container that runs as root with only the capabilities it
		// added (drop ALL, add SYS_PTRACE) lands here: name the flags that
		// keep exactly what cannot be dropped.
		keep := "--keep-cap all"
		if n := drop.Bounding.Names(); len(n) <= 3 {
			keep = "--keep-cap " + strings.Join(n, " --keep-cap ")
		}
		return nil, &StartError{125, fmt.Errorf("cannot drop the capabilities %s from the tree: tracecell runs as root without CAP_SETPCAP, which changing the bounding set needs; run tracecell as a non-root user, give it CAP_SETPCAP, or let the tree keep them with %s", drop.Bounding, keep)}
	}
	sc := startConfig{Path: cfg.Path, Argv: cfg.Argv, Env: cfg.Env, Dir: cfg.Dir, Filter: prog, ProbeNr: probeNr, Caps: drop}
	// A copy: the core limit below must not land in the caller's array.
	sc.Rlimits = append(make([]Rlimit, 0, len(cfg.Rlimits)+1), cfg.Rlimits...)
	// No core files, whatever the caller asked: the kernel writes one in
	// the crashing task's cwd, which the tree may move anywhere (chdir is
	// never denied), through no call the tracer sees. The hard limit too:
	// without CAP_SYS_RESOURCE (dropped for a root tree) it cannot be
	// raised again. A core_pattern pipe (systemd-coredump) still gets
	// the dump: the host's own handler, writing where the host says.
	sc.Rlimits = append(sc.Rlimits, Rlimit{Name: "core_bytes", Resource: unix.RLIMIT_CORE, Cur: 0, Max: 0})
	t := newTracer(cfg, probeNr)
	res := make(chan *Result, 1)
	errc := make(chan error, 1)
	go func() {
		// ptrace requests are only accepted from the tracer thread, and
		// Pdeathsig fires when the thread that forked dies: one locked
		// thread for the tracer's whole life. After a failure the thread
		// stays locked, so Go retires it when this goroutine ends: a task
		// of the tree may still be attached to it.
		runtime.LockOSThread()
		r, err := t.run(ctx, &sc)
		if err != nil {
			errc <- err
			return
		}
		// The loop ended at ECHILD: the thread has no child left, traced
		// or not, so nothing ties it to the tree. Given back, it spares
		// the runtime the exit of a locked thread and the start of
		// another while the caller waits for the result (0.2 ms off the
		// median of 100 interleaved `run -- /bin/true`, bench VM).
		runtime.UnlockOSThread()
		res <- r
	}()
	select {
	case r := <-res:
		return r, nil
	case err := <-errc:
		return nil, err
	}
}

func checkPtraceAllowed() error {
	b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope")
	if err == nil && len(b) > 0 && b[0] == '3' {
		return errors.New("ptrace is disabled on this host (kernel.yama.ptrace_scope=3, which cannot be lowered without a reboot): tracecell cannot run here")
	}
	return nil
}

// tracer is the loop: it waits for the stops of the tree and answers them,
// wiring the state it owns through the types that keep it — the tree
// registry (tree.go), the freeze state (freeze.go), the path page
// (page.go) and the ledgers (ledger.go, pty.go) — to the configuration,
// the policy and the registers of the stop at hand.
type tracer struct {
	cfg    *Config        // the run
	pol    *policy.Policy // cfg.Policy: what is decided
	layout *arch.Layout   // the native ABI's registers
	table  *syscalls.Table
	// probeNr is the syscall number of the start-up probe (mkdirat, probe).
	probeNr int
	// noSyscallInfo: PTRACE_GET_SYSCALL_INFO answered EIO or EINVAL (a
	// kernel before 5.3); compatStop no longer asks.
	noSyscallInfo bool

	// dirs caches the directories path walks have met (pathres.DirCache),
	// and each task's cwd is remembered (base), only when every checked
	// call of a tree of more than one task runs with the tree frozen (nil
	// otherwise, see newDirCache; dirCache says when it is used).
	dirs     *pathres.DirCache
	audit    bool // policy mode audit: denials are recorded, not enforced
	trapNet  bool // the network is not open: connect, send and listen are checked
	loopback bool // --net loopback: datagram sends are checked for the socket they leave from
	// loopbackIfs caches which interface indexes are loopback ones
	// (loopbackIf), asked for when a pktinfo control message names one.
	loopbackIfs map[int32]bool
	// readsChecked: the policy restricts reads (read roots, deny-read), so
	// a read-only open is a decision a race could subvert.
	readsChecked bool

	// tree is the registry of tasks and processes (tree.go).
	tree tree
	// fz holds the statuses reaped and the tasks stopped by freezes
	// (freeze.go).
	fz freezeState
	// page is the path page's slots and counters (page.go).
	page pathPage

	// mem reads the tracees' memory; regs holds the registers of the stop
	// being answered, read into regBuf (readRegs).
	mem    memReader
	regs   *arch.Regs
	regBuf []byte
	// dec and env are the decode stage of the call being decided
	// (decoder), kept here so that a stop allocates neither.
	dec decode.Decoder
	env decEnv
	// ledger records the scratch entries the tree owns (ledger.go).
	ledger *ledger
	// bound holds the inet sockets (by inode) that a bind of the tree's
	// bound to an allowed address: listen may use them (listen.go).
	bound boundSockets
	// ptys are the pseudo-terminals the tree may open by name (pty.go).
	ptys *ptyLedger
	// foreignCtty, once set, says which process of the tree was seen with
	// a controlling terminal not the tree's own (ctty.go): an fd of
	// /dev/tty whose terminal cannot be asked may be one of it.
	foreignCtty, foreignCttyPath string
	// rec keeps the counts and the recorded denials (ledger.go).
	rec recorder

	// Probe state: 0 nothing seen, 1 first probe denied, 2 order verified.
	probeState   int
	probeEntry   bool // syscall-entry stop of the second probe seen
	rootExecDone bool // the root process's initial exec has happened (execEvent)
	// chainLeft: the root process may still make its one InitialChain exec.
	chainLeft bool

	// spin decides how long the loop polls wait4 before it blocks
	// (spin.go).
	spin spinPolicy

	// mainStatus is the root process's end, nil until it has ended.
	mainStatus *unix.WaitStatus
}

// newDirCache is the walk cache of a run, nil in audit and --no-freeze
// runs. There a task is checked while the others run on: a rename under way
// (RENAME_EXCHANGE of a cached directory and a symlink) could swap a
// directory between two lstats of one walk, and the cache would keep what
// the walk found under the wrong name, turning one won race into escapes
// for the rest of the run; and a task could be checked against a cwd a
// sibling's chdir, already let go, is about to change.
func newDirCache(cfg *Config) *pathres.DirCache {
	if cfg.Policy.Config().Mode == policy.Audit || cfg.NoFreeze {
		return nil
	}
	return pathres.NewDirCache(dirCacheMax)
}

func newTracer(cfg *Config, probeNr int) *tracer {
	l := arch.Native
	t := &tracer{
		cfg: cfg, pol: cfg.Policy, layout: l, table: syscalls.Native(), probeNr: probeNr,
		dirs: newDirCache(cfg),
		regs: l.NewRegs(), regBuf: make([]byte, l.Size()), ledger: newLedger(cfg.Policy.Config().Scratch), bound: boundSockets{}, ptys: newPtyLedger(),
		audit:        cfg.Policy.Config().Mode == policy.Audit,
		trapNet:      cfg.Policy.Config().Net != policy.NetAllow,
		loopback:     cfg.Policy.Config().Net == policy.NetLoopback,
		readsChecked: cfg.Policy.Config().ChecksReads(),
		chainLeft:    len(cfg.InitialChain) > 0,
		rec:          recorder{maxDenials: cfg.MaxDenials, onEvent: cfg.OnEvent},
		spin:         newSpinPolicy(),
	}
	t.tree.init()
	t.fz.tree = &t.tree
	t.page.init(usePathPage(cfg))
	return t
}

// usePathPage reports whether a run copies paths into the path page: when
// its calls would freeze otherwise (enforce mode, the freeze on).
func usePathPage(cfg *Config) bool {
	return cfg.Policy.Config().Mode != policy.Audit && !cfg.NoFreeze && !cfg.NoPathPage
}

// run starts the command and runs the event loop.
//
// Precondition: the calling goroutine is locked to its OS thread.
func (t *tracer) run(ctx context.Context, sc *startConfig) (*Result, error) {
	stdio, err := newChildStdio(t.cfg)
	if err != nil {
		return nil, &StartError{125, err}
	}
	t.ptys.addStdio(stdio.files[:])
	errR, errW, err := os.Pipe()
	if err != nil {
		stdio.abort()
		return nil, &StartError{125, fmt.Errorf("start error pipe: %w", err)}
	}
	// The child says on readyW that it may be seized, then waits on syncR
	// until it is (fork_unsafe_linux.go).
	var pipes [2][2]*os.File // ready, sync: read and write ends
	for i, name := range []string{"ready", "sync"} {
		r, w, err := os.Pipe()
		if err != nil {
			stdio.abort()
			errR.Close()
			errW.Close()
			return nil, &StartError{125, fmt.Errorf("start %s pipe: %w", name, err)}
		}
		defer r.Close()
		defer w.Close()
		pipes[i] = [2]*os.File{r, w}
	}
	readyR, readyW, syncR, syncW := pipes[0][0], pipes[0][1], pipes[1][0], pipes[1][1]
	files := stdio.fds()
	for _, f := range t.cfg.ExtraFiles {
		files = append(files, int(f.Fd()))
	}
	spec, err := newChildSpec(sc.Path, sc.Argv, sc.Env, sc.Dir, files, sc.Rlimits, sc.Caps, sc.Filter, sc.ProbeNr, int(errW.Fd()), int(readyW.Fd()), int(syncR.Fd()))
	if err != nil {
		stdio.abort()
		errR.Close()
		errW.Close()
		return nil, &StartError{125, fmt.Errorf("prepare the start of %s: %w", sc.Path, err)}
	}
	start := time.Now()
	// No fd may be created without close-on-exec between listing the open
	// fds and the fork (os/exec holds the same lock for the same reason).
	syscall.ForkLock.Lock()
	spec.others = openFDs()
	pid, err := forkTraced(spec)
	syscall.ForkLock.Unlock()
	errW.Close()
	readyW.Close()
	stdio.started()
	if err != nil {
		errR.Close()
		stdio.abort()
		return nil, &StartError{125, os.NewSyscallError("clone", err)}
	}
	// A blocking read on the tracer thread: parking the locked goroutine
	// in the poller would cost a hand-off between threads.
	var ready [1]byte
	if b, _ := procfs.ReadFD(int(readyR.Fd()), ready[:]); len(b) != 1 {
		// The child ended before it could be seized: its report is on
		// the error pipe.
		se := readStartError(errR, sc)
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, unix.WALL, nil)
		stdio.abort()
		if se == nil {
			se = &startError{Stage: "dumpable", Msg: "the child ended before it could be traced"}
		}
		return nil, startFailure(se, sc.Path)
	}
	if err := seizeChild(pid, syncW); err != nil {
		unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, unix.WALL, nil)
		errR.Close()
		stdio.abort()
		return nil, &StartError{125, err}
	}
	startErrs := make(chan *startError, 1)
	go func() { startErrs <- readStartError(errR, sc) }()

	t.tree.rootPid = pid
	root := t.tree.add(pid, pid)
	root.initialExec = true
	root.attached = true
	t.rec.counts.Processes = 1
	t.rec.counts.Threads = 1
	if t.cfg.OnStart != nil {
		t.cfg.OnStart(pid)
	}

	// The killer stops the tree on timeout or cancellation. It only sends
	// signals, so it may run on any thread.
	done := make(chan struct{})
	defer close(done)
	var timeout <-chan time.Time
	if t.cfg.Timeout > 0 {
		tm := time.NewTimer(t.cfg.Timeout)
		defer tm.Stop()
		timeout = tm.C
	}
	go func() {
		select {
		case <-done:
		case <-timeout:
			t.tree.stopBy(true)
			t.tree.killAll()
		case <-ctx.Done():
			t.tree.stopBy(false)
			t.tree.killAll()
		}
	}()

	if err := t.loop(); err != nil {
		t.tree.killAll()
		t.drain()
		stdio.wait()
		return nil, err
	}
	// Everything that held the tree's stdout/stderr is gone: finish
	// copying them to non-file writers.
	stdio.wait()
	se := <-startErrs
	wall := time.Since(start)
	if se != nil && !t.rootExecDone {
		return nil, startFailure(se, sc.Path)
	}

	var children unix.Rusage
	unix.Getrusage(unix.RUSAGE_CHILDREN, &children)
	r := &Result{
		Counts: t.rec.counts, Denials: t.rec.denials, Dropped: t.rec.dropped, Wall: wall,
		CPUUser:   time.Duration(children.Utime.Nano()),
		CPUSystem: time.Duration(children.Stime.Nano()),
		PeakRSSKB: children.Maxrss,
		Freezes:   t.fz.freezes, Copies: t.page.copies, PageMaps: t.page.maps, FrozenCopies: t.page.frozenCopies,
		CapsDropped: sc.Caps.Dropped, CapsKept: sc.Caps.Kept,
	}
	r.Counts.Freezes, r.Counts.Copied = t.fz.freezes, t.page.copies
	r.TimedOut, r.Interrupted = t.tree.stopReason()
	if ws := t.mainStatus; ws != nil {
		switch {
		case ws.Exited():
			r.ExitCode = ws.ExitStatus()
		case ws.Signaled():
			r.ExitCode = -1
			r.Signal = ws.Signal()
		}
	}
	r.ScratchLeft = t.ledger.left()
	return r, nil
}

// readStartError reads the child's failure report from the error pipe and
// closes it: nil when the pipe closed without one (close-on-exec closes the
// write end at a successful exec).
func readStartError(errR *os.File, sc *startConfig) *startError {
	var b [8]byte
	n, _ := io.ReadFull(errR, b[:])
	errR.Close()
	if n < len(b) {
		return nil
	}
	stage := int32(binary.NativeEndian.Uint32(b[0:4]))
	errno := int(int32(binary.NativeEndian.Uint32(b[4:8])))
	name := stageNames[stage]
	if name == "" {
		name = fmt.Sprintf("stage %d", stage)
	}
	return &startError{Stage: name, Errno: errno, Msg: startStageMsg(name, sc)}
}

// seizeChild attaches to the forked child with PTRACE_SEIZE and the trace
// options, then lets it go on by writing one byte on the sync pipe.
//
// Precondition: the calling goroutine is locked to the tracer thread (the
// one that forked pid).
func seizeChild(pid int, sync *os.File) error {
	// unix.PtraceSeize passes no options; they must be set before the
	// child runs on (it loads the filter next).
	if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(pid), 0, ptraceOptions, 0, 0); e != 0 {
		return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_SEIZE) pid %d", pid), e)
	}
	if _, err := sync.Write([]byte{1}); err != nil {
		return fmt.Errorf("start sync pipe: %w", err)
	}
	return nil
}

// startFailure turns a failure before the exec into the error and exit status the
// CLI reports.
func startFailure(se *startError, path string) error {
	if se.Stage == "exec" {
		switch syscall.Errno(se.Errno) {
		case syscall.ENOENT:
			return &StartError{127, fmt.Errorf("%s: command not found", path)}
		case syscall.EACCES, syscall.ENOEXEC, syscall.EISDIR, syscall.ETXTBSY:
			return &StartError{126, fmt.Errorf("%s: cannot execute: %v", path, syscall.Errno(se.Errno))}
		}
	}
	if se.Stage == "seccomp" {
		return &StartError{125, fmt.Errorf("cannot load the seccomp filter (%w): tracecell refuses to run unconfined; the kernel needs CONFIG_SECCOMP_FILTER (3.5+) and TSYNC (3.17+)", se)}
	}
	return &StartError{125, se}
}

// removeTask forgets task tid (tree.remove) and frees what it held: the
// path page slots of its calls in flight, its place in the frozen set.
func (t *tracer) removeTask(tid int) {
	tk := t.tree.remove(tid)
	if tk == nil {
		return
	}
	t.page.release(tk) // its copied call died with it
	t.fz.forget(tid)   // gone: nothing to resume (its tid may be reused)
}

// drain reaps whatever is left after a fatal tracer error.
func (t *tracer) drain() {
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(-1, &ws, unix.WALL, nil); err == unix.ECHILD {
			return
		} else if err != nil && err != unix.EINTR {
			return
		}
	}
}

// loop waits for stops until no traced task is left.
//
// Precondition: the calling goroutine is locked to the tracer thread.
func (t *tracer) loop() error {
	var ws unix.WaitStatus
	for {
		if t.fz.queued() {
			p := t.fz.unqueue()
			if err := t.handle(p.tid, p.ws); err != nil {
				return err
			}
			if err := t.thawIfDue(); err != nil {
				return err
			}
			continue
		}
		// Never wait with tasks frozen.
		if err := t.thaw(); err != nil {
			return err
		}
		// A program that makes checked calls in a row stops again within
		// microseconds: poll for that stop for a short while instead of
		// sleeping, because waking a sleeping tracer costs a cross-CPU
		// interrupt (expensive in virtual machines) on every call; but
		// only while that pays (spin.go). Every task of the tree may be
		// running now: none is held stopped past the thaw above.
		// No rusage: for every stop it reports, wait4 with one sums the
		// CPU time of all the stopped task's threads (wait_task_stopped
		// calls getrusage(RUSAGE_BOTH)); the tree's totals come from
		// RUSAGE_CHILDREN at the end.
		begin := time.Now()
		var tid int
		var err error
		if d := t.spin.budget(len(t.tree.tasks), begin); d > 0 {
			tid, err = pollWait4(&ws, d)
		}
		if tid == 0 && err == nil {
			tid, err = unix.Wait4(-1, &ws, unix.WALL, nil)
		}
		if tid > 0 {
			t.spin.observe(time.Since(begin))
		}
		if err == unix.EINTR {
			continue
		}
		if err == unix.ECHILD {
			return nil
		}
		if err != nil {
			return os.NewSyscallError("wait4", err)
		}
		if err := t.handle(tid, ws); err != nil {
			return err
		}
	}
}

func (t *tracer) handle(tid int, ws unix.WaitStatus) error {
	if ws.Exited() || ws.Signaled() {
		t.exited(tid, ws)
		return nil
	}
	if !ws.Stopped() {
		return nil
	}
	tk := t.tree.tasks[tid]
	held := 0
	if tk != nil && staleExecer(tk) {
		held = t.retireStale(tk) // a new task with the tid of a thread that exec'd (stale.go)
		tk = nil
	}
	if tk == nil {
		// A new child can report its first stop before its parent's fork
		// event; its thread group is settled when the event arrives.
		tk = t.tree.add(tid, firstStopTgid(tid))
		tk.held = held
		tk.waitStop = true
		// Its parent's saved restart is not known before that event.
		tk.futexRestart = decode.RestartUnknown
		t.rec.taskBorn(tk)
	}
	if t.tree.dying.Load() {
		// Born or stopped while the tree is being killed (a fork racing
		// with killAll): kill it too, and never run its call.
		unix.Kill(tid, unix.SIGKILL)
		if ws.StopSignal() == unix.SIGTRAP && ws.TrapCause() == unix.PTRACE_EVENT_SECCOMP {
			if t.readRegs(tid) == nil {
				t.deny(tid, syscall.EPERM)
			}
		}
		return t.resume(tid, 0)
	}
	sig := ws.StopSignal()
	switch {
	case sig == unix.SIGTRAP|0x80:
		// Syscall stop: the probe, or the end of a checked call that was
		// left to finish unfrozen.
		return t.syscallStop(tk)
	case stopEvent(ws) == unix.PTRACE_EVENT_STOP:
		// The tree is seized: a new child's first stop, a group-stop (the
		// stop signal is reported, not SIGTRAP) or a PTRACE_INTERRUPT
		// that a freeze sent to a task already stopped. None keeps the
		// task stopped: job control does not stop a traced tree (as
		// before), and a freeze is over once its call has finished.
		tk.waitStop = false
		tk.attached = true
		return t.resume(tid, 0)
	case sig == unix.SIGTRAP && ws.TrapCause() > 0:
		return t.event(tk, ws.TrapCause())
	}
	tk.attached = true
	if sig == unix.SIGSYS {
		// A call of a foreign ABI, trapped by the filter (foreign.go)?
		if done, err := t.foreignTrap(tk); done || err != nil {
			return err
		}
	}
	// Or one whose SIGSYS the kernel dropped for another pending one.
	if done, err := t.compatStop(tk); done || err != nil {
		return err
	}
	// A signal-delivery stop: pass the signal on. A group-stop (GETSIGINFO
	// fails with EINVAL; the tree is seized, so they come as
	// PTRACE_EVENT_STOP above) is resumed without a signal.
	if err := ptraceGetsiginfo(tid); err == unix.EINVAL {
		return t.resume(tid, 0)
	}
	return t.resume(tid, int(sig))
}

// stopEvent is the PTRACE_EVENT_* of a stop status, 0 for none. Unlike
// WaitStatus.TrapCause it also sees a group-stop's PTRACE_EVENT_STOP, which
// reports the stop signal instead of SIGTRAP.
func stopEvent(ws unix.WaitStatus) int {
	if !ws.Stopped() {
		return 0
	}
	return int(ws>>16) & 0xff
}

// resume continues tid. During the probe the root thread is resumed with
// PTRACE_SYSCALL so that the order of its stops can be observed.
func (t *tracer) resume(tid int, sig int) error {
	var err error
	if t.probeState == 1 && tid == t.tree.rootPid {
		err = ptraceResume(unix.PTRACE_SYSCALL, tid, sig)
	} else {
		err = ptraceResume(unix.PTRACE_CONT, tid, sig)
	}
	if err == unix.ESRCH {
		// Killed meanwhile (exit_group, SIGKILL): its exit is reported by wait4.
		return nil
	}
	if err != nil {
		return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_CONT) pid %d", tid), err)
	}
	return nil
}

func (t *tracer) exited(tid int, ws unix.WaitStatus) {
	tk := t.tree.tasks[tid]
	if tk != nil && tk.tid == tk.tgid {
		// With __WALL a group leader is reported once its whole thread
		// group has exited (the kernel delays the leader's reaping).
		t.dropExecers(tk.tgid)
		t.lifecycle(tk.tgid, tid, "exit", func(ev *report.Event) {
			if ws.Signaled() {
				ev.Signal = syscalls.SignalName(int(ws.Signal()))
			} else {
				c := ws.ExitStatus()
				ev.ExitCode = &c
			}
		})
	}
	if tid == t.tree.rootPid && t.mainStatus == nil {
		st := ws
		t.mainStatus = &st
		// The main program is gone: the rest of the tree goes with it.
		t.removeTask(tid)
		if n := t.tree.liveGroups(); n > 0 {
			t.rec.counts.KilledAtExit = n
			t.tree.killAll()
		}
		return
	}
	if tk != nil {
		t.removeTask(tid)
	}
}
