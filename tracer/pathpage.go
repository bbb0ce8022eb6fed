package tracer

// The path page: checked calls that run while the other threads run on.
//
// A freeze (freeze.go) makes a checked call safe by stopping every other
// task of the tree until the kernel has finished the call. For threads that
// write files it costs most of the tracer's time: every call interrupts and
// waits for every other thread, and the threads take turns. For the common
// file calls the freeze guards against two things only, and both can be
// had without it:
//
//   - Memory. Another thread could rewrite the path string between the
//     tracer's read and the kernel's. So the tracer copies the bytes it read
//     (and decides on) into a slot of the path page, a range the tracer maps
//     read-only into the process (syscalls.PathPageAddr), and points the
//     call's argument at the copy. The tree cannot write there: the page is
//     not writable, the kernel's own writes to user memory respect that, the
//     writes that do not (ptrace, /proc/<pid>/mem opened for writing) are
//     denied, and every call that could unmap, replace, re-protect or empty
//     it is trapped by the filter and denied when it would reach the page
//     (HMem, decodeMem). The tracer writes the slot through /proc/<tid>/mem,
//     whose writes (FOLL_FORCE) pass the protection. The argument is set
//     back at the call's syscall-exit stop: the x86_64 syscall ABI keeps
//     argument registers, and compiled code may rely on it.
//   - The names on the way. Another task could swap a directory for a
//     symlink, rename one, or move a shared cwd or a dirfd between the check
//     and the walk. Only calls with no dirfd (or AT_FDCWD) qualify, so
//     dup2 onto a dirfd cannot matter; and every call that can make a path
//     lead elsewhere (rename, link, symlink, rmdir, chdir, fchdir, bind) is
//     itself trapped and freezes the tree, which waits for every task to
//     stop, so for every copied call in flight to reach its syscall-exit
//     stop, its walk done (or to an interruptible sleep, which the freeze's
//     interrupt ends; the call then restarts through seccomp and is checked
//     again). Calls that qualify create or change entries that a walk can
//     only pass through as it would have anyway: a new directory is where
//     its name says, a new file, fifo or socket is no directory.
//
// Which calls (copyable): opens, mkdir, mknod, unlink (not rmdir, not
// unlinkat with AT_REMOVEDIR), chmod, chown, truncate, utime(s), utimensat
// and the xattr calls, with one path, no dirfd or AT_FDCWD, no
// AT_EMPTY_PATH. The rest freeze as before, and run on copies of the
// memory they were decided on all the same ("Copy and freeze", below): a
// freeze cannot hold a task that is killed.
//
// The page is mapped into a process the first time one of its threads makes
// such a call while the tree has more than one task (not when the process
// runs under a seccomp filter of its own, which could trap or kill the
// injected call: ownFilter): the call is turned
// into mmap(PathPageAddr, ..., MAP_FIXED_NOREPLACE) (4.17; RHEL 8's 4.18
// has it), and when that returns the thread is set back on its syscall
// instruction, so it makes its own call again and is checked then. When the
// range is taken (EEXIST: the program mapped something there itself, or a
// process shares its memory with one that has the page) the process keeps
// the freeze. fork children inherit the page: the parent can neither unmap
// it nor mark it MADV_DONTFORK or MADV_WIPEONFORK. exec drops it.
//
// Slots are numbered across the whole tree, not per process: two processes
// may share one address space (clone(CLONE_VM), vfork) without the tracer
// knowing, and must never be given the same slot at once.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/arch"
	"github.com/tracecell/tracecell/decode"
	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/pathres"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// pageState says whether a process has the path page.
type pageState uint8

const (
	pageUnknown pageState = iota // not tried yet: mapped at the first copyable call
	// pageInherited: made by fork, clone or vfork from a process that has
	// the page. Most likely it has it too, but not surely: the tracer may
	// have mapped the page into the parent after the kernel copied the
	// parent's memory for the child, and the child could then map its own
	// memory there with a mere hint. Checked at its first copyable call
	// (pageReadOnly).
	pageInherited
	pageMapped // mapped by the tracer, or checked to be a private read-only anonymous mapping
	pageNone   // could not be had: this process's calls freeze
)

// slotAddr is the address of path page slot i.
func slotAddr(i int) uint64 { return syscalls.PathPageAddr + uint64(i)*syscalls.PathSlotSize }

