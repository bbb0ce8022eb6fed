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
// The write goes through /proc/self/mem, before the prctl: a process that
// is not dumpable may not open its own mem as an ordinary user. Any failure
// leaves the strings as they were.
func scrubEnviron() {
	start, end, ok := envArea()
	if !ok || end <= start || end-start > 4<<20 {
		return
	}
	fd, err := syscall.Open("/proc/self/mem", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	syscall.Pwrite(fd, make([]byte, end-start), int64(start))
	syscall.Close(fd)
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
