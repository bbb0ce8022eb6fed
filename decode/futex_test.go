package decode

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/tracecell/tracecell/internal/procfs"
	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/syscalls"
)

// Futex words in the fake memory map.
const (
	anonWord = 0x10000 // private anonymous memory
	shwWord  = 0x20000 // a writable shared mapping
	shrWord  = 0x30000 // a read-only shared mapping of /dev/shm/sem.x
	privWord = 0x40000 // a private mapping of /usr/lib/x.so
	cowWord  = 0x41000 // the same, a page copied on write
	nowhere  = 0x90000 // unmapped
)

func futexMaps(e *fakeEnv) {
	e.maps = []procfs.Mapping{
		{Start: 0x10000, End: 0x11000, Write: true},
		{Start: 0x20000, End: 0x21000, Write: true, Shared: true, Inode: 5, Path: "/dev/shm/rw"},
		{Start: 0x30000, End: 0x31000, Shared: true, Inode: 6, Path: "/dev/shm/sem.x"},
		{Start: 0x40000, End: 0x42000, Write: true, Inode: 7, Path: "/usr/lib/x.so"},
	}
	e.anonPages = map[uint64]bool{cowWord: true}
}

// futexNote checks what a futex call leaves to follow.
func futexNote(want FutexNote) func(*testing.T, *policy.Op, *Result, *fakeEnv) {
	return func(t *testing.T, _ *policy.Op, r *Result, _ *fakeEnv) {
		if r.Futex != want {
			t.Errorf("futex note %+v, want %+v", r.Futex, want)
		}
	}
}

// denied checks a futex denial names the word and the file.
func denied(arg, file string) func(*testing.T, *policy.Op, *Result, *fakeEnv) {
	return func(t *testing.T, op *policy.Op, r *Result, _ *fakeEnv) {
		if len(op.Paths) != 1 || op.Paths[0].Resolved != file || !strings.HasPrefix(op.Paths[0].Given, arg) ||
			!strings.Contains(r.Flags, arg+"=") || op.FutexWhy == "" || r.Futex != (FutexNote{}) {
			t.Errorf("op %+v flags %q note %+v, want %s in %s", op, r.Flags, r.Futex, arg, file)
		}
	}
}

// waitv is an array of struct futex_waitv: {val, uaddr, flags} each.
func waitv(words ...uint64) string {
	var b []byte
	for _, w := range words {
		flags := uint32(0)
		if w&1 != 0 { // odd: FUTEX2_PRIVATE, the word w-1
			flags, w = syscalls.Futex2Private, w-1
		}
		b = append(append(append(b, le64(0)...), le64(w)...), append(le32(flags), 0, 0, 0, 0)...)
	}
	return string(b)
}