// copyArg reports whether c may run with its path copied into the path page
// instead of a freeze, and which argument holds the path. It looks at
// registers only: it runs before the call is decoded.
//
// Precondition: t.regs holds c's registers.
func (t *tracer) copyArg(c *call) (syscalls.PathArg, bool) {
	s := c.spec
	if !t.pathPage || t.pageOff || len(s.Paths) != 1 || t.regs.Arg(s.Paths[0].Arg) == 0 {
		return syscalls.PathArg{}, false
	}
	pa := s.Paths[0]
	if pa.Dirfd >= 0 && t.regs.Int32Arg(pa.Dirfd) != unix.AT_FDCWD {
		return pa, false // dup2 onto the dirfd would change what the path means
	}
	switch s.Handler {
	case syscalls.HOpen:
		return pa, true
	case syscalls.HPath:
	default:
		return pa, false
	}
	switch s.Kind {
	case syscalls.KindCreate:
		// symlink: a new symlink can lead another walk elsewhere.
		return pa, s.LinkTargetArg < 0
	case syscalls.KindDelete:
		// rmdir, unlinkat(AT_REMOVEDIR): a directory removed can be
		// replaced by a symlink; the walk cache forgets on those
		// (movesDirs), which must not happen while walks are under way.
		return pa, c.name != "rmdir" && !(s.FlagsArg >= 0 && t.flagsArg(c)&unix.AT_REMOVEDIR != 0)
	case syscalls.KindChmod, syscalls.KindChown, syscalls.KindWrite, syscalls.KindXattr:
		// AT_EMPTY_PATH acts on the dirfd (an fd number: dup2).
		return pa, !(s.FlagsArg >= 0 && t.flagsArg(c)&unix.AT_EMPTY_PATH != 0)
	}
	return pa, false
}

// uncopyable reports whether copyable call c, its path resolved to r, must
// run frozen after all: the resolution holds only while nothing else runs.
//
//   - A walk through /proc (r.ViaProc): /proc/<pid>/fd/N, /proc/self/cwd,
//     map_files/* and the like lead wherever another thread's dup2, close,
//     mmap or chdir points them, and dup2, close and mmap are not trapped.
//     Checked frozen, /proc/self/fd/N names the fd checked; copied, a
//     thread flipping N with dup2 between a sandbox file and a host file
//     opened read-only reopened the host file for writing.
//   - unlink of a symlink. Removing a symlink and making a directory of the
//     same name (two copyable calls) makes a walk that the tracer checked
//     through the symlink go through the new directory instead, and ".."
//     after it climbs from there: "sbx/l/../../x" with l -> sbx/d/e is
//     sbx/x to the check and ../x (outside) to the kernel. With every
//     symlink removal frozen (unlink here; rename and rmdir always), the
//     symlinks and directories a copied walk goes through cannot change
//     while it is in flight: a freeze waits for copied calls in flight.
//   - A pty slave, /dev/pts/N (policy.PtySlave): the tree may open it
//     while it holds the pty's master (pty.go); another thread closing
//     that master during a copied open would free N for the next pty a host
//     process makes, which the kernel's walk would then find.
//
// unlink looks at its last component without following it: r is the
// entry itself.
func uncopyable(c *call, r pathres.Result) bool {
	return r.ViaProc || (c.spec.Kind == syscalls.KindDelete && r.Mode&fs.ModeSymlink != 0) || policy.PtySlave(r.Path)
}

// ownFilter reports whether tid runs under a seccomp filter the tree
// installed itself (more filters than the root had after its initial exec,
// /proc/<tid>/status Seccomp_filters, 5.9). The injected mmap would meet it:
// a filter that traps or kills unusual mmap flags (MAP_FIXED_NOREPLACE), as
// sandboxes that emulate calls in a SIGSYS handler do, would get a SIGSYS
// for a call the program never made, or die of it. Such a process keeps
// the freeze. Unknown (older kernels): no.
func (t *tracer) ownFilter(tid int) bool {
	return t.seccompBase >= 0 && seccompFilters(tid) > t.seccompBase
}

// seccompFilters is the Seccomp_filters count of /proc/<tid>/status, -1
// when it cannot be read (gone, or a kernel before 5.9).
func seccompFilters(tid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return -1
	}
	return procfs.StatusInt(b, "Seccomp_filters:", -1)
}

// takeSlot returns a free slot, or -1 when every slot holds a call in
// flight (the call then freezes).
func (t *tracer) takeSlot() int {
	n := len(t.freeSlots)
	if n == 0 {
		return -1
	}
	i := t.freeSlots[n-1]
	t.freeSlots = t.freeSlots[:n-1]
	return i
}

