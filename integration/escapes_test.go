package integration

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/internal/ptytest"
)

// world is one case's outside world: a sandbox (the only writable root) and
// a host directory standing for everything else, plus whatever outside
// process or listener the case aims at.
type world struct {
	t    *testing.T
	sbx  string // writable root, symlinks expanded
	host string // outside directory, symlinks expanded

	// What the report must name.
	victim  string // a resolved path
	pid     int    // a target pid
	port    int    // an inet port
	program string // a resolved executable
	sysname string // a forbidden syscall's name
	needle  string // what the stderr notice must contain (default: victim)

	// escaped is the ground truth beyond the host directory snapshot: it
	// looks at the outside process, listener, mount table... after the run.
	escaped func(r result) (bool, string)
}

// p names an entry in the host directory.
func (w *world) p(name string) string { return filepath.Join(w.host, name) }

// s names an entry in the sandbox.
func (w *world) s(name string) string { return filepath.Join(w.sbx, name) }

// standard outside world: a file with known content, a subdirectory, an
// empty directory.
func (w *world) populate() {
	writeFile(w.t, w.p("f"), "original\n", 0o644)
	mkdir(w.t, w.p("sub"))
	writeFile(w.t, w.p("sub/g"), "inner\n", 0o600)
	mkdir(w.t, w.p("emptydir"))
}

type escapeCase struct {
	name  string
	prog  []string                // {"py", CASE} runs testdata/py/escape.py, {"c", CASE} testdata/escapes
	setup func(w *world) []string // prepares the world, returns the case's arguments
	flags []string                // extra tracecell flags
	kinds []string                // acceptable report kinds
	errno string                  // errno the program and the report must show
	rule  string                  // the report's rule, when the case needs a particular one
	out   string                  // regexp for the result line (default "errno=<errno>")
	match func(w *world, e event) bool
	// killed: the tree must be killed (status 128+SIGSYS or 128+SIGKILL)
	// instead of getting an errno.
	killed bool
	// skip returns a reason to skip on this machine ("" to run).
	skip func(w *world) string
	// bareCannot returns a reason why the bare run cannot escape here
	// (given its result line), or "".
	bareCannot func(res string) string
	// bareSkip says why the case must never run without tracecell.
	bareSkip string
}

func (c escapeCase) argv(args []string) []string {
	switch c.prog[0] {
	case "py":
		return append([]string{python, pyScript("escape.py"), c.prog[1]}, args...)
	case "c":
		return append([]string{escapeBin, c.prog[1]}, args...)
	}
	panic("unknown program kind " + c.prog[0])
}

// matchers
func byPath(w *world, e event) bool    { return e.hasResolved(w.victim) }
func bySyscall(w *world, e event) bool { return e.Syscall == w.sysname }
func byPid(w *world, e event) bool     { return e.TargetPid != nil && *e.TargetPid == w.pid }
func byPort(w *world, e event) bool    { return e.Port == w.port && e.Address == "127.0.0.1" }
func byProgram(w *world, e event) bool {
	for _, p := range e.Paths {
		if p.Resolved == w.program {
			return true
		}
	}
	return false
}

var (
	writeKinds  = []string{"write", "create"} // O_CREAT on an existing file: either is fair
	createKinds = []string{"create", "write"}
	isRoot      = os.Geteuid() == 0
)

// cannotWhen makes a bareCannot for results that mean "this kernel or this
// user cannot do it at all".
func cannotWhen(errnos ...string) func(string) string {
	return func(res string) string {
		for _, e := range errnos {
			if res == "errno="+e {
				return "bare run gets " + e + " on this machine"
			}
		}
		return ""
	}
}

func needRoot(w *world) string {
	if !isRoot {
		return "needs root to escape even bare (chown to another user / mount)"
	}
	return ""
}

// xattrSkip skips when the host file system has no user xattrs.
func xattrSkip(w *world) string {
	if err := unix.Setxattr(w.p("f"), "user.tracecell-probe", []byte("1"), 0); err != nil {
		return fmt.Sprintf("host fs has no user xattrs: %v", err)
	}
	if err := unix.Removexattr(w.p("f"), "user.tracecell-probe"); err != nil {
		w.t.Fatalf("remove probe xattr: %v", err)
	}
	return ""
}

// shmSkip skips unless /dev/shm is a tmpfs: FIFREEZE cases aim there
// because tmpfs cannot be frozen (no freeze_fs: EOPNOTSUPP), so a trap that
// failed could still not freeze anything.
func shmSkip(w *world) string {
	var sf unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &sf); err != nil || sf.Type != unix.TMPFS_MAGIC {
		return "/dev/shm is not a tmpfs"
	}
	return ""
}

// shmDir makes a directory of the case's own on /dev/shm, symlinks
// expanded, removed at the end.
func shmDir(w *world) string {
	d, err := os.MkdirTemp("/dev/shm", "tracecell-ioctl-")
	if err != nil {
		w.t.Fatalf("temp dir on /dev/shm: %v", err)
	}
	w.t.Cleanup(func() { os.RemoveAll(d) })
	r, err := filepath.EvalSymlinks(d)
	if err != nil {
		w.t.Fatalf("resolve %s: %v", d, err)
	}
	return r
}

func flagsSkip(w *world) string {
	if flagsOf(w.p("f")) == "" {
		return "host fs has no inode flags (FS_IOC_GETFLAGS)"
	}
	return ""
}

// ioUringProbe runs the io_uring case bare once: a kernel without io_uring
// (4.18, RHEL 8, or the 4.18 surface) or with it disabled cannot be escaped
// through it, and the case is skipped there.
var ioUringProbe = sync.OnceValue(func() string {
	d, err := os.MkdirTemp("", "tracecell-uring-probe-")
	if err != nil {
		return "probe: " + err.Error()
	}
	defer os.RemoveAll(d)
	out, _ := exec.Command(escapeBin, "io_uring", filepath.Join(d, "probe")).Output()
	return resultOf(string(out))
})

// startSleep starts an outside process (not in the traced tree).
func startSleep(w *world) *exec.Cmd {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		w.t.Fatalf("start sleep: %v", err)
	}
	w.t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	w.pid = cmd.Process.Pid
	w.needle = "pid " + strconv.Itoa(w.pid)
	return cmd
}

// startVictim starts the escape program's victim mode: a process holding a
// buffer "INTACT" at a printed address. escaped asks it for the buffer.
func startVictim(w *world) (pid int, addr string) {
	cmd := exec.Command(escapeBin, "victim")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatalf("start victim: %v", err)
	}
	w.t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	rd := bufio.NewReader(stdout)
	line, err := rd.ReadString('\n')
	if err != nil {
		w.t.Fatalf("victim: %v", err)
	}
	if _, err := fmt.Sscanf(line, "pid=%d addr=%s", &pid, &addr); err != nil {
		w.t.Fatalf("victim said %q: %v", line, err)
	}
	w.pid = pid
	w.escaped = func(result) (bool, string) {
		if _, err := io.WriteString(stdin, "\n"); err != nil {
			return true, fmt.Sprintf("victim is gone: %v", err)
		}
		got := make(chan string, 1)
		go func() {
			l, _ := rd.ReadString('\n')
			got <- strings.TrimSpace(l)
		}()
		select {
		case l := <-got:
			return l != "buf=INTACT", "victim buffer: " + l
		case <-time.After(10 * time.Second):
			return true, "victim did not answer (stopped or traced?), state " + procState(pid)
		}
	}
	return pid, addr
}

func userns(w *world) []string {
	w.escaped = func(r result) (bool, string) {
		return strings.Contains(r.stdout, "userns-changed=yes"), "stdout: " + strings.TrimSpace(r.stdout)
	}
	return nil
}