func TestDecodeFutex(t *testing.T) {
	cases := []tcase{
		{name: "a private wait is not ours", call: "futex", args: [6]uint64{nowhere, syscalls.FutexWait | syscalls.FutexPrivateFlag}, want: Pass},
		{name: "shared wait on anonymous memory", call: "futex", args: [6]uint64{anonWord, syscalls.FutexWait}, env: futexMaps, want: Pass,
			check: futexNote(FutexNote{Passed: true})},
		{name: "a timed shared wait is followed to its restart", call: "futex", args: [6]uint64{anonWord + 8, syscalls.FutexWait, 0, addr1}, env: futexMaps, want: Pass,
			check: futexNote(FutexNote{Passed: true, Exit: anonWord + 8})},
		{name: "FUTEX_WAIT_BITSET too", call: "futex", args: [6]uint64{anonWord, syscalls.FutexWaitBitset, 0, addr1}, env: futexMaps, want: Pass,
			check: futexNote(FutexNote{Passed: true, Exit: anonWord})},
		{name: "a writable shared mapping may hold the word", call: "futex", args: [6]uint64{shwWord, syscalls.FutexWake}, env: futexMaps, want: Pass},
		{name: "a read-only shared mapping may not", call: "futex", args: [6]uint64{shrWord, syscalls.FutexWake}, env: futexMaps,
			kind: syscalls.KindFutex, check: denied("uaddr", "/dev/shm/sem.x")},
		{name: "a private file page not copied may not", call: "futex", args: [6]uint64{privWord, syscalls.FutexWait}, env: futexMaps,
			kind: syscalls.KindFutex, check: denied("uaddr", "/usr/lib/x.so")},
		{name: "a private file page copied on write may", call: "futex", args: [6]uint64{cowWord + 4, syscalls.FutexWait}, env: futexMaps, want: Pass},
		{name: "CMP_REQUEUE's target is checked too", call: "futex", args: [6]uint64{anonWord, syscalls.FutexCmpRequeue, 1, 1, shrWord}, env: futexMaps,
			kind: syscalls.KindFutex, check: denied("uaddr2", "/dev/shm/sem.x")},
		{name: "WAKE does not look at uaddr2", call: "futex", args: [6]uint64{anonWord, syscalls.FutexWake, 1, 0, shrWord}, env: futexMaps, want: Pass},
		{name: "an unmapped word: EFAULT", call: "futex", args: [6]uint64{nowhere, syscalls.FutexWait}, env: futexMaps, want: KernelFails, errno: syscall.EFAULT},
		{name: "FUTEX_FD: ENOSYS", call: "futex", args: [6]uint64{anonWord, syscalls.FutexFd}, want: KernelFails, errno: syscall.ENOSYS},
		{name: "an unknown command is denied", call: "futex", args: [6]uint64{anonWord, 14}, kind: syscalls.KindFutex,
			check: func(t *testing.T, op *policy.Op, _ *Result, _ *fakeEnv) {
				if !strings.Contains(op.FutexWhy, "command 14") {
					t.Errorf("why %q", op.FutexWhy)
				}
			}},
		{name: "an unreadable map fails closed", call: "futex", args: [6]uint64{anonWord, syscalls.FutexWait},
			env: func(e *fakeEnv) { e.mapsErr = errors.New("gone") }, want: FailClosed, errno: syscall.ESRCH,
			check: func(t *testing.T, _ *policy.Op, r *Result, _ *fakeEnv) {
				if !strings.Contains(r.Out.Why, "pid 4321") {
					t.Errorf("why %q", r.Out.Why)
				}
			}},
		{name: "futex_waitv of 0 words: EINVAL", call: "futex_waitv", args: [6]uint64{addr1, 0}, want: KernelFails, errno: syscall.EINVAL},
		{name: "futex_waitv past FUTEX_WAITV_MAX: EINVAL", call: "futex_waitv", args: [6]uint64{addr1, futexWaitvMax + 1}, want: KernelFails, errno: syscall.EINVAL},
		{name: "futex_waitv unreadable: EFAULT", call: "futex_waitv", args: [6]uint64{bad, 2}, want: KernelFails, errno: syscall.EFAULT},
		{name: "futex_waitv of private words passes", call: "futex_waitv", args: [6]uint64{addr1, 2},
			mem: map[uintptr]string{addr1: waitv(nowhere+1, shrWord+1)}, want: Pass},
		{name: "futex_waitv names the bad waiter", call: "futex_waitv", args: [6]uint64{addr1, 2},
			mem: map[uintptr]string{addr1: waitv(anonWord, shrWord)}, env: futexMaps, kind: syscalls.KindFutex, check: denied("waiters[1]", "/dev/shm/sem.x")},
		{name: "rt_sigreturn ends a saved restart", call: "rt_sigreturn", want: Pass, check: futexNote(FutexNote{ClearRestart: true})},
		{name: "futex_waitv's array is read as argument 0 (copied when frozen)", call: "futex_waitv", args: [6]uint64{addr1, 2},
			mem: map[uintptr]string{addr1: waitv(anonWord, shwWord)}, env: futexMaps, want: Pass, check: readArg0},
		{name: "futex_requeue's array is read as argument 0 (copied when frozen)", call: "futex_requeue", args: [6]uint64{addr1, 0, 1, 1},
			mem: map[uintptr]string{addr1: waitv(anonWord, anonWord+4)}, env: futexMaps, want: Pass, check: readArg0},
		{name: "futex_requeue denied on its copy's target", call: "futex_requeue", args: [6]uint64{addr1, 0, 1, 1},
			mem: map[uintptr]string{addr1: waitv(anonWord, shrWord)}, env: futexMaps, kind: syscalls.KindFutex,
			check: func(t *testing.T, op *policy.Op, r *Result, e *fakeEnv) {
				denied("waiters[1]", "/dev/shm/sem.x")(t, op, r, e)
				readArg0(t, op, r, e)
			}},
		{name: "restart_syscall of no futex wait passes", call: "restart_syscall", want: Pass, check: futexNote(FutexNote{})},
		{name: "restart_syscall of a shared wait is checked again", call: "restart_syscall",
			env: func(e *fakeEnv) { futexMaps(e); e.futexRestart = anonWord }, want: Pass, flags: "FUTEX_WAIT (restarted)",
			check: futexNote(FutexNote{Passed: true, Exit: anonWord, ClearRestart: true})},
		{name: "restart_syscall of a wait now on a read-only mapping", call: "restart_syscall",
			env: func(e *fakeEnv) { futexMaps(e); e.futexRestart = shrWord }, kind: syscalls.KindFutex, check: denied("uaddr", "/dev/shm/sem.x")},
		{name: "restart_syscall of a new task whose inherited restart is not known fails closed", call: "restart_syscall",
			env: func(e *fakeEnv) { futexMaps(e); e.futexRestart = RestartUnknown }, want: FailClosed, errno: syscall.EPERM},
	}
	run(t, cases)
}

