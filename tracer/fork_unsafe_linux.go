package tracer

// The start of the traced command without a stub process: the tracer thread
// forks, and the child — a copy of tracecell with one thread, running only
// raw system calls on memory prepared before the fork — waits until the
// tracer has attached to it with PTRACE_SEIZE and its options, loads the seccomp filter,
// makes the probe calls and execs the command. This is what os/exec does
// between fork and exec (syscall.forkAndExecInChild1), plus the steps os/exec
// has no hook for. It saves re-executing tracecell (a Go binary of several
// megabytes) as a stub on every run: about 5 ms of start-up.
//
// All unsafe code of the start lives in this file.

import (
	"syscall"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/internal/caps"
)

// Runtime hooks around fork, as package syscall uses them. They block
// signals and stop the runtime from doing anything in the child that needs
// more than the forking thread. The runtime keeps them available to
// linkname (go.dev/issue/67401; gVisor's ptrace platform uses them too).

//go:linkname runtimeBeforeFork syscall.runtime_BeforeFork
func runtimeBeforeFork()

//go:linkname runtimeAfterFork syscall.runtime_AfterFork
func runtimeAfterFork()

//go:linkname runtimeAfterForkInChild syscall.runtime_AfterForkInChild
func runtimeAfterForkInChild()

// Child start stages, reported through the error pipe.
const (
	stageSetsid = iota + 1
	stagePdeathsig
	stageDumpable
	stageSync
	stageFiles
	stageCloexec
	stageRlimit
	stageChdir
	stageCaps
	stageNoNewPrivs
	stageSeccomp
	stageProbe
	stageExec
)

var stageNames = map[int32]string{
	stageSetsid: "setsid", stagePdeathsig: "pdeathsig", stageDumpable: "dumpable", stageSync: "sync",
	stageFiles: "files", stageCloexec: "cloexec", stageRlimit: "rlimit", stageChdir: "chdir", stageCaps: "capabilities",
	stageNoNewPrivs: "no_new_privs", stageSeccomp: "seccomp", stageProbe: "probe", stageExec: "exec",
}

// childRlimit is one Rlimit in the form the child passes to the raw
// prlimit64 (Linux 2.6.36): the resource as the syscall argument and the
// limit in the kernel's struct rlimit64 layout, at an address that lives in
// the spec. The child may not allocate or grow its stack, so it cannot build
// them from the Rlimit list itself; childRlimits derives them before the fork.
type childRlimit struct {
	resource uintptr     // unix.RLIMIT_*, prlimit64's second argument
	lim      unix.Rlimit // struct rlimit64 {rlim_cur, rlim_max}, its third
}

// childRlimits is rl in the child's fixed layout.
func childRlimits(rl []Rlimit) []childRlimit {
	out := make([]childRlimit, 0, len(rl))
	for _, r := range rl {
		out = append(out, childRlimit{uintptr(r.Resource), unix.Rlimit{Cur: r.Cur, Max: r.Max}})
	}
	return out
}

// childSpec is everything the child needs, prepared before the fork: the
// child may not allocate, grow its stack or take locks.
type childSpec struct {
	path    *byte
	argv    []*byte // NULL-terminated
	envv    []*byte // NULL-terminated
	dir     *byte   // nil: stay
	files   []int   // files[i] becomes fd i in the child
	others  []int   // every other fd open in tracecell at the fork: marked close-on-exec
	rlimits []childRlimit
	fprog   unix.SockFprog
	filter  []unix.SockFilter
	probeNr uintptr
	// Capabilities (caps.Drop): when capDrop is set, the child drops capBset
	// from its bounding set (after installing capRaise when capDoRaise, to
	// make CAP_SETPCAP effective) and then installs capData.
	capDrop    bool
	capDoRaise bool
	capBset    []uintptr
	capHdr     unix.CapUserHeader
	capRaise   [2]unix.CapUserData
	capData    [2]unix.CapUserData
	ppid       uintptr // tracecell's pid: the child exits if its parent is already gone
	errFD      int     // write end of the error pipe (close-on-exec)
	readyFD    int     // write end of the ready pipe: one byte once the child may be seized
	syncFD     int     // read end of the sync pipe: one byte once the tracer has seized the child
	syncBuf    [1]byte
	report     [2]int32
}

