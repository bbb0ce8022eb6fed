package tracer

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
// connect, bind and sendto, sendmsg's msghdr with its name and control
// data, pointers redirected (msgCopy), and the struct futex_waitv array of
// futex_waitv and futex_requeue (decode/futex.go). The arguments are set at release,
// just before the call runs, and set back at its syscall-exit stop
// (runFrozen, or syscallStop for a call left to finish unfrozen).
//
// When no copy can be had (no page: pageNone, pathPage.off, a process under its
// own seccomp filter; every slot busy; a msghdr too big for a slot) the
// call runs on its own memory as before if no exit can write it
// (exitWritable: no task of another process shared the mm when the tree
// was frozen, judged before the memory is read, and the memory is the
// process's own: no shared mapping, no file page not yet copied on write);
// otherwise, if the policy would allow it, it is denied
// (RuleKernelRewritten).
// Memory a frozen call's check reads in place and never copies (ioctl and
// fcntl arguments: FIDEDUPERANGE's struct, which the kernel writes results
// back into; F_SETOWN_EX's f_owner_ex; FIOSETOWN's int) is judged the same
// way (uncopiedRead).
// sendmmsg writes msg_len back into its mmsghdr, which cannot live in the
// read-only page: an entry with an address is denied when an exit could
// write it (netmsg.go, exitRewritten).

import (
	"encoding/binary"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/decode"
	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/syscalls"
)

// argCopy is one argument of a frozen call pointed at path page slot slot,
// orig its own value, set back at the call's syscall-exit stop.
type argCopy struct {
	arg, slot int
	orig      uint64
}

// frozenCopies reports whether a frozen call c reads memory that is copied
// into the path page (copyFrozen): paths (and setxattr's attribute name) of
// file calls, fsetxattr's attribute name (the name decides: never
// security.capability, which 4 zero bytes could cut a longer name to),
// socket addresses, the struct futex_waitv array of futex_waitv and
// futex_requeue (read only by the kernel: futex_parse_waitv, Linux 5.16 and
// 6.7). Not chdir's path: chdir is never denied.
func frozenCopies(c *call) bool {
	switch c.spec.Handler {
	case syscalls.HOpen, syscalls.HPath:
		return len(c.spec.Paths) > 0
	case syscalls.HFdMeta:
		return c.spec.NameArg >= 0
	case syscalls.HSocket:
		switch c.name {
		case "connect", "bind", "sendto", "sendmsg":
			return true
		}
	case syscalls.HFutex:
		return c.name == "futex_waitv" || c.name == "futex_requeue"
	}
	return false
}

// judgesOwnReads reports whether the decoding of frozen call c deals with
// the exit writes of every memory it reads itself: sendmsg copies its
// msghdr (CopyMsg), sendmmsg asks ExitWritable of each addressed entry
// (decode.exitRewritten). Any other read of a frozen call through
// decode.Memory.ReadBytes is uncopied (uncopiedRead).
func judgesOwnReads(c *call) bool {
	return c.name == "sendmsg" || c.name == "sendmmsg"
}

// uncopiedRead records memory span s, read in place for frozen call c's
// check and read again by the kernel, which is not copied: a struct the
// kernel writes results back into (FIDEDUPERANGE's file_dedupe_range),
// which a read-only copy would fail with EFAULT, and the small arguments
// (F_SETOWN_EX's f_owner_ex, the int of FIOSETOWN and the like, btrfs
// volume args) read through the same path. The call is marked uncopied:
// it runs only if no exit can write s (exitWritable, judged in
// decodeCall). A call that is not frozen keeps running on its memory
// unjudged (no other task can run then; mmAlone, needsFreeze).
//
// Precondition: the tree is frozen when c is; called before s is read.
func (t *tracer) uncopiedRead(c *call, s span) {
	if !c.frozen || judgesOwnReads(c) {
		return
	}
	t.judgeMM(c) // before the read: see mmSharedWhy
	c.spans = append(c.spans, s)
	if !c.uncopied {
		c.uncopied, c.noCopy = true, fmt.Sprintf("%s's argument memory is read in place: tracecell copies only paths, attribute names, socket addresses, msghdrs and futex arrays", c.name)
	}
}