// readArg0 checks the call's struct futex_waitv array was read once, as
// the memory argument 0 points to (decode.Memory.ReadArgBytes): a frozen
// call then runs on a read-only copy of it (tracer/copyfreeze.go).
func readArg0(t *testing.T, _ *policy.Op, _ *Result, e *fakeEnv) {
	if len(e.byteArgs) != 1 || e.byteArgs[0] != 0 {
		t.Errorf("array read for arguments %v, want [0]", e.byteArgs)
	}
}

// TestFutexWaitvFitsSlot: the largest array futex_waitv takes
// (FUTEX_WAITV_MAX entries) fits one path page slot, so every array the
// kernel accepts can be copied (a larger one would leave the call
// uncopied, judged by exitWritable).
func TestFutexWaitvFitsSlot(t *testing.T) {
	if n := futexWaitvMax * sizeofFutexWaitv; n > syscalls.PathSlotSize {
		t.Errorf("%d entries of %d bytes = %d bytes: larger than a path page slot (%d)", futexWaitvMax, sizeofFutexWaitv, n, syscalls.PathSlotSize)
	}
}

func TestFutexMemWhy(t *testing.T) {
	for _, c := range []struct {
		name string
		m    procfs.Mapping
		anon bool
		bad  string
	}{
		{"private anonymous", procfs.Mapping{Write: true}, false, ""},
		{"shared anonymous", procfs.Mapping{Write: true, Shared: true, Inode: 3, Path: "/dev/zero (deleted)"}, false, ""},
		{"shared read-only", procfs.Mapping{Shared: true, Inode: 3, Path: "/f"}, false, "read-only shared mapping of /f"},
		{"shared read-only anonymous", procfs.Mapping{Shared: true}, false, "of anonymous memory"},
		{"private file, not copied", procfs.Mapping{Inode: 3, Path: "/f"}, false, "not copied"},
		{"private file, copied", procfs.Mapping{Inode: 3, Path: "/f"}, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			why := FutexMemWhy(c.m, func() bool { return c.anon })
			if (why == "") != (c.bad == "") || !strings.Contains(why, c.bad) {
				t.Errorf("FutexMemWhy = %q, want %q", why, c.bad)
			}
		})
	}
}