func escapeCases() []escapeCase {
	return []escapeCase{
		// ---- Python file API on an outside path ----
		{name: "py-open-w", prog: []string{"py", "open-w"}, kinds: writeKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "py-open-a", prog: []string{"py", "open-a"}, kinds: writeKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "py-open-x", prog: []string{"py", "open-x"}, kinds: createKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("new"); return []string{w.victim} }},
		{name: "py-remove", prog: []string{"py", "remove"}, kinds: []string{"delete"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "py-rename-sandbox-to-outside", prog: []string{"py", "rename"}, kinds: []string{"rename"}, errno: "EACCES",
			setup: func(w *world) []string {
				writeFile(w.t, w.s("mine"), "mine\n", 0o644)
				w.victim = w.p("moved-in")
				return []string{w.s("mine"), w.victim}
			}},
		{name: "py-rename-outside-to-sandbox", prog: []string{"py", "rename"}, kinds: []string{"rename"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim, w.s("stolen")} }},
		{name: "py-replace-outside-file", prog: []string{"py", "replace"}, kinds: []string{"rename"}, errno: "EACCES",
			setup: func(w *world) []string {
				writeFile(w.t, w.s("mine"), "mine\n", 0o644)
				w.victim = w.p("f")
				return []string{w.s("mine"), w.victim}
			}},
		{name: "c-rename-exchange", prog: []string{"c", "exchange"}, kinds: []string{"rename"}, errno: "EACCES",
			setup: func(w *world) []string {
				writeFile(w.t, w.s("mine"), "mine\n", 0o644)
				w.victim = w.p("f")
				return []string{w.s("mine"), w.victim}
			}},
		{name: "py-hardlink-outside-into-sandbox", prog: []string{"py", "link"}, kinds: []string{"link"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim, w.s("hl")} }},
		{name: "py-symlink-in-sandbox-write-through", prog: []string{"py", "symlink-write"}, kinds: writeKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.s("lnk"), w.victim} }},
		{name: "py-creat-through-dangling-symlink", prog: []string{"py", "dangling-creat"}, kinds: createKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("made-by-link"); return []string{w.s("dangling"), w.victim} }},
		{name: "py-dotdot-from-cwd", prog: []string{"py", "relative"}, kinds: writeKinds, errno: "EACCES",
			setup: func(w *world) []string {
				w.victim = w.p("f")
				rel, err := filepath.Rel(w.sbx, w.victim)
				if err != nil || !strings.HasPrefix(rel, "..") {
					w.t.Fatalf("relative path from %s to %s: %q %v", w.sbx, w.victim, rel, err)
				}
				return []string{rel}
			}},
		{name: "py-chdir-outside-relative-write", prog: []string{"py", "chdir-write"}, kinds: createKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("cw"); return []string{w.host, "cw"} }},
		{name: "py-proc-self-root", prog: []string{"py", "proc-root"}, kinds: writeKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "py-proc-thread-self-cwd", prog: []string{"py", "thread-self-cwd"}, kinds: createKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("tsc"); return []string{w.host, "tsc"} }},
		{name: "py-chmod", prog: []string{"py", "chmod"}, kinds: []string{"chmod"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "py-chown", prog: []string{"py", "chown"}, kinds: []string{"chown"}, errno: "EACCES", skip: needRoot,
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "py-utime", prog: []string{"py", "utime"}, kinds: []string{"write"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "py-truncate", prog: []string{"py", "truncate"}, kinds: []string{"write"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "py-setxattr", prog: []string{"py", "setxattr"}, kinds: []string{"xattr"}, errno: "EACCES", skip: xattrSkip,
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "py-mkdir", prog: []string{"py", "mkdir"}, kinds: []string{"create"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("newdir"); return []string{w.victim} }},
		{name: "py-rmdir", prog: []string{"py", "rmdir"}, kinds: []string{"delete"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("emptydir"); return []string{w.victim} }},
		{name: "py-mkfifo", prog: []string{"py", "mkfifo"}, kinds: []string{"create"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("fifo"); return []string{w.victim} }},
		{name: "py-symlink-outside", prog: []string{"py", "symlink"}, kinds: []string{"create"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("sl"); return []string{w.victim} }},
		{name: "py-ctypes-libc-open", prog: []string{"py", "ctypes-open"}, kinds: writeKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "py-ctypes-raw-syscall", prog: []string{"py", "ctypes-syscall"}, kinds: createKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("ct"); return []string{w.victim} }},

		// ---- C: below libc, fds, odd flags ----
		{name: "c-rdonly-otrunc", prog: []string{"c", "otrunc"}, kinds: []string{"write"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "c-fchmod-readonly-fd", prog: []string{"c", "fchmod"}, kinds: []string{"chmod"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "c-fchown-readonly-fd", prog: []string{"c", "fchown"}, kinds: []string{"chown"}, errno: "EACCES", skip: needRoot,
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "c-fsetxattr-readonly-fd", prog: []string{"c", "fsetxattr"}, kinds: []string{"xattr"}, errno: "EACCES", skip: xattrSkip,
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "c-utimensat-null-readonly-fd", prog: []string{"c", "futimens"}, kinds: []string{"write"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "c-fs-ioc-setflags-readonly-fd", prog: []string{"c", "setflags"}, kinds: []string{"chmod"}, errno: "EACCES", skip: flagsSkip,
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		// File-changing ioctls on a read-only fd of a host file
		// (syscalls.Ioctls): t.Run per ioctl.
		{name: "c-ioctl-ext4-setversion-readonly-fd", prog: []string{"c", "fsioctl"}, kinds: []string{"chmod"}, errno: "EACCES",
			// ext4 with metadata_csum refuses it (ENOTTY), as do file
			// systems without it; the trap does not depend on that.
			bareCannot: cannotWhen("ENOTTY", "EOPNOTSUPP"),
			setup:      func(w *world) []string { w.victim = w.p("f"); return []string{"setversion", w.victim} }},
		{name: "c-ioctl-fs-ioc-fssetxattr-readonly-fd", prog: []string{"c", "fsioctl"}, kinds: []string{"chmod"}, errno: "EACCES",
			bareCannot: cannotWhen("ENOTTY", "EOPNOTSUPP"),
			setup:      func(w *world) []string { w.victim = w.p("f"); return []string{"fssetxattr", w.victim} }},
		{name: "c-ioctl-fifreeze-tmpfs-dir", prog: []string{"c", "fsioctl"}, kinds: []string{"forbidden-syscall"}, errno: "EPERM",
			// Never bare: the kernel must not see a FIFREEZE from the
			// suite, even one tmpfs would refuse.
			bareSkip: "FIFREEZE is only ever issued under tracecell, which denies it before the kernel sees it",
			skip:     shmSkip,
			setup: func(w *world) []string {
				w.victim = shmDir(w)
				w.escaped = func(r result) (bool, string) {
					res := resultOf(r.stdout)
					return res == "ok", "FIFREEZE gave " + res
				}
				return []string{"fifreeze", w.victim}
			}},
		{name: "c-o-tmpfile-outside-dir", prog: []string{"c", "tmpfile"}, kinds: createKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("sub"); return []string{w.victim, "named"} }},
		{name: "c-raw-syscall-openat", prog: []string{"c", "syscall"}, kinds: createKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("raw"); return []string{w.victim} }},
		{name: "c-openat-outside-dirfd", prog: []string{"c", "openat"}, kinds: createKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("sub/oa"); return []string{w.p("sub"), "oa"} }},
		{name: "c-proc-self-fd-dir-path", prog: []string{"c", "procfd"}, kinds: createKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("sub/pf"); return []string{w.p("sub"), "pf"} }},
		{name: "c-reopen-readonly-fd-for-write", prog: []string{"c", "reopen"}, kinds: []string{"write"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "c-vfork-child-write", prog: []string{"c", "vfork"}, kinds: []string{"write"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "c-int80-32bit-open", prog: []string{"c", "int80"}, killed: true,
			skip: func(w *world) string {
				if !isAMD64() {
					return "int 0x80 exists only on x86_64"
				}
				return ""
			},
			bareCannot: cannotWhen("ENOSYS"),
			setup:      func(w *world) []string { w.victim = w.p("i80"); return []string{w.victim} }},
		{name: "c-x32-abi-open", prog: []string{"c", "x32"}, killed: true,
			skip: func(w *world) string {
				if !isAMD64() {
					return "x32 exists only on x86_64"
				}
				return ""
			},
			// Most kernels are built without CONFIG_X86_X32_ABI: bare gets ENOSYS.
			bareCannot: cannotWhen("ENOSYS"),
			setup:      func(w *world) []string { w.victim = w.p("x32"); return []string{w.victim} }},

		// ---- other processes and threads of the tree ----
		{name: "py-fork-child-write", prog: []string{"py", "fork-write"}, kinds: writeKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "py-thread-write", prog: []string{"py", "thread-write"}, kinds: writeKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "py-multiprocessing-child-write", prog: []string{"py", "multiprocessing-write"}, kinds: writeKinds, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("f"); return []string{w.victim} }},
		{name: "py-subprocess-touch", prog: []string{"py", "subprocess-touch"}, kinds: []string{"exec"}, errno: "EACCES", match: byProgram,
			setup: func(w *world) []string {
				w.program = mustReal(w.t, "/usr/bin/touch")
				w.needle = w.program
				return []string{w.p("touched")}
			}},
		{name: "py-os-system", prog: []string{"py", "os-system"}, kinds: []string{"exec"}, errno: "EACCES", match: byProgram,
			out: `status=127`,
			setup: func(w *world) []string {
				w.program = mustReal(w.t, "/bin/sh")
				w.needle = w.program
				return []string{w.p("touched")}
			}},
		{name: "c-memfd-execveat", prog: []string{"c", "memfd-exec"}, kinds: []string{"exec"}, errno: "EACCES",
			match: func(w *world, e event) bool {
				return len(e.Paths) > 0 && strings.HasPrefix(e.Paths[0].Resolved, "/memfd:escape")
			},
			setup: func(w *world) []string {
				// Ground truth: the copy of sh ran (its marker is in the
				// sandbox, where it may write).
				w.needle = "/memfd:escape"
				marker := w.s("ran")
				w.escaped = func(result) (bool, string) {
					_, err := os.Stat(marker)
					return err == nil, fmt.Sprintf("marker: %v", err)
				}
				return []string{mustReal(w.t, "/bin/sh"), marker}
			}},
		{name: "py-os-execv", prog: []string{"py", "os-execv"}, kinds: []string{"exec"}, errno: "EACCES", match: byProgram,
			setup: func(w *world) []string {
				w.program = mustReal(w.t, "/usr/bin/touch")
				w.needle = w.program
				return []string{w.p("touched")}
			}},

		// ---- processes outside the tree ----
		{name: "py-proc-pid-oom-score-adj", prog: []string{"py", "oom-score-adj"}, kinds: []string{"write"}, errno: "EACCES",
			setup: func(w *world) []string {
				startSleep(w)
				w.victim = fmt.Sprintf("/proc/%d/oom_score_adj", w.pid)
				w.needle = w.victim
				before := readTrim(w.victim)
				w.escaped = func(result) (bool, string) {
					now := readTrim(w.victim)
					return now != before, "oom_score_adj " + before + " -> " + now
				}
				return []string{strconv.Itoa(w.pid)}
			}},
		{name: "c-proc-pid-mem-write", prog: []string{"c", "procmem"}, kinds: []string{"write", "process"}, errno: "EACCES",
			setup: func(w *world) []string {
				pid, addr := startVictim(w)
				w.victim = fmt.Sprintf("/proc/%d/mem", pid)
				w.needle = w.victim
				return []string{strconv.Itoa(pid), addr}
			}},
		{name: "c-ptrace-attach", prog: []string{"c", "ptrace"}, kinds: []string{"forbidden-syscall"}, errno: "EPERM", match: bySyscall,
			setup: func(w *world) []string {
				pid, addr := startVictim(w)
				w.sysname, w.needle = "ptrace", "ptrace("
				return []string{strconv.Itoa(pid), addr}
			}},
		{name: "c-process-vm-writev", prog: []string{"c", "vmwrite"}, kinds: []string{"forbidden-syscall"}, errno: "EPERM", match: bySyscall,
			setup: func(w *world) []string {
				pid, addr := startVictim(w)
				w.sysname, w.needle = "process_vm_writev", "process_vm_writev("
				return []string{strconv.Itoa(pid), addr}
			}},
		{name: "c-sysv-shm-attach", prog: []string{"c", "shm"}, kinds: []string{"forbidden-syscall"}, errno: "EPERM", match: bySyscall,
			setup: func(w *world) []string {
				id := outsideShm(w)
				w.sysname, w.needle = "shmat", "shmat("
				return []string{strconv.Itoa(id)}
			}},
		{name: "c-fanotify-init", prog: []string{"c", "fanotify"}, kinds: []string{"forbidden-syscall"}, errno: "EPERM", match: bySyscall,
			// Ground truth: the kernel handing out the listener (with
			// it, O_RDWR fds of the files it watches).
			bareCannot: func(res string) string {
				if res != "ok" {
					return "fanotify unavailable bare (" + res + ")"
				}
				return ""
			},
			setup: func(w *world) []string {
				w.sysname, w.needle = "fanotify_init", "fanotify_init("
				w.escaped = func(r result) (bool, string) { return resultOf(r.stdout) == "ok", "result " + resultOf(r.stdout) }
				return nil
			}},
		{name: "c-mknod-block-device", prog: []string{"c", "mknod-dev"}, kinds: []string{"forbidden-syscall"}, errno: "EPERM", match: byPath,
			skip: func(w *world) string {
				if os.Geteuid() != 0 {
					return "only root may make device nodes: nothing to escape through"
				}
				return ""
			},
			setup: func(w *world) []string {
				w.victim = w.s("blk")
				w.escaped = func(result) (bool, string) {
					_, err := os.Lstat(w.victim)
					return err == nil, fmt.Sprintf("device node: %v", err)
				}
				return []string{w.victim}
			}},
		// Another terminal of the user (an ssh session): a pty the test
		// made and holds, outside the tree. Ground truth: what its master
		// reads.
		{name: "py-foreign-pty-write", prog: []string{"py", "pty-write"}, kinds: []string{"write"}, errno: "EACCES", rule: "foreign-pty",
			setup: func(w *world) []string { w.victim = outsidePty(w); return []string{w.victim} }},
		// The same through a read-only open, which the filter lets through:
		// a terminal change (TIOCSWINSZ, decided as a write of what the fd
		// points to). Ground truth: the size its master sees.
		{name: "py-foreign-pty-winsize", prog: []string{"py", "pty-winsize"}, kinds: []string{"write"}, errno: "EACCES", rule: "foreign-pty",
			setup: func(w *world) []string {
				m, name, _ := openPty(w.t)
				w.victim = name
				w.escaped = func(result) (bool, string) {
					ws, err := unix.IoctlGetWinsize(int(m.Fd()), unix.TIOCGWINSZ)
					if err != nil {
						return false, "TIOCGWINSZ: " + err.Error()
					}
					return ws.Row == 66 || ws.Col == 77, fmt.Sprintf("%s is %dx%d", name, ws.Row, ws.Col)
				}
				return []string{name}
			}},
		// Its input, where reads are checked (here by --deny-read; the
		// session server always checks them): someone typing there.
		{name: "py-foreign-pty-read", prog: []string{"py", "pty-read"}, kinds: []string{"read"}, errno: "EACCES", rule: "foreign-pty",
			flags: []string{"--deny-read", "/nonexistent-tracecell-test"},
			setup: func(w *world) []string {
				m, name, _ := openPty(w.t)
				if _, err := m.Write([]byte("typed-secret\n")); err != nil {
					w.t.Fatal(err)
				}
				w.victim = name
				got := w.s("got")
				w.escaped = func(result) (bool, string) {
					b, err := os.ReadFile(got)
					return err == nil, fmt.Sprintf("read from %s: %q", name, b)
				}
				return []string{name, got}
			}},
		// A lease on a host file (the user's own, or any as root) through a
		// read-only open: every host open of it for writing would wait up
		// to lease-break-time. Ground truth: the kernel's lock table while
		// the program holds it.
		{name: "py-lease-host-file", prog: []string{"py", "lease"}, kinds: []string{"lease"}, errno: "EACCES", rule: "outside-writable-roots", match: byPath,
			skip: leasesSkip,
			setup: func(w *world) []string {
				w.victim = w.p("f")
				w.escaped = watchLease(w, w.victim)
				return []string{w.victim}
			}},
		// A userfaultfd from /dev/userfaultfd, which root (or a host that
		// opens the device to users) can read-open: the userfaultfd call
		// itself is forbidden. Ground truth: the kernel's fd table of the
		// program while it runs.
		{name: "py-userfaultfd-dev", prog: []string{"py", "uffd-dev"}, kinds: []string{"forbidden-syscall"}, errno: "EPERM",
			skip: func(w *world) string {
				if f, err := os.Open("/dev/userfaultfd"); err != nil {
					return "cannot open /dev/userfaultfd here (Linux 6.1+, root by default): " + err.Error()
				} else {
					f.Close()
				}
				return ""
			},
			setup: func(w *world) []string {
				w.victim, w.needle = "/dev/userfaultfd", "ioctl(USERFAULTFD_IOC_NEW)"
				w.escaped = watchFds(w, w.host, "anon_inode:[userfaultfd]")
				return []string{w.host}
			}},
		{name: "c-posix-mq-create", prog: []string{"c", "mq"}, kinds: []string{"forbidden-syscall"}, errno: "EPERM", match: bySyscall,
			setup: func(w *world) []string {
				name := fmt.Sprintf("tracecell-test-%d-%d", os.Getpid(), time.Now().UnixNano())
				w.sysname, w.needle = "mq_open", "mq_open("
				w.escaped = func(result) (bool, string) {
					if mqExists(name) {
						return true, "message queue /" + name + " created on the host"
					}
					return false, ""
				}
				w.t.Cleanup(func() { mqUnlink(name) })
				return []string{name}
			}},
		{name: "py-kill-outside", prog: []string{"py", "kill"}, kinds: []string{"signal"}, errno: "EPERM", match: byPid,
			setup: func(w *world) []string { sleepGone(w, startSleep(w)); return []string{strconv.Itoa(w.pid)} }},
		{name: "c-kill-outside", prog: []string{"c", "kill"}, kinds: []string{"signal"}, errno: "EPERM", match: byPid,
			setup: func(w *world) []string { sleepGone(w, startSleep(w)); return []string{strconv.Itoa(w.pid)} }},
		{name: "c-tgkill-outside", prog: []string{"c", "tgkill"}, kinds: []string{"signal"}, errno: "EPERM", match: byPid,
			setup: func(w *world) []string { sleepGone(w, startSleep(w)); return []string{strconv.Itoa(w.pid)} }},
		{name: "py-rw-hint-outside", prog: []string{"py", "rw-hint"}, kinds: []string{"write"}, errno: "EACCES",
			bareCannot: cannotWhen("EINVAL"),
			setup: func(w *world) []string {
				w.victim = w.p("f")
				w.escaped = func(result) (bool, string) {
					f, err := os.Open(w.victim)
					if err != nil {
						return false, err.Error()
					}
					defer f.Close()
					var hint uint64
					_, _, e := unix.Syscall(unix.SYS_FCNTL, f.Fd(), 1035, uintptr(unsafe.Pointer(&hint))) // F_GET_RW_HINT
					return e == 0 && hint != 0, fmt.Sprintf("write-life hint %d (%v)", hint, e)
				}
				return []string{w.victim}
			}},
		{name: "py-setpriority-outside", prog: []string{"py", "setpriority"}, kinds: []string{"process"}, errno: "EPERM", match: byPid,
			setup: func(w *world) []string {
				startSleep(w)
				before := procStatField(w.pid, 19)
				w.escaped = func(result) (bool, string) {
					now := procStatField(w.pid, 19)
					return now != before, "nice " + before + " -> " + now
				}
				return []string{strconv.Itoa(w.pid)}
			}},
		// A core-scheduling cookie pushed onto an outside process (red
		// team, session 23). The ground truth is the cookie the kernel
		// reports for it (PR_SCHED_CORE_GET from the test); kernels
		// without core scheduling answer EINVAL, even bare.
		{name: "py-sched-core-share-to-outside", prog: []string{"py", "sched-core-share-to"}, kinds: []string{"process"}, errno: "EPERM", match: byPid,
			bareCannot: cannotWhen("EINVAL", "EPERM", "ENODEV"),
			setup: func(w *world) []string {
				startSleep(w)
				w.escaped = func(result) (bool, string) {
					var cookie uint64
					err := unix.Prctl(62, 0, uintptr(w.pid), 0, uintptr(unsafe.Pointer(&cookie)))
					return err == nil && cookie != 0, fmt.Sprintf("cookie %#x (%v)", cookie, err)
				}
				return []string{strconv.Itoa(w.pid)}
			}},
		{name: "py-prlimit-outside", prog: []string{"py", "prlimit"}, kinds: []string{"process"}, errno: "EPERM", match: byPid,
			setup: func(w *world) []string {
				startSleep(w)
				lim := fmt.Sprintf("/proc/%d/limits", w.pid)
				before := readTrim(lim)
				w.escaped = func(result) (bool, string) {
					now := readTrim(lim)
					return now != before, "limits changed: " + strconv.FormatBool(now != before)
				}
				return []string{strconv.Itoa(w.pid)}
			}},
		{name: "c-prlimit-outside", prog: []string{"c", "prlimit"}, kinds: []string{"process"}, errno: "EPERM", match: byPid,
			setup: func(w *world) []string {
				startSleep(w)
				lim := fmt.Sprintf("/proc/%d/limits", w.pid)
				before := readTrim(lim)
				w.escaped = func(result) (bool, string) {
					now := readTrim(lim)
					return now != before, "limits changed: " + strconv.FormatBool(now != before)
				}
				return []string{strconv.Itoa(w.pid)}
			}},

		// ---- network ----
		{name: "py-tcp-connect-loopback", prog: []string{"py", "tcp-connect"}, kinds: []string{"connect"}, errno: "EACCES", match: byPort,
			setup: func(w *world) []string { return []string{"127.0.0.1", strconv.Itoa(tcpListener(w))} }},
		{name: "py-udp-sendto-loopback", prog: []string{"py", "udp-sendto"}, kinds: []string{"connect"}, errno: "EACCES", match: byPort,
			setup: func(w *world) []string { return []string{"127.0.0.1", strconv.Itoa(udpListener(w))} }},
		{name: "py-udp-sendto-unspec", prog: []string{"py", "udp-sendto-unspec"}, kinds: []string{"connect"}, errno: "EACCES", match: byPort,
			setup: func(w *world) []string { return []string{"127.0.0.1", strconv.Itoa(udpListener(w))} }},
		{name: "py-udp-sendmsg-unspec", prog: []string{"py", "udp-sendmsg-unspec"}, kinds: []string{"connect"}, errno: "EACCES", match: byPort,
			setup: func(w *world) []string { return []string{"127.0.0.1", strconv.Itoa(udpListener(w))} }},
		sourceRouteCase("py-ip-options-lsrr", "ip-options", "setsockopt", "192.0.2.1"),
		sourceRouteCase("py-ip-retopts-lsrr", "ip-retopts", "sendmsg", "192.0.2.1", "9"),
		sourceRouteCase("py-ip-retopts-lsrr-padded", "ip-retopts-padded", "sendmsg", "192.0.2.1", "9"),
		interfaceCase("py-so-bindtodevice", "bind-device", "setsockopt"),
		interfaceCase("py-ip-unicast-if", "unicast-if", "setsockopt"),
		interfaceCase("py-ip-pktinfo-ifindex", "pktinfo", "sendmsg"),
		interfaceCase("py-ipv6-sticky-pktinfo", "sticky-pktinfo6", "setsockopt"),
		membershipCase("py-ip-add-membership", "mcast-join"),
		membershipCase("py-ipv6-join-group", "mcast-join6"),
		membershipCase("py-ip-add-membership-net-deny", "mcast-join"),
		socketFamilyCase("py-socket-vsock", "40", "1", "0"),
		socketFamilyCase("py-socket-inet-raw", "2", "3", "1"),
		{name: "py-tcp-listen-unbound", prog: []string{"py", "tcp-bind-listen"}, kinds: []string{"bind"}, errno: "EACCES", match: bySyscall,
			setup: func(w *world) []string {
				w.sysname, w.needle = "listen", "listen("
				return listenUnbound(w)
			}},
		// The same, after the program made itself not dumpable: a tracer
		// without CAP_SYS_PTRACE (tracecell as an ordinary user, make
		// test-nobody) could then not read the socket's fd and let the
		// listen through (red team, session 25). The prctl is denied.
		{name: "py-nodump-tcp-listen", prog: []string{"py", "nodump-tcp-bind-listen"}, kinds: []string{"forbidden-syscall"}, errno: "EPERM", match: bySyscall,
			setup: func(w *world) []string {
				w.sysname, w.needle = "prctl", "PR_SET_DUMPABLE"
				return listenUnbound(w)
			}},
		{name: "py-unix-connect-host-socket", prog: []string{"py", "unix-connect"}, kinds: []string{"connect"}, errno: "EACCES",
			setup: func(w *world) []string {
				w.victim = w.p("daemon.sock")
				unixListener(w, w.victim)
				return []string{w.victim}
			}},
		{name: "py-unix-connect-abstract", prog: []string{"py", "unix-connect"}, kinds: []string{"connect"}, errno: "EACCES",
			match: func(w *world, e event) bool {
				return e.Family == "unix" && e.Abstract && strings.Contains(e.Address+fmt.Sprint(e.Paths), w.needle)
			},
			setup: func(w *world) []string {
				name := fmt.Sprintf("tracecell-it-%d-%d", os.Getpid(), time.Now().UnixNano())
				unixListener(w, "@"+name)
				w.needle = name
				return []string{"@" + name}
			}},
		{name: "py-unix-bind-outside", prog: []string{"py", "unix-bind"}, kinds: []string{"bind", "create"}, errno: "EACCES",
			setup: func(w *world) []string { w.victim = w.p("bound.sock"); return []string{w.victim} }},

		// ---- forbidden system calls ----
		{name: "c-io-uring-setup", prog: []string{"c", "io_uring"}, kinds: []string{"forbidden-syscall"}, errno: "EPERM", match: bySyscall,
			skip: func(w *world) string {
				if r := ioUringProbe(); r != "ok" {
					return "io_uring unavailable bare (" + r + "): nothing to escape through"
				}
				return ""
			},
			setup: func(w *world) []string {
				w.sysname, w.needle = "io_uring_setup", "io_uring_setup("
				return []string{w.p("uring")}
			}},
		{name: "c-unshare-newuser", prog: []string{"c", "unshare"}, kinds: []string{"forbidden-syscall"}, errno: "EPERM", match: bySyscall,
			bareCannot: cannotWhen("EPERM", "EINVAL", "ENOSPC"),
			setup: func(w *world) []string {
				w.sysname, w.needle = "unshare", "unshare("
				return userns(w)
			}},
		{name: "c-raw-clone-newuser", prog: []string{"c", "clone-newuser"}, kinds: []string{"forbidden-syscall"}, errno: "EPERM", match: bySyscall,
			bareCannot: cannotWhen("EPERM", "EINVAL", "ENOSPC"),
			setup: func(w *world) []string {
				w.sysname, w.needle = "clone", "clone("
				return userns(w)
			}},
		{name: "c-mount-tmpfs", prog: []string{"c", "mount"}, kinds: []string{"forbidden-syscall"}, errno: "EPERM", match: bySyscall, skip: needRoot,
			setup: func(w *world) []string {
				w.sysname, w.needle = "mount", "mount("
				target := w.p("emptydir")
				w.t.Cleanup(func() {
					if mounted(target) {
						if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
							w.t.Errorf("unmount escaped mount %s: %v", target, err)
						}
					}
				})
				w.escaped = func(result) (bool, string) {
					return mounted(target), "mounted: " + strconv.FormatBool(mounted(target))
				}
				return []string{target}
			}},

		// ---- /dev/shm: create-only scratch ----
		// A name the tree created and gave up (or never made) is not its
		// own when a host process creates it afterwards.
		shmClaim("unlink"), shmClaim("rename"), shmClaim("fail"),
		{name: "py-dev-shm-delete-foreign", prog: []string{"py", "remove"}, kinds: []string{"delete"}, errno: "EACCES",
			skip: noDevShm,
			setup: func(w *world) []string {
				w.victim = fmt.Sprintf("/dev/shm/tracecell-it-%d-%d", os.Getpid(), time.Now().UnixNano())
				writeFile(w.t, w.victim, "not yours\n", 0o644)
				w.t.Cleanup(func() { os.Remove(w.victim) })
				w.escaped = func(result) (bool, string) {
					_, err := os.Stat(w.victim)
					return err != nil, fmt.Sprintf("stat after: %v", err)
				}
				return []string{w.victim}
			}},
	}
}