func (t *tracer) putSlot(i int) { t.freeSlots = append(t.freeSlots, i) }

// memFile is the /proc/<tid>/mem of tk's process, opened on first use and
// kept until the process execs or ends: it refers to the address space it
// was opened on.
func (t *tracer) memFile(tk *task, p *proc) (*os.File, error) {
	if p.mem != nil {
		return p.mem, nil
	}
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", tk.tid), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	p.mem = f
	return f, nil
}

// dropPage forgets p's page and closes its memory file.
func (p *proc) dropPage() {
	p.page = pageUnknown
	if p.mem != nil {
		p.mem.Close()
		p.mem = nil
	}
}

// copyPath writes the path bytes c is decided on, NUL-terminated, into c's
// slot. It returns false when the page cannot be written (the process is
// then marked pageNone, and the call must be decided again frozen).
func (t *tracer) copyPath(c *call, given []byte) bool {
	p := t.procs[c.tk.tgid]
	if p == nil {
		return false
	}
	f, err := t.memFile(c.tk, p)
	if err == nil {
		buf := make([]byte, len(given)+1)
		copy(buf, given)
		var n int
		n, err = f.WriteAt(buf, int64(slotAddr(c.slot)))
		if err == nil && n != len(buf) {
			err = syscall.EIO
		}
	}
	if err != nil {
		t.cfg.Log.Debug().Int("pid", c.tk.tgid).Err(err).Msg("cannot write the path page; the process's calls freeze the tree from now on")
		p.page = pageNone
		return false
	}
	return true
}

// runCopied runs c, allowed, with its path argument pointing at the copy in
// its slot, and lets the tree run on meanwhile. The syscall-exit stop
// (syscallStop, endCopied) sets the argument back and frees the slot.
//
// Precondition: c.tk is in its seccomp stop, t.regs holds its registers,
// and the copy was written (copyPath).
func (t *tracer) runCopied(c *call) error {
	tk := c.tk
	orig := t.regs.Arg(c.copyArg)
	t.regs.SetArg(c.copyArg, slotAddr(c.slot))
	if err := t.setArg(tk.tid, c.copyArg, slotAddr(c.slot), true); err != nil {
		t.putSlot(c.slot)
		if err == unix.ESRCH {
			return nil
		}
		return err
	}
	tk.slot, tk.slotArg, tk.slotOrig = c.slot+1, c.copyArg, orig
	t.copies++
	// The call runs, and stops at its syscall exit.
	if err := unix.PtraceSyscall(tk.tid, 0); err != nil {
		if err == unix.ESRCH {
			return nil // killed meanwhile: removeTask frees the slot
		}
		return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_SYSCALL) pid %d", tk.tid), err)
	}
	return nil
}

// endCopied is tk's syscall-exit stop after runCopied: the argument is set
// back and the slot freed.
func (t *tracer) endCopied(tk *task) error {
	slot, arg, orig := tk.slot-1, tk.slotArg, tk.slotOrig
	tk.slot = 0
	t.putSlot(slot)
	if t.layout.ArgIsRet(arg) {
		return nil // x0 now holds the result; the caller expects nothing else there
	}
	if err := t.setArg(tk.tid, arg, orig, false); err != nil && err != unix.ESRCH {
		return err
	}
	return nil
}

// readRegs reads tid's general-purpose registers (NT_PRSTATUS) into
// t.regs. A vanished tid is returned as unix.ESRCH itself; other errors
// name the ptrace request and tid.
//
// Precondition: tid is in a ptrace stop; the calling goroutine is locked to
// the tracer thread.
func (t *tracer) readRegs(tid int) error {
	n, err := ptraceRegset(unix.PTRACE_GETREGSET, tid, arch.NTPrstatus, t.regBuf)
	if err == unix.ESRCH {
		return err
	}
	if err != nil {
		return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_GETREGSET) pid %d", tid), err)
	}
	return t.regs.Decode(t.regBuf[:n])
}

