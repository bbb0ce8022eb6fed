package decode

// Futexes on shared words (issue 16.6).
//
// Without FUTEX_PRIVATE_FLAG (FUTEX2_PRIVATE for the futex2 calls) the
// kernel keys a futex word by what backs it (get_futex_key,
// kernel/futex/core.c): a page of a file mapping (a shared one, or a page
// of a private one not yet copied on write) by the file's inode and the
// offset, so that every process mapping the file meets the same futex; an
// anonymous page by the caller's mm (private) or by the shmem object behind
// a shared anonymous mapping. Reading the word is enough: the keys of
// FUTEX_WAIT, FUTEX_WAKE and uaddr1 of FUTEX_REQUEUE/CMP_REQUEUE are taken
// with FUTEX_READ. So a read-only MAP_SHARED mapping of a host program's
// named semaphore (/dev/shm/sem.X, readable) let the tree move that
// program's waiter to a futex of its own with FUTEX_CMP_REQUEUE (the
// program's sem_post then woke nobody), wake it, or steal its wakeups by
// waiting there itself.
//
// The rule: every word a shared futex call names must lie in memory the
// tree may write, judged from /proc/<tid>/maps with the tree frozen (the
// mapping cannot change before the kernel takes the key):
//   - anonymous memory (heap, stack, MAP_ANONYMOUS): private anonymous
//     pages are keyed by the mm; shared anonymous memory is reachable only
//     through that very mapping, inherited by fork within the tree;
//   - a MAP_SHARED mapping with PROT_WRITE: for a file that needs an fd
//     opened for writing (mmap fails with EACCES otherwise, and a
//     read-only fd's mapping never gains VM_MAYWRITE), an open the open
//     check decided;
//   - a page of a private file mapping that has been copied on write
//     (/proc/<pid>/pagemap, 2.6.25: present or swapped, not file-page):
//     keyed by the mm like any anonymous page.
// Anything else (a read-only shared mapping, an uncopied page of a private
// file mapping) is denied and reported with the address and the file.
//
// Private futexes (glibc's mutexes, condition variables, unnamed
// semaphores, Python's locks) never stop: the filter passes them.

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// futexWaitvMax is FUTEX_WAITV_MAX: futex_waitv fails with EINVAL beyond it.
const futexWaitvMax = 128

// sizeofFutexWaitv is sizeof(struct futex_waitv) { u64 val; u64 uaddr; u32
// flags; u32 __reserved; }.
const sizeofFutexWaitv = 24

// futexWord is one futex word a call names.
type futexWord struct {
	addr uint64
	arg  string // "uaddr", "uaddr2", "waiters[1]"
}

// RestartUnknown is Env.FutexRestart's answer for a task whose saved
// restart is not known: a new task before its parent's clone, fork or vfork
// event (the child inherits the parent's restart_block).
const RestartUnknown = ^uint64(0)

