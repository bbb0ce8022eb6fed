package tracer

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tracecell/tracecell/decode"
	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
	"golang.org/x/sys/unix"
)

// A socket that is not bound yet is bound by listen(2) itself, to every
// interface: inet_csk_listen_start calls get_port with the address left 0
// (net/ipv4/inet_connection_sock.c). That is a public port no bind was
// checked for. So while the network is not open (listen is trapped only
// then, filter.Options.TrapNet), listen is allowed on
//   - an AF_UNIX socket: unix_listen fails on one that is not bound, and
//     its bind was checked;
//   - an inet socket that a bind of the tree's, allowed (a loopback
//     address), bound successfully: the bind's syscall-exit stop records
//     the socket (bindDone), since a bind that fails (EADDRINUSE) leaves
//     it unbound;
// and denied on every other socket.

// maxBound bounds tracer.bound (boundSockets); past it a listen on a newly
// bound socket is denied (and says so) rather than the set growing without
// end.
const maxBound = 1 << 16

// socketInode is the inode of the socket at fd of tk ("socket:[N]" in
// /proc/<tgid>/task/<tid>/fd/N); false when fd is no socket or unreadable.
func socketInode(tk *task, fd int32) (uint64, bool) {
	if fd < 0 {
		return 0, false
	}
	l, err := os.Readlink(fmt.Sprintf("/proc/%d/task/%d/fd/%d", tk.tgid, tk.tid, fd))
	if err != nil {
		return 0, false
	}
	s, ok := strings.CutPrefix(l, "socket:[")
	if !ok || !strings.HasSuffix(s, "]") {
		return 0, false
	}
	ino, err := strconv.ParseUint(s[:len(s)-1], 10, 64)
	return ino, err == nil
}

// fdHidden says whether fd of tk exists but its /proc link is closed to
// the tracer (EACCES, EPERM: the process is not dumpable and the tracer
// lacks CAP_SYS_PTRACE), as opposed to an fd that is not open (ENOENT),
// which the kernel fails by itself.
func fdHidden(tk *task, fd int32) bool {
	_, err := os.Readlink(fmt.Sprintf("/proc/%d/task/%d/fd/%d", tk.tgid, tk.tid, fd))
	return errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}

// decodeListen decides listen(fd): see the top of this file.
func (t *tracer) decodeListen(c *call) *policy.Op {
	fd := t.regs.Int32Arg(0)
	op := &policy.Op{Kind: syscalls.KindBind, Syscall: c.name}
	ino, ok := socketInode(c.tk, fd)
	if !ok && fd >= 0 && fdHidden(c.tk, fd) {
		// The fd exists but the tracer may not look at it (a process
		// that is not dumpable, to a tracer without CAP_SYS_PTRACE):
		// fail closed, as for a socket of unknown address.
		op.Family = "unspec"
		op.Addr = "(tracecell cannot read the caller's fd " + strconv.Itoa(int(fd)) + ")"
		return op
	}
	if !ok || t.bound.has(ino) || procfs.UnixSocket(c.tk.tgid, c.tk.tid, ino) {
		// Not a socket (the kernel fails it: EBADF, ENOTSOCK), or one
		// whose address was checked.
		c.Out = decode.PassOutcome()
		return op
	}
	op.Family = "unspec"
	if t.bound.full() {
		op.Addr = "(tracecell stopped recording bound sockets after " + strconv.Itoa(maxBound) + ")"
	}
	return op
}

// bindStarts notes, for an allowed bind of an inet socket, which socket it
// binds: the call is then resumed to its syscall-exit stop (resumeCall),
// where bindDone records the socket if the bind succeeded.
func (t *tracer) bindStarts(c *call, op *policy.Op) {
	if c.name != "bind" || op == nil || (op.Family != "inet" && op.Family != "inet6") || !t.trapsListen() {
		return
	}
	if ino, ok := socketInode(c.tk, t.regs.Int32Arg(0)); ok {
		c.tk.bindIno = ino
	}
}

// trapsListen: listen is trapped (the network is not open).
func (t *tracer) trapsListen() bool { return t.trapNet }

// callDone ends, at its syscall-exit stop, a call that was resumed to it
// (resumeToExit, runFrozen, or a copied call): an inet bind noted by
// bindStarts records its socket if it bound it, a create in a scratch
// directory makes the tree own the entry if it made it (scratchStarts), a
// TIOCGPTN (ptyStarts) records the pty it named if it succeeded. unfrozen:
// the call was left to finish while the rest of the tree ran (freeze.go).
//
// Precondition: tk is stopped at the syscall exit of its call.
func (t *tracer) callDone(tk *task, unfrozen bool) {
	ino, scratch, pty, fx, mv := tk.bindIno, tk.pendingScratch, tk.ptyPending, tk.futexExit, tk.pendingMove
	if ino == 0 && len(scratch) == 0 && !pty && fx == 0 && mv == nil {
		return
	}
	tk.bindIno, tk.pendingScratch, tk.ptyPending, tk.futexExit, tk.pendingMove = 0, nil, false, 0, nil
	if t.readRegs(tk.tid) != nil {
		return // gone
	}
	ret := int64(t.regs.Ret())
	if fx != 0 && ret == -errRestartBlock {
		tk.futexRestart = fx // futex.go
	}
	if ino != 0 && ret == 0 {
		t.bound.add(ino)
	}
	if mv != nil && ret == 0 {
		t.ledger.renameDone(*mv)
	}
	if ret >= 0 { // an fd, or 0
		for _, p := range scratch {
			t.ledger.record(p)
		}
	}
	if pty && ret == 0 {
		t.ptyDone(tk, unfrozen)
	}
}

// resumeToExit resumes tk from the seccomp stop of its allowed call to the
// call's syscall-exit stop (syscallStop), where bindDone sees its result.
func (t *tracer) resumeToExit(tk *task) error {
	if err := unix.PtraceSyscall(tk.tid, 0); err != nil {
		if err == unix.ESRCH {
			return nil // killed meanwhile: wait4 reports it
		}
		return os.NewSyscallError(fmt.Sprintf("ptrace(PTRACE_SYSCALL) pid %d", tk.tid), err)
	}
	return nil
}