func newChildSpec(path string, argv, env []string, dir string, files []int, rl []Rlimit, drop caps.Drop, prog []bpf.RawInstruction, probeNr int, errFD, readyFD, syncFD int) (*childSpec, error) {
	s := &childSpec{files: files, probeNr: uintptr(probeNr), errFD: errFD, readyFD: readyFD, syncFD: syncFD, ppid: uintptr(unix.Getpid())}
	if drop.Needed() {
		s.capDrop, s.capDoRaise = true, drop.RaiseSetpcap
		s.capHdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		s.capRaise, s.capData = drop.Raise, drop.Data()
		for c := 0; c < 64; c++ {
			if drop.Bounding.Has(c) {
				s.capBset = append(s.capBset, uintptr(c))
			}
		}
	}
	var err error
	if s.path, err = unix.BytePtrFromString(path); err != nil {
		return nil, err
	}
	if s.argv, err = syscall.SlicePtrFromStrings(argv); err != nil {
		return nil, err
	}
	if s.envv, err = syscall.SlicePtrFromStrings(env); err != nil {
		return nil, err
	}
	if dir != "" {
		if s.dir, err = unix.BytePtrFromString(dir); err != nil {
			return nil, err
		}
	}
	s.rlimits = childRlimits(rl)
	s.filter = make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		s.filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	s.fprog = unix.SockFprog{Len: uint16(len(s.filter)), Filter: &s.filter[0]}
	return s, nil
}

// forkTraced forks the child described by s and returns its pid. The child
// waits on the sync pipe until the tracer has seized it (seizeChild);
// everything after that happens while the tracer answers its stops.
//
// Precondition: the calling goroutine is locked to the tracer thread (the
// child is traced by, and dies with, this thread). syscall.ForkLock is held
// by the caller for writing, so no fd is created without close-on-exec
// between listing s.others and the fork.
func forkTraced(s *childSpec) (int, error) {
	runtimeBeforeFork()
	pid, errno := forkChild(s)
	runtimeAfterFork()
	if errno != 0 {
		return 0, syscall.Errno(errno)
	}
	return pid, nil
}

// forkChild is the fork and, in the child, everything up to the exec.
//
//go:norace
//go:nosplit
func forkChild(s *childSpec) (int, syscall.Errno) {
	r, _, e := unix.RawSyscall6(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	if r != 0 {
		return int(r), 0 // parent
	}
	runtimeAfterForkInChild()
	childMain(s)
	return 0, 0 // not reached
}

// childFail reports a failed stage on the error pipe and exits 125.
//
//go:norace
//go:nosplit
func childFail(s *childSpec, stage int32, e syscall.Errno) {
	s.report[0], s.report[1] = stage, int32(e)
	unix.RawSyscall(unix.SYS_WRITE, uintptr(s.errFD), uintptr(unsafe.Pointer(&s.report[0])), 8)
	for {
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 125, 0, 0)
	}
}