// futex checks the shared futex words of futex, futex_wait,
// futex_wake, futex_waitv and futex_requeue.
func (d *Decoder) futex() *policy.Op {
	var words []futexWord
	// timedWait: an allowed call may end with -ERESTART_RESTARTBLOCK and
	// be resumed by restart_syscall at this word (futexExit).
	var timedWait uint64
	switch d.Name {
	case "rt_sigreturn":
		// The kernel resets the saved restart (restore_sigcontext:
		// "current->restart_block.fn = do_no_restart_syscall"), so a
		// handler's return ends the chance to restart the wait.
		d.Futex.ClearRestart = true
		d.Out = PassOutcome()
		return nil
	case "restart_syscall":
		addr := d.Env.FutexRestart()
		if addr == 0 {
			d.Out = PassOutcome() // restarts a sleep, poll or private wait: nothing to check
			return nil
		}
		if addr == RestartUnknown {
			// A new task before its parent's clone event: it may have
			// inherited a shared wait's restart (a fork in a signal
			// handler that interrupted one) at an address that is now
			// a host file's.
			d.Out = FailClosedWith(syscall.EPERM, "restart_syscall in a new task whose parent's clone event tracecell has not seen yet, so it cannot tell which futex word the kernel would wait on", policy.Path{})
			return nil
		}
		// Kept until the restart is allowed (futex_wait_restart then
		// resets restart->fn: it runs once) or a handler returns
		// (rt_sigreturn): a denied restart leaves the kernel's saved
		// one in place, to be tried again.
		d.Flags = "FUTEX_WAIT (restarted)"
		words = append(words, futexWord{addr, "uaddr"})
		timedWait = addr
	case "futex":
		op := uint32(d.Regs.Arg(1))
		if op&syscalls.FutexPrivateFlag != 0 {
			// Not ours: a filter of the program's own returned
			// SECCOMP_RET_TRACE for it (ours passes private ops).
			d.Out = PassOutcome()
			return nil
		}
		cmd := syscalls.FutexCmd(op)
		d.Flags = syscalls.FutexCmdName(cmd)
		switch {
		case cmd == syscalls.FutexFd:
			d.Out = KernelFailsWith(syscall.ENOSYS) // removed in 2.6.26
			return nil
		case cmd > syscalls.FutexLockPI2:
			// The kernel fails unknown commands with ENOSYS today; a
			// later one may name memory in ways not checked here.
			return &policy.Op{Kind: syscalls.KindFutex, Syscall: d.Name,
				FutexWhy: fmt.Sprintf("futex command %d is not known to tracecell, which cannot tell what memory it acts on", cmd)}
		}
		words = append(words, futexWord{d.Regs.Arg(0), "uaddr"})
		if (cmd == syscalls.FutexWait || cmd == syscalls.FutexWaitBitset) && d.Regs.Arg(3) != 0 {
			// futex_wait saves uaddr for futex_wait_restart only
			// with a timeout (kernel/futex/waitwake.c).
			timedWait = d.Regs.Arg(0)
		}
		if syscalls.FutexUsesUaddr2(cmd) {
			words = append(words, futexWord{d.Regs.Arg(4), "uaddr2"})
		}
	case "futex_wait", "futex_wake":
		if uint32(d.Regs.Arg(3))&syscalls.Futex2Private != 0 {
			d.Out = PassOutcome()
			return nil
		}
		words = append(words, futexWord{d.Regs.Arg(0), "uaddr"})
	case "futex_waitv", "futex_requeue":
		n := 2 // futex_requeue: waiters[0] is the source, waiters[1] the target
		if d.Name == "futex_waitv" {
			n = int(uint32(d.Regs.Arg(1)))
			if n == 0 || n > futexWaitvMax {
				d.Out = KernelFailsWith(syscall.EINVAL) // futex_waitv: !nr_futexes || nr_futexes > FUTEX_WAITV_MAX
				return nil
			}
		}
		// Read through ReadArgBytes: a frozen call runs on a read-only
		// copy of the very array checked here (copy and freeze,
		// tracer/copyfreeze.go), since the exit of a task killed while
		// the tree is frozen (clear_child_tid, robust futexes) could
		// rewrite a checked uaddr before the kernel reads the array. The
		// kernel only reads it (futex_parse_waitv: copy_from_user, Linux
		// 5.16 futex_waitv, 6.7 futex_requeue), so a read-only copy is
		// what it would have read. At most futexWaitvMax entries: 3072
		// bytes, within a path page slot.
		b, err := d.Env.ReadArgBytes(0, uintptr(d.Regs.Arg(0)), n*sizeofFutexWaitv)
		if err != nil {
			d.Out = KernelFailsWith(syscall.EFAULT)
			return nil
		}
		for i := 0; i < n; i++ {
			e := b[i*sizeofFutexWaitv:]
			if binary.LittleEndian.Uint32(e[16:])&syscalls.Futex2Private != 0 {
				continue
			}
			words = append(words, futexWord{binary.LittleEndian.Uint64(e[8:]), "waiters[" + strconv.Itoa(i) + "]"})
		}
		if len(words) == 0 {
			d.Out = PassOutcome()
			return nil
		}
	default:
		d.Out = PassOutcome()
		return nil
	}
	for _, w := range words {
		m, ok, err := d.Env.MapAt(w.addr, false)
		if err != nil {
			d.Out = FailClosedWith(syscall.ESRCH, fmt.Sprintf("tracecell could not read the memory map of pid %d (%v)", d.Env.Tid(), err), policy.Path{})
			return nil
		}
		if !ok {
			// get_futex_key faults on it: EFAULT before anything
			// happens. The tree is frozen: no one maps it meanwhile.
			d.Out = KernelFailsWith(syscall.EFAULT)
			return nil
		}
		why := FutexMemWhy(m, func() bool { return d.Env.AnonPage(w.addr) })
		if why == "" {
			continue
		}
		// Denied: the file's name for the report (the tree is still
		// frozen, or only this stopped task can change its mappings).
		if mn, ok, err := d.Env.MapAt(w.addr, true); err == nil && ok {
			m = mn
			why = FutexMemWhy(m, func() bool { return d.Env.AnonPage(w.addr) })
		}
		d.Flags = strings.TrimSpace(d.Flags + fmt.Sprintf(" %s=%#x", w.arg, w.addr))
		p := policy.Path{Role: "futex-word", Given: fmt.Sprintf("%s %#x", w.arg, w.addr), Resolved: m.Path, Exists: true}
		return &policy.Op{Kind: syscalls.KindFutex, Syscall: d.Name, Paths: []policy.Path{p},
			FutexWhy: fmt.Sprintf("the futex word at %#x (%s) lies in %s: a shared futex there is keyed by the file and reaches every process that maps it; futex words must be in memory the traced tree may write (anonymous memory or a writable MAP_SHARED mapping), or use FUTEX_PRIVATE_FLAG", w.addr, w.arg, why)}
	}
	d.Out = PassOutcome()
	d.Futex.Passed, d.Futex.Exit = true, timedWait
	if d.Name == "restart_syscall" {
		d.Futex.ClearRestart = true // used: futex_wait_restart resets restart->fn
	}
	return nil
}

// FutexMemWhy says why a shared futex word in mapping m may not be used
// ("" when it may); anonPage tells whether the word's page is anonymous
// (asked only of a private file mapping).
func FutexMemWhy(m procfs.Mapping, anonPage func() bool) string {
	name := m.Path
	if name == "" {
		name = "anonymous memory"
	}
	switch {
	case m.Shared && m.Write:
		return ""
	case m.Shared:
		return "a read-only shared mapping of " + name
	case m.Inode == 0:
		return "" // private anonymous memory: keyed by the mm
	}
	// A private file mapping: keyed by the mm once the page is the
	// process's own copy (PageAnon), by the file while it is not.
	if anonPage() {
		return ""
	}
	return "a private mapping of " + name + " whose page is still the file's own (not copied on write)"
}
