package tracer

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/net/bpf"

	"github.com/tracecell/tracecell/internal/caps"
)

// Probe constants: the child makes the probe call twice after the filter is
// loaded; the tracer denies it with probeErrno and uses the second call to see
// the order of the syscall-entry and seccomp stops.
const (
	probeMagic = 0x7c3e1d
	probeErrno = syscall.ENOTUNIQ
)

// startConfig is how the command starts: what the child between fork and
// exec does (see fork_unsafe_linux.go).
type startConfig struct {
	Path    string
	Argv    []string
	Env     []string
	Dir     string
	Rlimits []Rlimit // Config.Rlimits plus RLIMIT_CORE 0
	Caps    caps.Drop
	Filter  []bpf.RawInstruction
	ProbeNr int
}

// startError is a failure of the child before its exec, sent back to the
// tracer as a stage and an errno instead of text on the user's stderr.
type startError struct {
	Stage string // "setsid", "sync", "rlimit", "chdir", "no_new_privs", "seccomp", "probe", "exec", ...
	Errno int
	Msg   string
}

func (e *startError) Error() string {
	if e.Errno != 0 {
		return fmt.Sprintf("start %s: %s: %v", e.Stage, e.Msg, syscall.Errno(e.Errno))
	}
	return fmt.Sprintf("start %s: %s", e.Stage, e.Msg)
}

// Unwrap lets errors.Is match the errno.
func (e *startError) Unwrap() error {
	if e.Errno != 0 {
		return syscall.Errno(e.Errno)
	}
	return nil
}

// startStageMsg says what the child was doing at a stage.
func startStageMsg(stage string, sc *startConfig) string {
	switch stage {
	case "rlimit":
		return "setrlimit"
	case "chdir":
		return sc.Dir
	case "capabilities":
		return fmt.Sprintf("dropping the capabilities %s (capset, prctl(PR_CAPBSET_DROP))", sc.Caps.Dropped)
	case "no_new_privs":
		return "prctl(PR_SET_NO_NEW_PRIVS)"
	case "seccomp":
		return "seccomp(SECCOMP_SET_MODE_FILTER)"
	case "probe":
		return "the probe call was not denied: the tracer cannot deny system calls on this kernel"
	case "exec":
		return sc.Path
	case "sync":
		return "waiting for the tracer to attach (PTRACE_SEIZE)"
	case "dumpable":
		return "prctl(PR_SET_DUMPABLE) or telling the tracer it may attach"
	case "pdeathsig":
		return "prctl(PR_SET_PDEATHSIG) or the tracer is gone"
	}
	return "starting " + sc.Path
}

// openFDs lists tracecell's open file descriptors above 2.
func openFDs() []int {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var fds []int
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd > 2 {
			fds = append(fds, fd)
		}
	}
	return fds
}

// childStdio gives the command its fds 0, 1 and 2 the way os/exec does: an
// *os.File is passed as it is, nil is /dev/null, any other reader or writer
// gets a pipe and a goroutine that copies.
type childStdio struct {
	files   [3]*os.File    // what the child gets
	closeAt []*os.File     // ours to close once the child has started
	copies  sync.WaitGroup // output copies
	onAbort []*os.File     // the stdin pipe's write end
}

func newChildStdio(cfg *Config) (*childStdio, error) {
	s := &childStdio{}
	in, err := s.reader(cfg.Stdin)
	if err != nil {
		s.abort()
		return nil, err
	}
	s.files[0] = in
	for i, w := range []io.Writer{cfg.Stdout, cfg.Stderr} {
		f, err := s.writer(w)
		if err != nil {
			s.abort()
			return nil, err
		}
		s.files[1+i] = f
	}
	return s, nil
}

func (s *childStdio) devNull(flag int) (*os.File, error) {
	f, err := os.OpenFile(os.DevNull, flag, 0)
	if err != nil {
		return nil, err
	}
	s.closeAt = append(s.closeAt, f)
	return f, nil
}

func (s *childStdio) reader(r io.Reader) (*os.File, error) {
	if r == nil {
		return s.devNull(os.O_RDONLY)
	}
	if f, ok := r.(*os.File); ok {
		return f, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	s.closeAt = append(s.closeAt, pr)
	s.onAbort = append(s.onAbort, pw)
	go func() {
		io.Copy(pw, r)
		pw.Close()
	}()
	return pr, nil
}

func (s *childStdio) writer(w io.Writer) (*os.File, error) {
	if w == nil {
		return s.devNull(os.O_WRONLY)
	}
	if f, ok := w.(*os.File); ok {
		return f, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	s.closeAt = append(s.closeAt, pw)
	s.copies.Add(1)
	go func() {
		defer s.copies.Done()
		io.Copy(w, pr)
		pr.Close()
	}()
	return pw, nil
}

// fds are the descriptors the child gets as 0, 1 and 2.
func (s *childStdio) fds() []int {
	return []int{int(s.files[0].Fd()), int(s.files[1].Fd()), int(s.files[2].Fd())}
}

// started closes our copies of the child's ends: the copies then end when
// the tree lets go of them.
func (s *childStdio) started() {
	for _, f := range s.closeAt {
		f.Close()
	}
	s.closeAt = nil
}

// abort closes everything when the child never started.
func (s *childStdio) abort() {
	s.started()
	for _, f := range s.onAbort {
		f.Close()
	}
	s.onAbort = nil
}

// wait waits for the output copies to finish. A stdin copy still blocked
// reading the caller's reader is not waited for (os/exec behaves the same
// once the process has exited).
func (s *childStdio) wait() {
	for _, f := range s.onAbort {
		f.Close()
	}
	s.copies.Wait()
}
