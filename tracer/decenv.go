package tracer

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"

	"github.com/tracecell/tracecell/decode"
	"github.com/tracecell/tracecell/internal/fsview"
	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/internal/procmap"
	"github.com/tracecell/tracecell/pathres"
	"golang.org/x/sys/unix"
)

// decEnv is what the decode stage reads of a stopped call (decode.Env):
// the task's memory, with the copies the path page needs as it is read,
// its paths and fds, and the tree.
//
// Precondition: c's task is in its seccomp stop.
type decEnv struct {
	// t is the tracer, for its tree, policy and memory reader.
	t *tracer
	// c is the call decoded; its copy state is kept as the memory is read.
	c *call
}

// errCopyFailed: a copyable call's path could not be written to its path
// page slot; the call is decided again, frozen (call.copyFail).
var errCopyFailed = errors.New("path not copied to the path page")

// decoder returns the decode stage of c, writing into c's Result. It is
// the tracer's one decoder, set up anew for each call: valid until the next
// decoder call.
func (t *tracer) decoder(c *call) *decode.Decoder {
	t.env = decEnv{t, c}
	t.dec = decode.Decoder{Input: decode.Input{Name: c.name, Spec: c.spec, Regs: t.regs, Table: t.table, Env: &t.env}, Result: &c.Result}
	return &t.dec
}

// ReadBytes reads memory the kernel reads again in place: for a frozen
// call the span is recorded and the call marked uncopied (uncopiedRead),
// so that it runs only if no exit can write it.
func (e decEnv) ReadBytes(addr uintptr, n int) ([]byte, error) {
	e.c.readUncopied()
	e.t.uncopiedRead(e.c, decode.MkSpan(uint64(addr), uint64(n)))
	return e.t.mem.readBytes(e.c.tk.tid, addr, n)
}

// readUncopied notes that c reads memory besides the path it runs on a
// copy of: were c a copied call, the kernel would read that memory again
// from the program, which another thread can change after the check (a
// setxattr name). Such a call is decided again, frozen, where every read
// is copied or judged (copyUnsafe). copyArg keeps the calls known to read
// more from being copied; this catches any it misses.
func (c *call) readUncopied() {
	if c.copying {
		c.copyUnsafe = true
	}
}

// ReadArgString reads the string and copies it where the kernel will read
// it instead: the path page slot of a copied call (copyPath), or one of a
// frozen call (copyPathArg).
func (e decEnv) ReadArgString(arg int, addr uintptr) ([]byte, error) {
	t, c := e.t, e.c
	s, err := t.mem.readString(c.tk.tid, addr)
	if err != nil {
		return nil, err
	}
	if c.copying && arg == c.copyArg {
		// The kernel will read these very bytes (pathpage.go).
		if !t.copyPath(c, s) {
			c.copyFail = true
			return nil, errCopyFailed
		}
		c.copied = true
	} else {
		c.readUncopied()
	}
	// A frozen call: the kernel reads a copy of these very bytes
	// too (copy and freeze, pathpage.go).
	t.copyPathArg(c, arg, uint64(addr), s)
	return s, nil
}

func (e decEnv) Base(dirfd int32, hasDirfd bool) (string, error) {
	return e.t.base(e.c, dirfd, hasDirfd)
}

// Resolve walks with the walk cache (dirCache) and notes a resolution a
// copied call cannot rely on (uncopyable): the call is then decided again,
// frozen.
func (e decEnv) Resolve(base string, given string, follow bool) (pathres.Result, error) {
	r, err := resolvePath(pathres.Task{Tgid: e.c.tk.tgid, Tid: e.c.tk.tid}, base, given, follow, e.t.dirCache())
	if e.c.copying && err == nil && uncopyable(e.c, r) {
		e.c.copyUnsafe = true
	}
	return r, err
}

func (e decEnv) ResolveFd(fd int32) (pathres.Result, error) {
	return pathres.ResolveFd(pathres.Task{Tgid: e.c.tk.tgid, Tid: e.c.tk.tid}, int(fd))
}

func (e decEnv) MayKnow(resolved string) bool { return e.t.pol.MayKnow(resolved) }

