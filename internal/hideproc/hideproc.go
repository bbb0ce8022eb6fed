// Package hideproc makes the process not dumpable (prctl(PR_SET_DUMPABLE,
// 0)) from a package initializer, before nearly every other package of
// tracecell is initialized. Import it for its effect, first thing:
//
//	import _ "github.com/tracecell/tracecell/internal/hideproc"
//
// Why so early: tracecell's environment is the operator's, and until the
// process is not dumpable a tree of another tracecell of the same user,
// watching /proc for new processes with the default open reads, can read
// it through /proc/<pid>/environ and mem (see tracer.HideProc). Go
// initializes a package as soon as its imports are: this one imports only
// syscall, so it runs right after the runtime and syscall's own
// dependencies, not after the MCP SDK, gob, yaml and the rest (about a
// millisecond). What precedes it cannot be moved earlier without cgo.
package hideproc

import "syscall"

// prSetDumpable is PR_SET_DUMPABLE (include/uapi/linux/prctl.h); the
// syscall package does not name it.
const prSetDumpable = 4

// Errno is the prctl call's error (0 when it succeeded); the caller
// reports it, since a package initializer has nowhere to.
var Errno syscall.Errno

func init() {
	scrubEnviron()
	_, _, Errno = syscall.RawSyscall6(syscall.SYS_PRCTL, prSetDumpable, 0, 0, 0, 0, 0)
}

// scrubEnviron zeroes the environment strings the kernel put on the initial
// stack, the bytes /proc/<pid>/environ shows. Go copied them into its own
// memory before any package initializer ran (os.Environ reads those
// copies), so nothing reads them again. It matters for the start-up child
// of every run (tracer/fork_unsafe_linux.go): a copy of this memory that
// must be dumpable while the tracer seizes it, so /proc/<child>/environ
// is open to the user's other programs for that moment, and now shows
// only zeros. (Its mem, where Yama allows, still holds Go's copies.)
//
// Two ways, the first preferred, each leaving the strings as they were
// when it fails: scrubNearExecfn (two system calls, no file), then
// scrubByProc. Scrubbed says which one did it.
func scrubEnviron() {
	switch {
	case scrubNearExecfn(syscall.Environ()):
		Scrubbed = "execfn"
	case scrubByProc():
		Scrubbed = "proc"
	}
}

// Scrubbed is how scrubEnviron zeroed the environment strings: "execfn",
// "proc", or "" when it could not.
var Scrubbed string

// scrubNearExecfn finds the environment strings where execve(2) put them
// (fs/exec.c, do_execveat_common, unchanged since Linux 2.6): it copies the
// file name first, at the top of the new stack, then the environment
// strings below it, the last just under the file name, then the arguments
// below those. So the strings, each with its NUL, end where AT_EXECFN
// points. They are zeroed only if the bytes there are exactly env, NULs
// included (read and written with process_vm_readv/writev, which fail
// rather than fault on memory that is not there), so a layout other than
// expected (an emulator, an unset variable) leaves them to scrubByProc.
// About 0.1 ms less at every start than scrubByProc's two /proc files.
func scrubNearExecfn(env []string) bool {
	end := execfn()
	n := 0
	for _, e := range env {
		n += len(e) + 1
	}
	if end == 0 || n == 0 || n > 4<<20 || uintptr(n) > end {
		return false
	}
	want := make([]byte, 0, n)
	for _, e := range env {
		want = append(append(want, e...), 0)
	}
	got := make([]byte, n)
	if !selfVM(end-uintptr(n), got, false) || string(got) != string(want) {
		return false
	}
	clear(got)
	return selfVM(end-uintptr(n), got, true)
}

// scrubByProc finds the strings by /proc/self/stat's env_start and env_end
// and zeroes them through /proc/self/mem, before the prctl: a process that
// is not dumpable may not open its own mem as an ordinary user.
func scrubByProc() bool {
	start, end, ok := envArea()
	if !ok || end <= start || end-start > 4<<20 {
		return false
	}
	fd, err := syscall.Open("/proc/self/mem", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	n, err := syscall.Pwrite(fd, make([]byte, end-start), int64(start))
	syscall.Close(fd)
	return err == nil && uint64(n) == end-start
}

// envArea reads env_start and env_end, fields 50 and 51 of /proc/self/stat
// (proc(5); Linux 3.5), counted after the command name's closing parenthesis.
func envArea() (start, end uint64, ok bool) {
	fd, err := syscall.Open("/proc/self/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, false
	}
	var buf [2048]byte
	n, err := syscall.Read(fd, buf[:])
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return 0, 0, false
	}
	b := buf[:n]
	i := len(b) - 1
	for i >= 0 && b[i] != ')' {
		i--
	}
	if i < 0 {
		return 0, 0, false
	}
	// Space-separated tokens: the state letter (field 3), then numbers,
	// some of them negative (priority, nice): a token's value counts only
	// for the two wanted, which are addresses.
	var fields []uint64
	field, in := uint64(0), false
	for _, c := range b[i+1:] {
		switch {
		case c == ' ' || c == '\n':
			if in {
				fields, field, in = append(fields, field), 0, false
			}
		case c >= '0' && c <= '9':
			field, in = field*10+uint64(c-'0'), true
		default:
			in = true // the state letter, a minus sign
		}
	}
	if in {
		fields = append(fields, field)
	}
	// fields[0] is field 3 (state): field N is fields[N-3].
	if len(fields) < 51-2 {
		return 0, 0, false
	}
	return fields[50-3], fields[51-3], true
}