// sourceRouteCase: IP options or a routing header that send a datagram
// for 127.0.0.1 to the first hop they name (a packet to 192.0.2.1 left
// through eth0 in the red-team run). Nothing on this host sees it, so the
// ground truth is the kernel taking the options: setsockopt and getsockopt
// agreeing, or the sendmsg succeeding.
func sourceRouteCase(name, pyCase, sysname string, args ...string) escapeCase {
	return kernelTakesCase(name, pyCase, sysname, "source routing", "the kernel here takes no route to the first hop",
		func() []string { return args })
}

// interfaceCase: a datagram for 127.0.0.1 (::1) sent out of a network
// interface that is not loopback, chosen by a socket option or a pktinfo
// control message: it leaves through that interface onto its network (a
// red team's sniffer on the far end of a veth caught such packets, session
// 23). The ground truth, as for source routes, is the kernel taking it:
// the option set and the datagram sent.
func interfaceCase(name, pyCase, sysname string) escapeCase {
	c := kernelTakesCase(name, pyCase, sysname, "network interface", "the kernel here does not send out of the interface for this user",
		func() []string {
			ifc := outsideInterface()
			return []string{ifc.Name, strconv.Itoa(ifc.Index), "9"}
		})
	c.skip = func(w *world) string {
		if outsideInterface() == nil {
			return "no network interface other than loopback is up here"
		}
		return ""
	}
	return c
}