// setArg sets syscall argument arg of tid, stopped, to v: with one
// PTRACE_POKEUSER where the architecture has it (x86_64), else by writing
// the whole register set. haveRegs says that t.regs holds tid's registers
// of this stop with arg already set to v (at the seccomp stop); otherwise
// (the syscall-exit stop) they are read first. A vanished tid is returned
// as unix.ESRCH itself; other errors name the ptrace request and tid.
//
// Precondition: tid is in a ptrace stop; the calling goroutine is locked to
// the tracer thread.
func (t *tracer) setArg(tid, arg int, v uint64, haveRegs bool) error {
	if off, ok := t.layout.ArgUserOffset(arg); ok {
		if err := ptracePokeUser(tid, off, v); err != nil {
			if err == unix.ESRCH {
				return err
			}
			return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_POKEUSER) pid %d", tid), err)
		}
		return nil
	}
	if !haveRegs {
		if err := t.readRegs(tid); err != nil {
			return err
		}
		t.regs.SetArg(arg, v)
	}
	for _, w := range t.regs.Writes() {
		if _, err := ptraceRegset(unix.PTRACE_SETREGSET, tid, w.Note, w.Data); err != nil {
			if err == unix.ESRCH {
				return err
			}
			return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_SETREGSET) pid %d", tid), err)
		}
	}
	return nil
}

// mapPage maps the path page into tk's process p from tk's seccomp stop:
// the call becomes the mmap, and once that has returned tk is set back to
// make its own call again, which stops here again. Other tasks run on
// meanwhile; none can map anything over the range (decodeMem), and one
// that got there first with a hint (mmap without MAP_FIXED) makes the
// mapping fail with EEXIST.
//
// Precondition: tk is in its seccomp stop, t.regs holds its registers, the
// calling goroutine is locked to the tracer thread.
func (t *tracer) mapPage(tk *task, p *proc) error {
	tid := tk.tid
	nr, ok := t.table.Nr("mmap")
	if !ok {
		p.page = pageNone
		return t.resume(tid, 0)
	}
	orig := t.regs.Clone()
	args := [6]uint64{syscalls.PathPageAddr, syscalls.PathPageSize, unix.PROT_READ,
		unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_FIXED_NOREPLACE, ^uint64(0), 0}
	for _, w := range t.regs.Inject(nr, args) {
		if _, err := ptraceRegset(unix.PTRACE_SETREGSET, tid, w.Note, w.Data); err != nil {
			if err == unix.ESRCH {
				return nil
			}
			return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_SETREGSET) pid %d", tid), err)
		}
	}
	if err := unix.PtraceSyscall(tid, 0); err != nil {
		if err == unix.ESRCH {
			return nil
		}
		return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_SYSCALL) pid %d", tid), err)
	}
	// The syscall-exit stop comes before anything else the thread can
	// report (a signal or a group-stop is taken on the way back to user
	// space, after it), except its death.
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(tid, &ws, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError(fmt.Sprintf("wait4 pid %d", tid), err)
		}
		break
	}
	if !ws.Stopped() {
		t.queue(tid, ws) // killed
		return nil
	}
	if ws.StopSignal() != unix.SIGTRAP|0x80 {
		return fmt.Errorf("pid %d: expected the syscall-exit stop of the path page's mmap, got stop %#x", tid, uint32(ws))
	}
	if err := t.readRegs(tid); err != nil {
		if err == unix.ESRCH {
			return nil
		}
		return err
	}
	if ret := t.regs.Ret(); ret == syscalls.PathPageAddr || (int64(ret) == -int64(syscall.EEXIST) && pageReadOnly(tid)) {
		// EEXIST with the range already read-only private anonymous
		// memory: a process sharing this address space (clone(CLONE_VM),
		// vfork) has the page, or the program mapped such memory there
		// itself; either way nobody can write it.
		p.page = pageMapped
		t.pageEver = true
	} else {
		p.page = pageNone
		t.cfg.Log.Debug().Int("pid", tk.tgid).Int64("ret", int64(ret)).Msg("cannot map the path page; the process's calls freeze the tree")
	}
	t.pageMaps++
	for _, w := range orig.Restart() {
		if _, err := ptraceRegset(unix.PTRACE_SETREGSET, tid, w.Note, w.Data); err != nil {
			if err == unix.ESRCH {
				return nil
			}
			return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_SETREGSET) pid %d", tid), err)
		}
	}
	return t.resume(tid, 0)
}

