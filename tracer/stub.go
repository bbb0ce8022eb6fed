package tracer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
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
	errFile := os.NewFile(stubErrorFD, "tracecell-stub-errors")
	fail := func(stage string, err error, msg string) {
		se := &stubError{Stage: stage, Msg: msg}
		var en syscall.Errno
		if errors.As(err, &en) {
			se.Errno = int(en)
		} else if err != nil {
			se.Msg += ": " + err.Error()
		}
		b, _ := json.Marshal(se)
		errFile.Write(b)
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