// kernelTakesCase is a --net loopback case whose escape nothing on this
// host can see: the ground truth is the program's call succeeding ("ok");
// a bare run that fails says the kernel here cannot (cannot, the result
// appended). needle is what the stderr notice must mention; args gives
// the program's arguments at setup.
func kernelTakesCase(name, pyCase, sysname, needle, cannot string, args func() []string) escapeCase {
	return escapeCase{name: name, prog: []string{"py", pyCase}, flags: []string{"--net", "loopback"},
		kinds: []string{"connect"}, errno: "EACCES", match: bySyscall,
		bareCannot: func(res string) string {
			if res != "ok" {
				return cannot + ": " + res
			}
			return ""
		},
		setup: func(w *world) []string {
			w.sysname, w.needle = sysname, needle
			w.escaped = func(r result) (bool, string) { return resultOf(r.stdout) == "ok", "result " + resultOf(r.stdout) }
			return args()
		}}
}

// outsideInterface returns the first interface that is up and not a
// loopback one, nil when there is none.
func outsideInterface() *net.Interface {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	for i := range ifs {
		if ifs[i].Flags&net.FlagUp != 0 && ifs[i].Flags&net.FlagLoopback == 0 {
			return &ifs[i]
		}
	}
	return nil
}

// listenUnbound: the outside connects to whatever port the program
// listens on (an unbound socket's listen binds every interface), through
// the loopback address, which an every-interface listener accepts too.
// The program's arguments: bind nothing, the port's file.
func listenUnbound(w *world) []string {
	portFile := w.s("port")
	got := make(chan string, 1)
	stop := make(chan struct{})
	w.t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			b, err := os.ReadFile(portFile)
			if err != nil {
				continue
			}
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+strings.TrimSpace(string(b)), time.Second)
			if err != nil {
				got <- "no connection: " + err.Error()
				return
			}
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			buf := make([]byte, 64)
			n, _ := c.Read(buf)
			c.Close()
			got <- fmt.Sprintf("connected, read %q", buf[:n])
			return
		}
	}()
	w.escaped = func(result) (bool, string) {
		select {
		case s := <-got:
			return strings.HasPrefix(s, "connected"), s
		case <-time.After(300 * time.Millisecond):
			return false, "the program never listened"
		}
	}
	return []string{"-", "0", portFile}
}