// DenyLink follows each deny-read entry given through a symlink again, now
// (fsview.FollowLinks): kubelet swaps a secret volume's ..data link when it
// rotates a token, and the entry's path then leads to a new file the
// start-time resolution does not name (round 58 of the red team). One walk
// per such entry and checked path; none when there are none.
func (e decEnv) DenyLink(resolved string) (string, string) {
	if len(e.t.pol.DenyReadLinks()) == 0 {
		return "", ""
	}
	return fsview.FollowLinks(e.t.pol.DenyReadLinks(), resolved)
}

func (e decEnv) PidInTree(pid int) bool { return e.t.pidInTree(pid) }

func (e decEnv) OwnsPty(path string) bool { return e.t.ptys.owns(path) }

func (e decEnv) InitialExec() (string, bool) {
	return e.t.cfg.Path, e.c.tk.tid == e.t.tree.rootPid && !e.t.rootExecDone
}

// ChainExec answers once, for the root's first exec after the initial one,
// and marks the task's exec as the chain's (events.go).
func (e decEnv) ChainExec(resolved string) bool {
	t, tk := e.t, e.c.tk
	if tk.tgid != t.tree.rootPid || !t.rootExecDone || !t.chainLeft {
		return false
	}
	t.chainLeft = false
	chain := false
	for _, x := range t.cfg.InitialChain {
		if x == resolved {
			chain = true
			tk.chainExec = true
		}
	}
	return chain
}

func (e decEnv) Procs() (n, max int) { return len(e.t.tree.procs), e.t.cfg.MaxProcs }

func (e decEnv) PgrpInTree(g int) bool { return e.t.pgrpInTree(g) }

func (e decEnv) PidGone(pid int) bool { return pidGone(pid) }

func (e decEnv) PidfdPid(fd int32) (int, syscall.Errno, string) { return pidfdPid(e.c.tk.tid, fd) }

func (e decEnv) StdioTTY(dev decode.DevID) bool { return e.t.ptys.stdioTTY(devID{dev.Dev, dev.Rdev}) }

func (e decEnv) Ctty() decode.Terminal { return e.t.ctty(e.c.tk.tid) }

func (e decEnv) FdTerminal(fd int32) decode.Terminal {
	return e.t.fdTerminal(e.c.tk.tgid, e.c.tk.tid, fd)
}

func (e decEnv) AsyncOwn(resolved string, dev decode.DevID) bool {
	return e.t.ptys.asyncOwn(resolved, &unix.Stat_t{Dev: dev.Dev, Rdev: dev.Rdev})
}

// CharDev stats the fd through /proc/<tid>/fd/N, which follows the fd. An
// fd the tracer may not look at (EACCES, EPERM: a process that is not
// dumpable, to a tracer without CAP_SYS_PTRACE) counts as a character
// device of unknown identity, so that what is decided on one is decided
// as on a terminal that is not the tree's (fail closed).
func (e decEnv) CharDev(fd int32) (decode.DevID, bool) {
	var st unix.Stat_t
	if fd < 0 {
		return decode.DevID{}, false
	}
	if err := unix.Stat("/proc/"+strconv.Itoa(e.c.tk.tid)+"/fd/"+strconv.Itoa(int(fd)), &st); err != nil {
		return decode.DevID{}, err == unix.EACCES || err == unix.EPERM
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return decode.DevID{}, false
	}
	return decode.DevID{Dev: st.Dev, Rdev: st.Rdev}, true
}

func (e decEnv) FdLink(fd int32) (string, bool) {
	l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", e.c.tk.tid, fd))
	return l, err == nil
}

// FdFlags reads the fdinfo flags of the fd link resolved. It is asked of a
// pipe or other object, or a file with no name, reached through
// /proc/<pid>/fd/N, which a copied call never is (uncopyable: r.ViaProc),
// or through an fd argument (HFdMeta, which always freezes): the call is
// frozen and no task of the tree can dup2 another file onto N between this
// read and the kernel's use; a single-task tree has no other task to.
func (e decEnv) FdFlags(resolved string) (uint64, bool) {
	f, err := pathres.FdFlags(resolved)
	return f, err == nil
}