//go:norace
//go:nosplit
func childMain(s *childSpec) {
	var e syscall.Errno
	// Own session: kill(0) and process groups stay inside the tree.
	if _, _, e = unix.RawSyscall(unix.SYS_SETSID, 0, 0, 0); e != 0 {
		childFail(s, stageSetsid, e)
	}
	// Die with the tracer thread; if it is gone already, go now.
	if _, _, e = unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0, 0); e != 0 {
		childFail(s, stagePdeathsig, e)
	}
	if ppid, _, _ := unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0); ppid != s.ppid {
		childFail(s, stagePdeathsig, unix.ESRCH)
	}
	// Traceable again: tracecell is not dumpable (hideProc), and fork
	// copies that to the child, whose PTRACE_SEIZE would then need
	// CAP_SYS_PTRACE (__ptrace_may_access). The exec sets the command's
	// own dumpability anyway. Then tell the tracer it may seize us.
	if _, _, e = unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_DUMPABLE, 1, 0, 0, 0, 0); e != 0 {
		childFail(s, stageDumpable, e)
	}
	for {
		if _, _, e = unix.RawSyscall(unix.SYS_WRITE, uintptr(s.readyFD), uintptr(unsafe.Pointer(&s.syncBuf[0])), 1); e != unix.EINTR {
			break
		}
	}
	if e != 0 {
		childFail(s, stageDumpable, e)
	}
	// Wait until the tracer has attached with PTRACE_SEIZE and its options
	// (not PTRACE_TRACEME: only a seized tracee can be stopped with
	// PTRACE_INTERRUPT, which the freeze needs; see freeze.go). The filter
	// must not exist before that.
	for {
		var n uintptr
		n, _, e = unix.RawSyscall(unix.SYS_READ, uintptr(s.syncFD), uintptr(unsafe.Pointer(&s.syncBuf[0])), 1)
		if e == unix.EINTR {
			continue
		}
		if e == 0 && n != 1 {
			e = unix.EPIPE // the tracer closed the pipe without seizing us
		}
		if e != 0 {
			childFail(s, stageSync, e)
		}
		break
	}
	// Seized: not dumpable again until the exec, which gives the command
	// its own dumpability and memory. Until then this process holds a
	// copy of tracecell's memory, its environment included, and a /proc
	// file opened while it was dumpable reads it until the exec: the
	// window is the seize round trip alone. An attached tracer needs no
	// dumpability (ptrace_check_attach), and the tracer reads nothing of
	// this process before the exec event but its registers.
	if _, _, e = unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_DUMPABLE, 0, 0, 0, 0, 0); e != 0 {
		childFail(s, stageDumpable, e)
	}

	// Files: files[i] becomes fd i. First move every source that a lower
	// target would overwrite (and the error pipe) above all targets.
	n := len(s.files)
	next := n
	for i := 0; i < n; i++ {
		if s.files[i] >= next {
			next = s.files[i] + 1
		}
	}
	if s.errFD < n {
		if _, _, e = unix.RawSyscall(unix.SYS_DUP3, uintptr(s.errFD), uintptr(next), unix.O_CLOEXEC); e != 0 {
			childFail(s, stageFiles, e)
		}
		s.errFD = next
		next++
	}
	for i := 0; i < n; i++ {
		if s.files[i] < i {
			if _, _, e = unix.RawSyscall(unix.SYS_DUP3, uintptr(s.files[i]), uintptr(next), unix.O_CLOEXEC); e != 0 {
				childFail(s, stageFiles, e)
			}
			s.files[i] = next
			next++
		}
	}
	for i := 0; i < n; i++ {
		if s.files[i] == i {
			_, _, e = unix.RawSyscall(unix.SYS_FCNTL, uintptr(i), unix.F_SETFD, 0)
		} else {
			_, _, e = unix.RawSyscall(unix.SYS_DUP3, uintptr(s.files[i]), uintptr(i), 0)
		}
		if e != 0 {
			childFail(s, stageFiles, e)
		}
	}
	// Files tracecell inherited without close-on-exec (from a shell, a
	// service manager, a parent holding host files open for writing) must
	// not reach the command: a write through an inherited fd is never
	// checked. close_range needs 5.9; the list was taken before the fork.
	for _, fd := range s.others {
		if fd >= n {
			if _, _, e = unix.RawSyscall(unix.SYS_FCNTL, uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); e != 0 && e != unix.EBADF {
				childFail(s, stageCloexec, e)
			}
		}
	}
	for i := range s.rlimits {
		r := &s.rlimits[i]
		if _, _, e = unix.RawSyscall6(unix.SYS_PRLIMIT64, 0, r.resource, uintptr(unsafe.Pointer(&r.lim)), 0, 0, 0); e != 0 {
			childFail(s, stageRlimit, e)
		}
	}
	if s.dir != nil {
		if _, _, e = unix.RawSyscall(unix.SYS_CHDIR, uintptr(unsafe.Pointer(s.dir)), 0, 0); e != 0 {
			childFail(s, stageChdir, e)
		}
	}
	// Capabilities (internal/caps): after the rlimits, which may need
	// CAP_SYS_RESOURCE to be set, and before the exec, which for a root
	// tree would otherwise give back every capability of the bounding set.
	// Lowering the permitted and inheritable sets lowers the ambient set
	// with them (cap_capset, 4.3).
	if s.capDrop {
		if s.capDoRaise {
			if _, _, e = unix.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&s.capHdr)), uintptr(unsafe.Pointer(&s.capRaise[0])), 0); e != 0 {
				childFail(s, stageCaps, e)
			}
		}
		for _, c := range s.capBset {
			if _, _, e = unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0, 0, 0, 0); e != 0 {
				childFail(s, stageCaps, e)
			}
		}
		if _, _, e = unix.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&s.capHdr)), uintptr(unsafe.Pointer(&s.capData[0])), 0); e != 0 {
			childFail(s, stageCaps, e)
		}
	}
	// No new privileges: required to load a filter without CAP_SYS_ADMIN,
	// and setuid programs must not gain privileges under us anyway.
	if _, _, e = unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
		childFail(s, stageNoNewPrivs, e)
	}
	// One thread: no TSYNC needed. SPEC_ALLOW (4.17, commit 00a02d0c502a):
	// do not force the Speculative Store Bypass mitigation on the tree.
	// Where the kernel's default is spec_store_bypass_disable=seccomp
	// (before 5.16, RHEL 8 among them) every filtered task otherwise runs
	// with SSBD on, several percent slower; SSBD guards a process against
	// speculative reads of its own memory, which is not what tracecell
	// confines. A kernel without the flag says EINVAL: load without it.
	// Fail closed: without the filter nothing is enforced.
	_, _, e = unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_SPEC_ALLOW, uintptr(unsafe.Pointer(&s.fprog)))
	if e == unix.EINVAL {
		_, _, e = unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&s.fprog)))
	}
	if e != 0 {
		childFail(s, stageSeccomp, e)
	}
	// The probe, twice: the tracer denies it with probeErrno and watches
	// the order of the stops on the second call.
	for i := 0; i < 2; i++ {
		if _, _, e = unix.RawSyscall(s.probeNr, ^uintptr(0), 0, probeMagic); e != probeErrno {
			childFail(s, stageProbe, e)
		}
	}
	_, _, e = unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(s.path)),
		uintptr(unsafe.Pointer(&s.argv[0])), uintptr(unsafe.Pointer(&s.envv[0])))
	childFail(s, stageExec, e)
}