// pageReadOnly reports whether the path page's range in tid's address space
// is one mapping, exactly the range, private, anonymous and read-only: its
// content can then change only through FOLL_FORCE writes (the tracer's;
// ptrace and /proc/<pid>/mem writes are denied to the tree), since every call
// that could unmap, replace, re-protect or empty it is denied (decodeMem), and
// private anonymous memory is shared with no other mapping (fork shares it
// copy-on-write; mremap cannot duplicate a private mapping). A shared or
// file-backed mapping could be written through another mapping of the same
// object, and is refused. /proc/<tid>/maps lists mappings by address; the
// page comes before any PIE program, heap or library (above 2^33).
func pageReadOnly(tid int) bool {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", tid))
	if err != nil {
		return false
	}
	defer f.Close()
	want := fmt.Sprintf("%x-%x r--p 00000000 00:00 0", syscalls.PathPageAddr, syscalls.PathPageAddr+syscalls.PathPageSize)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var start uint64
		if _, err := fmt.Sscanf(line, "%x-", &start); err != nil {
			return false
		}
		if start >= syscalls.PathPageAddr {
			return start == syscalls.PathPageAddr && strings.TrimRight(line, " ") == want
		}
	}
	return false
}

// decodeMem checks a memory call the filter trapped because one of its
// ranges may reach the path page (the filter tests registers coarsely):
// denied when a range does, passed otherwise. The kernel rounds lengths up
// to whole pages.
func (t *tracer) decodeMem(c *call) *policy.Op {
	lo, hi := syscalls.PathPageAddr, syscalls.PathPageAddr+syscalls.PathPageSize
	var reason string
	if len(c.spec.Mem) == 0 {
		// process_madvise: its ranges are in memory, which another thread
		// could change after they were read.
		reason = fmt.Sprintf("%s takes its address ranges from memory, where tracecell cannot check them against %#x-%#x, where it keeps the paths of checked calls", c.name, lo, hi)
	}
	for _, r := range c.spec.Mem {
		if r.FlagsArg >= 0 && uint32(t.regs.Arg(r.FlagsArg))&r.FlagsMask == 0 {
			continue
		}
		addr, n := t.regs.Arg(r.Addr), t.regs.Arg(r.Len)
		end := addr + n
		if n == 0 {
			end = addr + 1 // mremap(old_len 0) duplicates a mapping
		}
		if end < addr {
			end = ^uint64(0) // the kernel fails it (EINVAL); be safe anyway
		}
		// A tagged pointer (arm64's top byte, x86_64 LAM) names the
		// address without its tag for munmap, mprotect, madvise, mremap
		// (5.4+): test that form too (as the filter does, bits 48-63
		// cleared).
		const untag = 1<<48 - 1
		ua, ue := addr&untag, (addr&untag)+(end-addr)
		if (addr >= hi || end <= lo) && (ua >= hi || ue <= lo) {
			continue
		}
		c.Flags = fmt.Sprintf("addr=%#x len=%#x", addr, n)
		reason = fmt.Sprintf("the range reaches %#x-%#x, where tracecell keeps the paths of checked calls; programs may not map, unmap or change anything there", lo, hi)
		break
	}
	switch {
	case reason == "":
		c.Out = decode.PassOutcome()
		return nil
	case !t.pageEver:
		// No process has had the page yet (the tracer maps it only once
		// the tree has two tasks): a program that reserves a range
		// covering it first, as AddressSanitizer does for its shadow
		// gap at start-up, keeps it, and the page is off for the rest of
		// the run (its calls freeze, as without the page). Off before the
		// call runs, so no mapping can come between.
		if !t.pageOff {
			t.pageOff = true
			t.cfg.Log.Debug().Str("syscall", c.name).Int("pid", c.tk.tgid).Msg("the program maps over the path page's range before tracecell used it; path page off for this run")
		}
		c.Out = decode.PassOutcome()
		return nil
	}
	c.Out = decode.LimitWith(policy.Decision{Rule: policy.RulePathPage, Errno: syscall.EPERM, Reason: reason})
	return &policy.Op{Kind: syscalls.KindMemory, Syscall: c.name}
}

