package tracer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// StubArg is the hidden first argument that turns a tracecell (or test)
// binary into the stub: the small program that, already traced, loads the
// seccomp filter and execs the target. Go cannot run code between fork and
// exec, so the stub is our own binary re-executed (the runc pattern).
const StubArg = "__tracecell_stub"

// Stub file descriptors (os/exec ExtraFiles start at 3).
const (
	stubConfigFD = 3 // JSON stubConfig, read to EOF
	stubErrorFD  = 4 // close-on-exec: a stubError is written here if exec never happens
	stubExtraFD  = 5 // Config.ExtraFiles, moved to fd 3, 4, ... before the exec
	// stubErrorHigh is where the error pipe moves when extra files take
	// its place.
	stubErrorHigh = 100
)

// Probe constants: the stub makes the probe call twice after the filter is
// loaded; the tracer denies it with probeErrno and uses the second call to see
// the order of the syscall-entry and seccomp stops.
const (
	probeMagic = 0x7c3e1d
	probeErrno = syscall.ENOTUNIQ
)

type rlimit struct {
	Resource int    `json:"resource"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
}

// stubConfig is what the tracer sends the stub.
type stubConfig struct {
	Path    string               `json:"path"`
	Argv    []string             `json:"argv"`
	Env     []string             `json:"env"`
	Dir     string               `json:"dir"`
	Rlimits []rlimit             `json:"rlimits"`
	Filter  []bpf.RawInstruction `json:"filter"`
	ProbeNr int                  `json:"probe_nr"`
	// Extra is the number of Config.ExtraFiles, passed to the stub from fd
	// stubExtraFD on and moved down to fd 3 on before the exec.
	Extra int `json:"extra,omitempty"`
}

// stubError is a failure in the stub, sent back to the tracer as a
// structured error instead of text on the user's stderr.
type stubError struct {
	Stage string `json:"stage"` // "config", "rlimit", "chdir", "no_new_privs", "seccomp", "probe", "exec"
	Errno int    `json:"errno"`
	Msg   string `json:"msg"`
}

func (e *stubError) Error() string {
	if e.Errno != 0 {
		return fmt.Sprintf("stub %s: %s: %v", e.Stage, e.Msg, syscall.Errno(e.Errno))
	}
	return fmt.Sprintf("stub %s: %s", e.Stage, e.Msg)
}

// Unwrap lets errors.Is match the errno.
func (e *stubError) Unwrap() error {
	if e.Errno != 0 {
		return syscall.Errno(e.Errno)
	}
	return nil
}

func init() {
	if len(os.Args) > 1 && os.Args[1] == StubArg {
		stubMain()
	}
}

// stubMain never returns: it execs the target or exits 125.
func stubMain() {
	// The probe must be made twice from the same thread.
	runtime.LockOSThread()
	errFD := stubErrorFD
	fail := func(stage string, err error, msg string) {
		se := &stubError{Stage: stage, Msg: msg}
		var en syscall.Errno
		if errors.As(err, &en) {
			se.Errno = int(en)
		} else if err != nil {
			se.Msg += ": " + err.Error()
		}
		b, _ := json.Marshal(se)
		unix.Write(errFD, b)
		os.Exit(125)
	}
	if _, err := unix.FcntlInt(stubErrorFD, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		fail("config", err, "set close-on-exec on the error pipe")
	}
	cf := os.NewFile(stubConfigFD, "tracecell-stub-config")
	raw, err := io.ReadAll(cf)
	cf.Close()
	if err != nil {
		fail("config", err, "read configuration")
	}
	var c stubConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		fail("config", err, "decode configuration")
	}
	if c.Extra > 0 {
		if err := moveExtraFiles(c.Extra, &errFD); err != nil {
			fail("config", err, "move the extra files to fd 3 on")
		}
	}
	if err := cloexecRest(3 + c.Extra); err != nil {
		fail("config", err, "mark inherited files close-on-exec")
	}
	for _, r := range c.Rlimits {
		lim := unix.Rlimit{Cur: r.Cur, Max: r.Max}
		if err := unix.Setrlimit(r.Resource, &lim); err != nil {
			fail("rlimit", err, fmt.Sprintf("setrlimit(%d, %d)", r.Resource, r.Cur))
		}
	}
	if c.Dir != "" {
		if err := unix.Chdir(c.Dir); err != nil {
			fail("chdir", err, c.Dir)
		}
	}
	// No new privileges: required to load a filter without CAP_SYS_ADMIN,
	// and setuid programs must not gain privileges under us anyway.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail("no_new_privs", err, "prctl(PR_SET_NO_NEW_PRIVS)")
	}
	// Fail closed: without the filter nothing is enforced.
	if err := loadFilter(c.Filter); err != nil {
		fail("seccomp", err, "seccomp(SECCOMP_SET_MODE_FILTER, TSYNC)")
	}
	for i := 0; i < 2; i++ {
		_, _, e := unix.RawSyscall(uintptr(c.ProbeNr), ^uintptr(0), 0, probeMagic)
		if e != probeErrno {
			fail("probe", e, fmt.Sprintf("probe call %d returned %v, want %v: the tracer cannot deny system calls on this kernel", i+1, e, probeErrno))
		}
	}
	err = unix.Exec(c.Path, c.Argv, c.Env)
	fail("exec", err, c.Path)
}

// moveExtraFiles moves n inherited files from fd stubExtraFD on down to fd 3
// on, where the command expects them (as os/exec's ExtraFiles would), and the
// error pipe out of their way. The moved files are not close-on-exec.
func moveExtraFiles(n int, errFD *int) error {
	hi, err := unix.FcntlInt(uintptr(*errFD), unix.F_DUPFD_CLOEXEC, stubErrorHigh)
	if err != nil {
		return os.NewSyscallError("fcntl(F_DUPFD_CLOEXEC)", err)
	}
	unix.Close(*errFD)
	*errFD = hi
	// Ascending order is safe: each source (5+i) is above its target (3+i)
	// and above every earlier target.
	for i := 0; i < n; i++ {
		if err := unix.Dup3(stubExtraFD+i, 3+i, 0); err != nil {
			return os.NewSyscallError(fmt.Sprintf("dup3(%d, %d)", stubExtraFD+i, 3+i), err)
		}
	}
	// The two highest sources are now duplicates nobody expects.
	for fd := 3 + n; fd < stubExtraFD+n; fd++ {
		unix.Close(fd)
	}
	return nil
}

// cloexecRest marks every open fd from first on close-on-exec, so that files
// tracecell itself inherited (from a shell, a service manager, a parent
// holding host files open for writing) do not reach the command: a write
// through an inherited fd is never checked. Marking instead of closing keeps
// the Go runtime's own fds working until the exec (close_range needs 5.9+).
func cloexecRest(first int) error {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, name := range names {
		fd, err := strconv.Atoi(name)
		if err != nil || fd < first {
			continue
		}
		// EBADF: the directory's own fd, closed above.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return os.NewSyscallError(fmt.Sprintf("fcntl(%d, F_SETFD)", fd), err)
		}
	}
	return nil
}