// membershipCase: a multicast join on the first outside interface under
// --net loopback (or, named "-net-deny", the default --net deny). The
// kernel sends a membership report naming the group out of that interface:
// the red team read a secret from the groups' bytes on eth0 (session 25).
// The ground truth is the host's own table of joined groups
// (/proc/net/igmp, /proc/net/igmp6), polled by the test while the tree
// holds the membership: the group must never appear under tracecell.
func membershipCase(name, pyCase string) escapeCase {
	v6 := pyCase == "mcast-join6"
	c := escapeCase{name: name, prog: []string{"py", pyCase}, flags: []string{"--net", "loopback"},
		kinds: []string{"connect"}, errno: "EACCES", match: bySyscall,
		skip: func(w *world) string {
			ifc := outsideInterface()
			if ifc == nil || ifc.Flags&net.FlagMulticast == 0 {
				return "no multicast network interface other than loopback is up here"
			}
			table := "/proc/net/igmp"
			if v6 {
				table = "/proc/net/igmp6"
			}
			if _, err := os.Stat(table); err != nil {
				return "no " + table + " here"
			}
			return ""
		},
		bareCannot: func(res string) string {
			if res != "ok" {
				return "the kernel here does not join the group for this user: " + res
			}
			return ""
		},
		setup: func(w *world) []string {
			w.sysname, w.needle = "setsockopt", "multicast"
			ifc := outsideInterface()
			var b [3]byte
			rand.Read(b[:])
			group := fmt.Sprintf("239.%d.%d.%d", b[0], b[1], b[2])
			// /proc/net/igmp prints a group as its 32-bit value in host
			// order (little-endian here): 239.1.2.3 is 030201EF.
			want := fmt.Sprintf("%02X%02X%02X%02X", b[2], b[1], b[0], 239)
			table := "/proc/net/igmp"
			if v6 {
				// ff0e::74:63XX:YYZZ, printed as its 16 bytes in hex.
				ip := net.IP{0xff, 0x0e, 10: 0, 11: 0x74, 12: 0x63, 13: b[0], 14: b[1], 15: b[2]}
				group, want = ip.String(), hex.EncodeToString(ip)
				table = "/proc/net/igmp6"
			}
			var seen atomic.Bool
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					if b, err := os.ReadFile(table); err == nil && strings.Contains(strings.ToLower(string(b)), strings.ToLower(want)) {
						seen.Store(true)
					}
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			var once sync.Once
			finish := func() { once.Do(func() { close(stop); <-done }) }
			w.t.Cleanup(finish)
			w.escaped = func(r result) (bool, string) {
				finish()
				return seen.Load(), fmt.Sprintf("group %s (%s) in %s: %v", group, want, table, seen.Load())
			}
			return []string{strconv.Itoa(ifc.Index), group, "0.3"}
		}}
	if strings.HasSuffix(name, "-net-deny") {
		c.flags = nil
	}
	return c
}