// Copy and freeze: the checked memory of frozen calls.
//
// A freeze keeps every other task of the tree from running, but it cannot
// keep one from dying: SIGKILL ends a ptrace-stopped task at once (a POSIX
// timer of its own, SIGIO with F_SETSIG=SIGKILL, another process's kill),
// and its exit makes the kernel write user memory after the tracer's check
// and before the kernel reads the checked call's arguments:
//
//   - clear_child_tid (CLONE_CHILD_CLEARTID, set_tid_address): mm_release
//     (kernel/fork.c) writes 4 zero bytes there when the mm is shared
//     (mm_users > 1: a thread, a clone(CLONE_VM) process);
//   - the robust futex list (set_robust_list): exit_robust_list /
//     handle_futex_death (kernel/futex) sets FUTEX_OWNER_DIED in any word
//     whose TID bits are the dying task's tid, in the dying task's memory,
//     which may be a MAP_SHARED mapping another process shares.
//
// Both are put_user/cmpxchg writes, which respect page protection. So the
// memory a frozen call is decided on is copied into path page slots too (the
// freeze still protects the names on the way: dirfd, cwd, symlinks; the copy
// protects the bytes): every path argument (copyPathArg), the sockaddr of
// connect, bind and sendto, and sendmsg's msghdr with its name and control
// data, pointers redirected (msgCopy). The arguments are set at release,
// just before the call runs, and set back at its syscall-exit stop
// (runFrozen, or syscallStop for a call left to finish unfrozen).
//
// When no copy can be had (no page: pageNone, pageOff, a process under its
// own seccomp filter; every slot busy; a msghdr too big for a slot) the
// call runs on its own memory as before if no exit can write it
// (exitWritable: no task of another process shared the mm when the tree
// was frozen, judged before the memory is read, and the memory is the
// process's own: no shared mapping, no file page not yet copied on write);
// otherwise, if the policy would allow it, it is denied
// (RuleKernelRewritten).
// sendmmsg writes msg_len back into its mmsghdr, which cannot live in the
// read-only page: an entry with an address is denied when an exit could
// write it (netmsg.go, exitRewritten).

// argCopy is one argument of a frozen call pointed at path page slot slot,
// orig its own value, set back at the call's syscall-exit stop.
type argCopy struct {
	arg, slot int
	orig      uint64
}

// frozenCopies reports whether a frozen call c reads memory that is copied
// into the path page (copyFrozen): paths (and setxattr's attribute name) of
// file calls, socket addresses. Not chdir's path: chdir is never denied.
func frozenCopies(c *call) bool {
	switch c.spec.Handler {
	case syscalls.HOpen, syscalls.HPath:
		return len(c.spec.Paths) > 0
	case syscalls.HSocket:
		switch c.name {
		case "connect", "bind", "sendto", "sendmsg":
			return true
		}
	}
	return false
}

// pageUsable reports whether the run uses the path page at all.
func (t *tracer) pageUsable() bool { return t.pathPage && !t.pageOff }

// copyFrozen copies the memory frozen call c is decided on for argument
// arg into a free slot and records it: mk lays the bytes out for the
// slot's address (a path and its NUL; msgCopy), from are the tracee
// ranges they were read from. With no page, no free slot, bytes that do
// not fit (mk returns nil) or a failed write the call is marked uncopied:
// it then runs on its own memory only if no exit can write that
// (exitWritable).
func (t *tracer) copyFrozen(c *call, arg int, mk func(addr uint64) []byte, from ...span) {
	if !c.frozen || !frozenCopies(c) {
		return // not frozen (copied or single-task), or not a call whose memory is copied
	}
	c.spans = append(c.spans, from...)
	if c.uncopied {
		return
	}
	if !c.fcopy {
		c.uncopied, c.noCopy = true, t.noPageWhy(c.tk)
		return
	}
	p := t.procs[c.tk.tgid]
	i := t.takeSlot()
	var b []byte
	if i >= 0 {
		b = mk(slotAddr(i))
	}
	if p == nil || b == nil || len(b) > syscalls.PathSlotSize {
		c.uncopied, c.noCopy = true, "every slot of its path page is in use by calls in flight"
		if i >= 0 {
			t.putSlot(i)
			c.noCopy = fmt.Sprintf("what it reads (%d bytes) is larger than a path page slot (%d bytes)", len(b), syscalls.PathSlotSize)
		}
		return
	}
	f, err := t.memFile(c.tk, p)
	if err == nil {
		var n int
		n, err = f.WriteAt(b, int64(slotAddr(i)))
		if err == nil && n != len(b) {
			err = syscall.EIO
		}
	}
	if err != nil {
		t.putSlot(i)
		t.cfg.Log.Debug().Int("pid", c.tk.tgid).Err(err).Msg("cannot write the path page; the process's calls freeze the tree from now on")
		p.page = pageNone
		c.uncopied, c.noCopy = true, "its path page could not be written"
		return
	}
	c.copies = append(c.copies, argCopy{arg: arg, slot: i, orig: t.regs.Arg(arg)})
}