func (e decEnv) Lstat(resolved string) (exists, isDir bool) {
	var st unix.Stat_t
	if unix.Lstat(resolved, &st) != nil {
		return false, false
	}
	return true, st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// ReadArgBytes reads a sockaddr or a futex_waitv array; for a frozen call
// the kernel reads a copy of these very bytes (copy and freeze,
// copyfreeze.go).
func (e decEnv) ReadArgBytes(arg int, addr uintptr, n int) ([]byte, error) {
	e.c.readUncopied()
	b, err := e.t.mem.readBytes(e.c.tk.tid, addr, n)
	if err != nil {
		return nil, err
	}
	if arg >= 0 {
		e.t.copyFrozen(e.c, arg, func(uint64) []byte { return b }, decode.MkSpan(uint64(addr), uint64(n)))
	}
	return b, nil
}

// CopyMsg copies a frozen sendmsg's msghdr, pointers redirected (msgCopy).
func (e decEnv) CopyMsg(hdr, name, ctl []byte, read []decode.Span) {
	e.t.copyFrozen(e.c, 1, func(addr uint64) []byte { return msgCopy(hdr, name, ctl, addr) }, read...)
}

func (e decEnv) Frozen() bool { return e.c.frozen }

func (e decEnv) ExitWritable(spans []decode.Span) string { return e.t.exitWritable(e.c, spans) }

func (e decEnv) Maps() ([]procfs.Mapping, error) { return procfs.ReadMaps(e.c.tk.tid) }

// MapAt asks the process's procmap.Maps, opened on first use through the
// tgid (every thread shares the mm). A leader that left with pthread_exit
// is a zombie without an mm (exit_mm): /proc/<tgid>/maps opened then
// answers ESRCH (the ioctl, and the text read empty), so on ESRCH, or when
// the open fails, the fd is opened again through the calling thread and
// the question asked once more; that fd is kept. Its text path answers
// ESRCH once that thread is reaped (internal/procmap), and the next call
// opens it again through its own caller the same way.
func (e decEnv) MapAt(addr uint64, named bool) (procfs.Mapping, bool, error) {
	tk := e.c.tk
	p := e.t.tree.procs[tk.tgid]
	if p == nil {
		return procfs.Mapping{}, false, fmt.Errorf("pid %d is not a process of the tree", tk.tgid)
	}
	m, ok, err := p.mapAt(tk.tgid, addr, named)
	if err != nil && (p.maps == nil || errors.Is(err, unix.ESRCH)) {
		p.dropMaps()
		m, ok, err = p.mapAt(tk.tid, addr, named)
	}
	if err != nil || !ok {
		return procfs.Mapping{}, ok, err
	}
	return procfs.Mapping{Start: m.Start, End: m.End, Write: m.Write, Shared: m.Shared, Inode: m.Inode, Path: m.Path}, true, nil
}

// mapAt looks addr up in p's procmap.Maps, opened through pid (a task of
// p) when p has none. A failed open leaves p.maps nil.
func (p *proc) mapAt(pid int, addr uint64, named bool) (procmap.Mapping, bool, error) {
	if p.maps == nil {
		m, err := procmap.Open(pid)
		if err != nil {
			return procmap.Mapping{}, false, err
		}
		p.maps = m
	}
	if named {
		return p.maps.LookupNamed(addr)
	}
	return p.maps.Lookup(addr)
}

func (e decEnv) AnonPage(addr uint64) bool { return procfs.AnonPage(e.c.tk.tid, addr) }

func (e decEnv) Tid() int { return e.c.tk.tid }

func (e decEnv) FutexRestart() uint64 { return e.c.tk.futexRestart }

func (e decEnv) Tracing() bool { return e.t.cfg.TraceAll }

func (e decEnv) Loopback() bool { return e.t.loopback }

func (e decEnv) SendFrom(fd int32) string { return e.t.sendFrom(e.c, fd) }

func (e decEnv) LoopbackIf(index int32) bool { return e.t.loopbackIf(index) }

// loopbackIf reports whether network interface index is a loopback one in
// tracecell's network namespace, which is the tree's (setns is forbidden
// to it). An index that names no interface, or that cannot be looked up,
// is not: the send is then decided like one out of another interface.
// The answer is kept for the run: whether a device is a loopback one is
// its driver's (IFF_LOOPBACK cannot be set on another), and an index is
// not reused while the device lives.
func (t *tracer) loopbackIf(index int32) bool {
	if v, ok := t.loopbackIfs[index]; ok {
		return v
	}
	ifc, err := net.InterfaceByIndex(int(index))
	v := err == nil && ifc.Flags&net.FlagLoopback != 0
	if t.loopbackIfs == nil {
		t.loopbackIfs = map[int32]bool{}
	}
	if len(t.loopbackIfs) < 64 {
		t.loopbackIfs[index] = v
	}
	return v
}

// decEnv is the decode stage's Env.
var _ decode.Env = decEnv{}