// socketFamilyCase: socket(family, type, protocol) of a kind whose
// traffic no trapped call covers (SCTP connects through setsockopt and
// getsockopt; raw sockets take the destination from the packet; other
// families have their own ways) is denied unless --net allow. The ground
// truth is the kernel making the socket in the bare run.
func socketFamilyCase(name, family, typ, proto string) escapeCase {
	return kernelTakesCase(name, "socket-family", "socket", "create a socket", "the kernel here makes no such socket for this user",
		func() []string { return []string{family, typ, proto} })
}

// noDevShm skips a /dev/shm case where there is none.
func noDevShm(w *world) string {
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		return "no /dev/shm"
	}
	return ""
}

// shmClaim: the tree claims a /dev/shm name (mode: created then unlinked,
// renamed away, or a create it made fail), a host process then creates the
// file, and the tree tries to overwrite it.
func shmClaim(mode string) escapeCase {
	return escapeCase{name: "py-dev-shm-claim-" + mode, prog: []string{"py", "shm-claim"}, kinds: []string{"write"}, errno: "EACCES",
		skip: noDevShm,
		setup: func(w *world) []string {
			w.victim = fmt.Sprintf("/dev/shm/tracecell-it-%d-%d", os.Getpid(), time.Now().UnixNano())
			w.t.Cleanup(func() { os.Remove(w.victim) })
			ready := w.s("ready")
			stop := make(chan struct{})
			w.t.Cleanup(func() { close(stop) })
			go func() { // the host process
				for {
					select {
					case <-stop:
						return
					case <-time.After(10 * time.Millisecond):
					}
					if _, err := os.Stat(ready); err == nil {
						// Whole, at once: the tree writes as soon as the name exists.
						os.WriteFile(w.victim+".tmp", []byte("hostdata\n"), 0o644)
						os.Rename(w.victim+".tmp", w.victim)
						return
					}
				}
			}()
			w.escaped = func(result) (bool, string) {
				b, err := os.ReadFile(w.victim)
				return err == nil && string(b) != "hostdata\n", fmt.Sprintf("host file: %q %v", b, err)
			}
			return []string{w.victim, ready, mode}
		}}
}

// openPty makes a pty in the test process: its master (unlocked), the
// slave's path, and the slave opened too, so that it never hangs up on the
// master while a run opens and closes it.
func openPty(t *testing.T) (master *os.File, name string, slave *os.File) {
	t.Helper()
	master, name = ptytest.Open(t)
	slave, err := os.OpenFile(name, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, name, slave
}

// ptyOutput reads what has arrived at master m, waiting a little for more.
func ptyOutput(m *os.File) string {
	got, err := ptytest.Output(m, 300*time.Millisecond)
	if err != nil {
		return "(cannot read the master: " + err.Error() + ")"
	}
	return got
}

// outsidePty makes a pty outside the tree standing for another session's
// terminal and returns its slave's path; escaped reads its master.
func outsidePty(w *world) string {
	m, name, _ := openPty(w.t)
	w.escaped = func(result) (bool, string) {
		got := ptyOutput(m)
		return strings.Contains(got, "ESCAPED"), fmt.Sprintf("%s shows %q", name, got)
	}
	return name
}

// leasesSkip skips the lease cases where the kernel has leases off.
func leasesSkip(w *world) string {
	if b, err := os.ReadFile("/proc/sys/fs/leases-enable"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return "leases are disabled on this machine (fs.leases-enable = 0)"
	}
	return ""
}

// watchLease polls /proc/locks from now until the returned ground truth is
// asked, for a LEASE on path's inode: "1: LEASE  ACTIVE  READ  4242
// 08:01:1234 0 EOF" (fs/locks.c, lock_get_status: device as %02x:%02x).
func watchLease(w *world, path string) func(result) (bool, string) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		w.t.Fatal(err)
	}
	id := fmt.Sprintf(" %02x:%02x:%d ", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	return watch(w, func() string {
		b, _ := os.ReadFile("/proc/locks")
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "LEASE") && strings.Contains(l+" ", id) {
				return "/proc/locks: " + strings.TrimSpace(l)
			}
		}
		return ""
	})
}

