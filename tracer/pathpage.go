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
// memory they were decided on all the same ("Copy and freeze", copyfreeze.go): a
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
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/arch"
	"github.com/tracecell/tracecell/decode"
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
	if !t.page.on || t.page.off || len(s.Paths) != 1 || t.regs.Arg(s.Paths[0].Arg) == 0 {
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
	case syscalls.KindXattr:
		if s.NameArg >= 0 {
			// setxattr's attribute name is decided on too (never
			// security.capability), and only the path is copied: the
			// kernel would read the name from the program's memory,
			// where another thread can turn user.x into
			// security.capability after the check. Frozen, the name
			// is copied as well (frozenCopies).
			return pa, false
		}
		return pa, !(s.FlagsArg >= 0 && t.flagsArg(c)&unix.AT_EMPTY_PATH != 0)
	case syscalls.KindChmod, syscalls.KindChown, syscalls.KindWrite:
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
//   - /dev/tty (ctty.go): it opens the caller's controlling terminal, which
//     another thread of the caller could change (TIOCNOTTY, then an open
//     of another terminal) between the check and the kernel's open.
//
// unlink looks at its last component without following it: r is the
// entry itself.
func uncopyable(c *call, r pathres.Result) bool {
	return r.ViaProc || (c.spec.Kind == syscalls.KindDelete && r.Mode&fs.ModeSymlink != 0) || policy.PtySlave(r.Path) || r.Path == policy.DevTTY
}

// copyPath writes the path bytes c is decided on, NUL-terminated, into c's
// slot. It returns false when the page cannot be written (the process is
// then marked pageNone, and the call must be decided again frozen).
func (t *tracer) copyPath(c *call, given []byte) bool {
	p := t.tree.procs[c.tk.tgid]
	if p == nil {
		return false
	}
	f, err := p.memFile(c.tk.tid)
	if err == nil {
		buf := withNUL(given)
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
		t.page.put(c.slot)
		if err == unix.ESRCH {
			return nil
		}
		return err
	}
	tk.slot, tk.slotArg, tk.slotOrig = c.slot+1, c.copyArg, orig
	t.page.copies++
	// The call runs, and stops at its syscall exit.
	if err := ptraceResume(unix.PTRACE_SYSCALL, tk.tid, 0); err != nil {
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
	t.page.put(slot)
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
	if err := ptraceResume(unix.PTRACE_SYSCALL, tid, 0); err != nil {
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
		t.fz.queue(tid, ws) // killed
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
		t.page.ever = true
	} else {
		p.page = pageNone
		t.cfg.Log.Debug().Int("pid", tk.tgid).Int64("ret", int64(ret)).Msg("cannot map the path page; the process's calls freeze the tree")
	}
	t.page.maps++
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
	case !t.page.ever:
		// No process has had the page yet (the tracer maps it only once
		// the tree has two tasks): a program that reserves a range
		// covering it first, as AddressSanitizer does for its shadow
		// gap at start-up, keeps it, and the page is off for the rest of
		// the run (its calls freeze, as without the page). Off before the
		// call runs, so no mapping can come between.
		if !t.page.off {
			t.page.off = true
			t.cfg.Log.Debug().Str("syscall", c.name).Int("pid", c.tk.tgid).Msg("the program maps over the path page's range before tracecell used it; path page off for this run")
		}
		c.Out = decode.PassOutcome()
		return nil
	}
	c.Out = decode.LimitWith(policy.Decision{Rule: policy.RulePathPage, Errno: syscall.EPERM, Reason: reason})
	return &policy.Op{Kind: syscalls.KindMemory, Syscall: c.name}
}