// judgeMM sets c.mmShared (mmSharedWhy) once for frozen call c.
//
// Precondition: the tree is frozen, and none of c's memory has been read.
func (t *tracer) judgeMM(c *call) {
	if !c.mmJudged {
		c.mmShared, c.mmJudged = t.mmSharedWhy(c.tk), true
	}
}

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
		c.uncopied, c.noCopy = true, t.page.noPageWhy(c.tk)
		return
	}
	p := t.tree.procs[c.tk.tgid]
	i := t.page.take()
	var b []byte
	if i >= 0 {
		b = mk(slotAddr(i))
	}
	if p == nil || b == nil || len(b) > syscalls.PathSlotSize {
		c.uncopied, c.noCopy = true, "every slot of its path page is in use by calls in flight"
		if i >= 0 {
			t.page.put(i)
			c.noCopy = fmt.Sprintf("what it reads (%d bytes) is larger than a path page slot (%d bytes)", len(b), syscalls.PathSlotSize)
		}
		return
	}
	f, err := p.memFile(c.tk.tid)
	if err == nil {
		var n int
		n, err = f.WriteAt(b, int64(slotAddr(i)))
		if err == nil && n != len(b) {
			err = syscall.EIO
		}
	}
	if err != nil {
		t.page.put(i)
		t.cfg.Log.Debug().Int("pid", c.tk.tgid).Err(err).Msg("cannot write the path page; the process's calls freeze the tree from now on")
		p.page = pageNone
		c.uncopied, c.noCopy = true, "its path page could not be written"
		return
	}
	c.copies = append(c.copies, argCopy{arg: arg, slot: i, orig: t.regs.Arg(arg)})
}

// copyPathArg copies path s (no NUL), read from addr for argument arg of a
// frozen call.
func (t *tracer) copyPathArg(c *call, arg int, addr uint64, s []byte) {
	t.copyFrozen(c, arg, func(uint64) []byte { return withNUL(s) }, decode.MkSpan(addr, uint64(len(s)+1)))
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
			t.page.dropCopies(c)
			return err
		}
	}
	tk.copies, c.copies = c.copies, nil
	t.page.frozenCopies += len(tk.copies)
	return nil
}

// endCopies is the syscall-exit stop of tk's frozen call that ran on
// copies: the arguments are set back and the slots freed.
func (t *tracer) endCopies(tk *task) error {
	cs := tk.copies
	tk.copies = nil
	for _, a := range cs {
		t.page.put(a.slot)
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
	for _, o := range t.tree.tasks {
		if o.tgid == tk.tgid {
			continue
		}
		if why := cmp(o.tid); why != "" {
			return why
		}
	}
	for _, p := range t.fz.backlog {
		if t.tree.tasks[p.tid] == nil {
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
			if o := t.tree.tasks[int(msg)]; o != nil && o.tgid == tk.tgid {
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

// msgCopy lays out a sendmsg's struct msghdr hdr (unix.SizeofMsghdr bytes, as
// read), its name and its control data for a slot at addr: the msghdr
// first, msg_name pointed at the name after it (at unix.SizeofMsghdr), and
// msg_control at the control data after the name (8-byte aligned).
// msg_iov stays: the data sent is not checked. A nil name or control keeps
// the caller's pointer (not read: NULL, a zero length, control shorter
// than one cmsghdr, which the kernel parses as no message). It returns nil
// when the whole does not fit a slot.
func msgCopy(hdr, name, ctl []byte, addr uint64) []byte {
	nameOff := uint64(unix.SizeofMsghdr)
	ctlOff := (nameOff + uint64(len(name)) + 7) &^ 7
	end := ctlOff + uint64(len(ctl))
	if end > syscalls.PathSlotSize {
		return nil
	}
	b := make([]byte, end)
	copy(b, hdr[:unix.SizeofMsghdr])
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