// watch runs look every 5 ms from now until the returned ground truth is
// asked (or the test ends), and reports the first thing it saw.
func watch(w *world, look func() string) func(result) (bool, string) {
	stop, done := make(chan struct{}), make(chan string, 1)
	go func() {
		seen := ""
		for seen == "" {
			seen = look()
			select {
			case <-stop:
				done <- seen
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		done <- seen
	}()
	var once sync.Once
	var seen string
	get := func() string {
		once.Do(func() { close(stop); seen = <-done })
		return seen
	}
	w.t.Cleanup(func() { get() })
	return func(result) (bool, string) {
		if l := get(); l != "" {
			return true, l
		}
		return false, ""
	}
}

// watchFds polls, from now until the returned ground truth is asked, the
// fds of every process whose command line holds marker, for a link that
// contains what (an anon inode's name such as "anon_inode:[userfaultfd]").
func watchFds(w *world, marker, what string) func(result) (bool, string) {
	return watch(w, func() string {
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			cl, err := os.ReadFile(p + "/cmdline")
			if err != nil || !strings.Contains(string(cl), marker) {
				continue
			}
			fds, _ := filepath.Glob(p + "/fd/*")
			for _, fd := range fds {
				if l, err := os.Readlink(fd); err == nil && strings.Contains(l, what) {
					return fd + " -> " + l
				}
			}
		}
		return ""
	})
}

// sleepGone makes escaped report whether the outside sleep was killed.
// kill(2) returns before the target has died, so give it a moment.
func sleepGone(w *world, cmd *exec.Cmd) {
	w.escaped = func(result) (bool, string) {
		deadline := time.Now().Add(time.Second)
		for {
			st := procState(cmd.Process.Pid)
			if st == "" || st == "Z" || time.Now().After(deadline) {
				return st == "" || st == "Z", "state " + strconv.Quote(st)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func tcpListener(w *world) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.t.Fatalf("listen tcp: %v", err)
	}
	w.t.Cleanup(func() { l.Close() })
	w.port = l.Addr().(*net.TCPAddr).Port
	w.needle = "port " + strconv.Itoa(w.port)
	w.escaped = func(result) (bool, string) { return accepted(l.(*net.TCPListener)) }
	return w.port
}

func udpListener(w *world) int {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		w.t.Fatalf("listen udp: %v", err)
	}
	w.t.Cleanup(func() { c.Close() })
	w.port = c.LocalAddr().(*net.UDPAddr).Port
	w.needle = "port " + strconv.Itoa(w.port)
	w.escaped = func(result) (bool, string) {
		// sendto to a local socket queues the datagram before it returns,
		// so it is there by now if it was sent at all.
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		buf := make([]byte, 64)
		n, _, err := c.ReadFrom(buf)
		if err != nil {
			return false, "no datagram: " + err.Error()
		}
		return true, fmt.Sprintf("datagram %q", buf[:n])
	}
	return w.port
}

func unixListener(w *world, addr string) {
	l, err := net.Listen("unix", addr)
	if err != nil {
		w.t.Fatalf("listen unix %s: %v", addr, err)
	}
	w.t.Cleanup(func() { l.Close() })
	w.escaped = func(result) (bool, string) { return accepted(l.(*net.UnixListener)) }
}

// accepted reports whether a connection is waiting: the kernel completes a
// local connect before connect(2) returns, so a connection made during the
// run is in the backlog now.
func accepted(l interface {
	SetDeadline(time.Time) error
	Accept() (net.Conn, error)
}) (bool, string) {
	l.SetDeadline(time.Now().Add(300 * time.Millisecond))
	c, err := l.Accept()
	if err != nil {
		return false, "no connection: " + err.Error()
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(time.Second))
	b, _ := io.ReadAll(c)
	return true, fmt.Sprintf("connection received %q", b)
}

// mounted reports whether dir is a mount point in our mount namespace.
func mounted(dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

func mustReal(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Skipf("%s: %v", p, err)
	}
	return r
}

func isAMD64() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	return strings.HasPrefix(string(u.Machine[:]), "x86_64")
}

// prepare builds the world of case c; it skips the test if the case cannot
// run on this machine.
func prepare(t *testing.T, c escapeCase) (*world, []string) {
	w := &world{t: t, sbx: realDir(t), host: realDir(t)}
	w.populate()
	if c.skip != nil {
		if why := c.skip(w); why != "" {
			t.Skip(why)
		}
	}
	args := c.setup(w)
	if w.needle == "" {
		w.needle = w.victim
	}
	return w, args
}

// groundTruth says whether the case escaped: the host directory changed,
// or the case's own check (process, listener, mount) says so.
func groundTruth(w *world, before map[string]entry, r result) (bool, []string) {
	d := diffSnap(before, snapshot(w.t, w.host))
	escaped := len(d) > 0
	if w.escaped != nil {
		e, why := w.escaped(r)
		if e {
			escaped = true
		}
		d = append(d, why)
	}
	return escaped, d
}

// TestEscapes runs every way out under tracecell and checks that the outside
// world is untouched and that the report and the notice name the target.
func TestEscapes(t *testing.T) {
	cases := escapeCases()
	if len(cases) < 45 {
		t.Fatalf("only %d escape cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w, args := prepare(t, c)
			before := snapshot(t, w.host)
			env := runEnv(t, w.sbx)
			r := runTraced(t, w.sbx, env, c.flags, c.argv(args)...)
			escaped, detail := groundTruth(w, before, r)
			if escaped {
				t.Errorf("ESCAPED: the outside world changed: %s\nstdout:\n%s", strings.Join(detail, "; "), r.stdout)
			}
			checkOutcome(t, w, c, r)
		})
	}
}

// checkOutcome checks the program's view, the exit status, the report and
// the notice of a traced escape attempt.
func checkOutcome(t *testing.T, w *world, c escapeCase, r result) {
	t.Helper()
	rep := r.report
	if c.killed {
		if r.status != 128+int(syscall.SIGSYS) && r.status != 128+int(syscall.SIGKILL) {
			t.Errorf("status %d, want the tree killed (%d SIGSYS or %d SIGKILL); result %q\nstderr:\n%s",
				r.status, 128+int(syscall.SIGSYS), 128+int(syscall.SIGKILL), resultOf(r.stdout), r.stderr)
		}
		if rep.Exit.Signal == "" || rep.Exit.Status != r.status {
			t.Errorf("report exit %+v, want a signal and status %d", rep.Exit, r.status)
		}
		return
	}
	want := c.out
	if want == "" {
		want = "^errno=" + c.errno + "$"
	}
	if res := resultOf(r.stdout); !regexp.MustCompile(want).MatchString(res) {
		t.Errorf("program saw %q, want %q\nstdout:\n%s\nstderr:\n%s", res, want, r.stdout, r.stderr)
	}
	if r.status != 0 || rep.Exit.Status != 0 {
		t.Errorf("status %d (report %+v), want 0: the program continues after a denial\nstderr:\n%s", r.status, rep.Exit, r.stderr)
	}
	if rep.Error != "" {
		t.Errorf("report error: %s", rep.Error)
	}
	match := c.match
	if match == nil {
		match = byPath
	}
	found := false
	for _, e := range rep.Denials {
		if e.Decision == "deny" && contains(c.kinds, e.Kind) && e.Errno == c.errno && match(w, e) && (c.rule == "" || e.Rule == c.rule) {
			found = true
			break
		}
	}
	if !found {
		t.Errorf("no denial with kind in %v, errno %s, rule %q naming %s in the report; denials:\n%s",
			c.kinds, c.errno, c.rule, w.describeTarget(), rep.denialList())
	}
	if rep.Counts.Denied < 1 {
		t.Errorf("counts.denied = %d, want >= 1", rep.Counts.Denied)
	}
	ok := false
	for _, l := range noticeLines(r.stderr) {
		if strings.HasPrefix(l, "tracecell: blocked ") && strings.Contains(l, w.needle) {
			ok = true
		}
	}
	if !ok {
		t.Errorf("no stderr notice mentioning %q; stderr:\n%s", w.needle, r.stderr)
	}
}