// noPageWhy says why tk's process has no path page, for a denial.
func (t *tracer) noPageWhy(tk *task) string {
	switch {
	case t.pageOff:
		return fmt.Sprintf("the program mapped memory over %#x-%#x, where tracecell keeps its path page, before it was used", syscalls.PathPageAddr, syscalls.PathPageAddr+syscalls.PathPageSize)
	case t.ownFilter(tk.tid):
		return "the process runs under a seccomp filter of its own, so tracecell does not map its path page into it"
	}
	return fmt.Sprintf("its path page could not be mapped (the range %#x-%#x is taken)", syscalls.PathPageAddr, syscalls.PathPageAddr+syscalls.PathPageSize)
}

// copyPathArg copies path s (no NUL), read from addr for argument arg of a
// frozen call.
func (t *tracer) copyPathArg(c *call, arg int, addr uint64, s []byte) {
	t.copyFrozen(c, arg, func(uint64) []byte {
		buf := make([]byte, len(s)+1)
		copy(buf, s)
		return buf
	}, decode.MkSpan(addr, uint64(len(s)+1)))
}

// dropCopies frees the slots of a call that will not run on them.
func (t *tracer) dropCopies(c *call) {
	for _, a := range c.copies {
		t.putSlot(a.slot)
	}
	c.copies = nil
}

// setCopies points c's copied arguments at their slots, just before the
// call runs frozen, and hands them to its task for the syscall-exit stop.
// A vanished task is returned as unix.ESRCH (the slots are freed).
//
// Precondition: c.tk is in its seccomp stop and t.regs holds its registers.
func (t *tracer) setCopies(c *call) error {
	tk := c.tk
	for _, a := range c.copies {
		t.regs.SetArg(a.arg, slotAddr(a.slot))
	}
	for j, a := range c.copies {
		// With PTRACE_POKEUSER one argument at a time; without, the
		// whole register set (t.regs, all set above) on the first.
		if _, ok := t.layout.ArgUserOffset(a.arg); !ok && j > 0 {
			break
		}
		if err := t.setArg(tk.tid, a.arg, slotAddr(a.slot), true); err != nil {
			t.dropCopies(c)
			return err
		}
	}
	tk.copies, c.copies = c.copies, nil
	t.frozenCopies += len(tk.copies)
	return nil
}

// endCopies is the syscall-exit stop of tk's frozen call that ran on
// copies: the arguments are set back and the slots freed.
func (t *tracer) endCopies(tk *task) error {
	cs := tk.copies
	tk.copies = nil
	for _, a := range cs {
		t.putSlot(a.slot)
	}
	for _, a := range cs {
		if t.layout.ArgIsRet(a.arg) {
			continue // x0 now holds the result
		}
		if err := t.setArg(tk.tid, a.arg, a.orig, false); err != nil {
			if err == unix.ESRCH {
				return nil
			}
			return err
		}
	}
	return nil
}

// freeCopies frees the slots of a task that died or exec'd in a call that
// ran on copies.
func (t *tracer) freeCopies(tk *task) {
	for _, a := range tk.copies {
		t.putSlot(a.slot)
	}
	tk.copies = nil
}

// mmSharedWhy says why a task of another process may share tk's mm (a
// clone(CLONE_VM) process, a vfork child or parent), "" when none can. It
// runs once the tree is frozen and before the call's memory is read: a
// task sharing the mm then may die and write it at any time after; one
// found gone (kcmp sees no mm: exit_mm clears it only after mm_release
// wrote clear_child_tid, kernel/exit.c) wrote before the read. kcmp
// KCMP_VM (3.5, CONFIG_CHECKPOINT_RESTORE) on every task of the tree, and
// on the children of fork, vfork and clone events taken by the freeze and
// not answered yet (not in the task table: born stopped, they can still be
// killed). A kcmp failure counts as shared.
//
// Precondition: the tree is frozen.
func (t *tracer) mmSharedWhy(tk *task) string {
	cmp := func(tid int) string {
		r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(tk.tid), uintptr(tid), kcmpVM, 0, 0, 0)
		switch {
		case e == unix.ESRCH:
			return "" // gone: its exit is over
		case e != 0:
			return fmt.Sprintf("tracecell could not tell whether pid %d shares its memory (kcmp: %v)", tid, e)
		case r == 0:
			return fmt.Sprintf("pid %d shares its memory (clone with CLONE_VM)", tid)
		}
		return ""
	}
	for _, o := range t.tasks {
		if o.tgid == tk.tgid {
			continue
		}
		if why := cmp(o.tid); why != "" {
			return why
		}
	}
	for _, p := range t.backlog {
		if t.tasks[p.tid] == nil {
			if why := cmp(p.tid); why != "" {
				return why
			}
			continue
		}
		if !p.ws.Stopped() {
			continue
		}
		switch stopEvent(p.ws) {
		case unix.PTRACE_EVENT_FORK, unix.PTRACE_EVENT_VFORK, unix.PTRACE_EVENT_CLONE:
			msg, err := unix.PtraceGetEventMsg(p.tid)
			if err != nil {
				continue // the parent is gone
			}
			if o := t.tasks[int(msg)]; o != nil && o.tgid == tk.tgid {
				continue // a thread of the caller's own group
			}
			if tgidOf(int(msg)) == tk.tgid {
				continue
			}
			if why := cmp(int(msg)); why != "" {
				return why
			}
		}
	}
	return ""
}