func (w *world) describeTarget() string {
	switch {
	case w.program != "":
		return "program " + w.program
	case w.victim != "":
		return "path " + w.victim
	case w.sysname != "":
		return "syscall " + w.sysname
	case w.port != 0:
		return "127.0.0.1 port " + strconv.Itoa(w.port)
	case w.pid != 0:
		return "pid " + strconv.Itoa(w.pid)
	}
	return w.needle
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestEscapesBare runs every case without tracecell and checks that it
// really escapes: this proves each program works and that each ground-truth
// check can fail.
func TestEscapesBare(t *testing.T) {
	for _, c := range escapeCases() {
		t.Run(c.name, func(t *testing.T) {
			if c.bareSkip != "" {
				t.Skip(c.bareSkip)
			}
			t.Parallel()
			w, args := prepare(t, c)
			before := snapshot(t, w.host)
			r := runBare(t, w.sbx, runEnv(t, w.sbx), c.argv(args)...)
			res := resultOf(r.stdout)
			escaped, detail := groundTruth(w, before, r)
			if escaped {
				return
			}
			if c.bareCannot != nil {
				if why := c.bareCannot(res); why != "" {
					t.Skip(why)
				}
			}
			t.Errorf("bare run did not escape (result %q, status %d): %s\nstdout:\n%s\nstderr:\n%s",
				res, r.status, strings.Join(detail, "; "), r.stdout, r.stderr)
		})
	}
}

// outsideShm makes a System V shared memory segment owned by the test (an
// outside process's memory), holding "INTACT"; the ground truth is its
// content after the run.
func outsideShm(w *world) int {
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
	if err != nil {
		w.t.Skipf("System V shared memory unavailable: %v", err)
	}
	mem, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		unix.SysvShmCtl(id, unix.IPC_RMID, nil)
		w.t.Fatalf("shmat: %v", err)
	}
	copy(mem, "INTACT\x00")
	w.t.Cleanup(func() {
		unix.SysvShmDetach(mem)
		unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	})
	w.escaped = func(result) (bool, string) {
		got := string(mem[:6])
		return got != "INTACT", "shared memory segment " + strconv.Itoa(id) + " now holds " + strconv.Quote(got)
	}
	return id
}

// mqExists reports whether the POSIX message queue /name exists.
func mqExists(name string) bool {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return false
	}
	fd, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(p)), uintptr(unix.O_RDONLY), 0, 0, 0, 0)
	if e != 0 {
		return false
	}
	unix.Close(int(fd))
	return true
}

func mqUnlink(name string) {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return
	}
	unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(p)), 0, 0)
}

// TestNestedRootRetargeted: a writable root inside another one (a
// SandboxAgent workspace inside a path grant, or under a policy file's
// write root) can be replaced by the tree with a symlink to any directory;
// the next run must refuse it rather than make that directory writable. A
// red team wrote into an outside directory this way.
func TestNestedRootRetargeted(t *testing.T) {
	base := realDir(t)
	outer, victim := filepath.Join(base, "outer"), filepath.Join(base, "victim")
	inner := filepath.Join(outer, "ws")
	mkdirs(t, inner, victim)
	tc := func(script string) result {
		return execute(t, base, os.Environ(), []string{tcBin, "run", "-q", "--write", inner, "--write", outer,
			"--allow-exec", "rm", "--allow-exec", "ln", "--", "/bin/sh", "-c", script})
	}
	if r := tc(`cd / && rm -rf ` + inner + ` && ln -s ` + victim + ` ` + inner); r.status != 0 {
		t.Fatalf("run 1 (replace the inner root with a link): status %d: %s", r.status, r.stderr)
	}
	if st, err := os.Lstat(inner); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the inner root is not a link after run 1: %v", err)
	}
	r := tc(`echo x > ` + filepath.Join(inner, "planted"))
	if r.status != 125 || !strings.Contains(r.stderr, inner+" is a symbolic link in a directory the tree can write") {
		t.Errorf("run 2: status %d, stderr %q; want 125 naming the link", r.status, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(victim, "planted")); err == nil {
		t.Errorf("run 2 wrote into %s through the link", victim)
	}
}

// TestNestedRootAlias: the same link reached through another name for the
// outer root (an operator's symlink outside every root) is refused too; a
// name-by-name check of the path as given missed it (red-team round 5).
func TestNestedRootAlias(t *testing.T) {
	base := realDir(t)
	real, victim, alias := filepath.Join(base, "real"), filepath.Join(base, "victim"), filepath.Join(base, "alias")
	mkdirs(t, real, victim)
	if err := os.Symlink("real", alias); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(real, "sub")); err != nil { // as a tree would leave it
		t.Fatal(err)
	}
	r := execute(t, base, os.Environ(), []string{tcBin, "run", "-q", "--write", real, "--write", filepath.Join(alias, "sub"),
		"--", "/bin/sh", "-c", "echo x > " + filepath.Join(victim, "owned")})
	if r.status != 125 || !strings.Contains(r.stderr, filepath.Join(real, "sub")+" is a symbolic link") {
		t.Errorf("status %d, stderr %q; want 125 naming the link", r.status, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(victim, "owned")); err == nil {
		t.Errorf("a write reached %s", victim)
	}
}

// TestNestedRootSwapRace: a tree that keeps swapping a nested root with a
// symlink while tracecell starts (a background command of the same
// session) must never get the link's target as a writable root: the root
// is resolved through descriptors. Against a check by path names the swap
// won within 30 tries (red-team round 5).
func TestNestedRootSwapRace(t *testing.T) {
	base := realDir(t)
	outer, victim := filepath.Join(base, "outer"), filepath.Join(base, "victim")
	ws, lnk := filepath.Join(outer, "ws"), filepath.Join(outer, "lnk")
	mkdirs(t, ws, victim)
	if err := os.Symlink(victim, lnk); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Renameat2(unix.AT_FDCWD, ws, unix.AT_FDCWD, lnk, unix.RENAME_EXCHANGE)
		}
	}()
	defer func() { close(stop); <-done }()
	for i := 0; i < 150; i++ {
		execute(t, base, os.Environ(), []string{tcBin, "run", "-q", "--write", outer, "--write", ws,
			"--", "/bin/sh", "-c", "echo x > " + filepath.Join(victim, "hit")})
		if _, err := os.Lstat(filepath.Join(victim, "hit")); err == nil {
			t.Fatalf("try %d: a write reached %s", i, victim)
		}
		if _, err := os.Lstat(filepath.Join(victim, ".tmp")); err == nil {
			t.Fatalf("try %d: tracecell made %s/.tmp", i, victim)
		}
	}
}

// TestScratchLinkInRoot: a --scratch directory given inside a writable
// root where the tree left a symlink is refused, not followed to the
// link's target (red-team round 6).
func TestScratchLinkInRoot(t *testing.T) {
	base := realDir(t)
	root, out := filepath.Join(base, "R"), filepath.Join(base, "out")
	mkdirs(t, root, out)
	if err := os.Symlink(out, filepath.Join(root, "s")); err != nil {
		t.Fatal(err)
	}
	r := execute(t, base, os.Environ(), []string{tcBin, "run", "-q", "--write", root, "--scratch", filepath.Join(root, "s"),
		"--", "/bin/sh", "-c", "echo x > " + filepath.Join(out, "x2")})
	if r.status != 125 || !strings.Contains(r.stderr, "--scratch "+filepath.Join(root, "s")) {
		t.Errorf("status %d, stderr %q; want 125 naming --scratch", r.status, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "x2")); err == nil {
		t.Errorf("a write reached %s", out)
	}
}