// exitWritable says why another task's exit could write the memory spans
// of c, a frozen call (clear_child_tid, robust futex list: see above), ""
// when none can: no task of another process shared c's mm when the tree
// was frozen (c.mmShared, mmSharedWhy), and no span lies in a shared
// mapping (a robust-list write into a MAP_SHARED mapping of another
// process shows there) or on a page of a private file mapping not yet
// copied on write (still the page cache page a shared one writes).
//
// Threads of c's own process are not counted: a SIGKILL to one kills the
// whole group (complete_signal), c's task with it, which dies at once in
// its seccomp stop; only a kill landing in the microseconds between the
// tracer's resume and the kernel's copy of the arguments could still let
// an exit write race the call, and the call's process is dying then. That
// narrow window is the residue where no copy can be made (README, known
// gaps).
//
// Precondition: the tree is frozen.
func (t *tracer) exitWritable(c *call, spans []span) string {
	if len(spans) == 0 {
		return ""
	}
	if c.mmShared != "" {
		return c.mmShared
	}
	vmas, err := readMaps(c.tk.tid)
	if err != nil {
		return fmt.Sprintf("its memory map could not be read (%v)", err)
	}
	for _, s := range spans {
		if why := spanExitWritable(c.tk.tid, vmas, s); why != "" {
			return why
		}
	}
	return ""
}

// spanExitWritable says why memory span s of tid may be written by another
// process's exit: it lies in a shared mapping, or in a private file mapping
// on a page that is still the file's (not yet copied on write: anonPage),
// which a MAP_SHARED mapping of the same file elsewhere writes. "" when
// every page of it is the process's own.
func spanExitWritable(tid int, vmas memMaps, s span) string {
	pg := uint64(os.Getpagesize())
	for _, v := range vmas {
		if !s.Overlaps(span{Lo: v.Start, Hi: v.End}) {
			continue
		}
		if v.Shared {
			return fmt.Sprintf("the memory at %#x is a shared mapping", s.Lo)
		}
		if v.Inode == 0 {
			continue
		}
		lo, hi := max(s.Lo, v.Start), min(s.Hi, v.End)
		for a := lo &^ (pg - 1); a < hi; a += pg {
			if !procfs.AnonPage(tid, a) {
				return fmt.Sprintf("the memory at %#x is a private mapping of %s whose page is still the file's own (not copied on write)", a, v.Path)
			}
		}
	}
	return ""
}

// msgCopy lays out a sendmsg's struct msghdr hdr (sizeofMsghdr bytes, as
// read), its name and its control data for a slot at addr: the msghdr
// first, msg_name pointed at the name after it (at sizeofMsghdr), and
// msg_control at the control data after the name (8-byte aligned).
// msg_iov stays: the data sent is not checked. A nil name or control keeps
// the caller's pointer (not read: NULL, a zero length, control shorter
// than one cmsghdr, which the kernel parses as no message). It returns nil
// when the whole does not fit a slot.
func msgCopy(hdr, name, ctl []byte, addr uint64) []byte {
	nameOff := uint64(sizeofMsghdr)
	ctlOff := (nameOff + uint64(len(name)) + 7) &^ 7
	end := ctlOff + uint64(len(ctl))
	if end > syscalls.PathSlotSize {
		return nil
	}
	b := make([]byte, end)
	copy(b, hdr[:sizeofMsghdr])
	if name != nil {
		copy(b[nameOff:], name)
		binary.LittleEndian.PutUint64(b[0:], addr+nameOff)
	}
	if ctl != nil {
		copy(b[ctlOff:], ctl)
		binary.LittleEndian.PutUint64(b[32:], addr+ctlOff)
	}
	return b
}
