package pathres

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// tree builds the test file tree under a fresh temp dir and returns its
// resolved path.
func tree(t *testing.T) string {
	t.Helper()
	root := realTempDir(t)
	must := func(err error) { t.Helper(); mustOK(t, err) }
	dir := func(p string) { must(os.MkdirAll(filepath.Join(root, p), 0o755)) }
	file := func(p string) { must(os.WriteFile(filepath.Join(root, p), []byte("x"), 0o644)) }
	link := func(p, target string) { must(os.Symlink(target, filepath.Join(root, p))) }

	dir("d/sub")
	file("d/f")
	file("d/sub/g")
	file("f")
	file("bad\xff") // invalid UTF-8 is a fine file name
	link("abs", root+"/d")
	link("rel", "d")
	link("relf", "d/f")
	link("chain1", "chain2")
	link("chain2", "chain3")
	link("chain3", root+"/d")
	link("loop1", "loop2")
	link("loop2", "loop1")
	link("selfloop", "selfloop")
	link("dangling", "missing")
	link("dangling_abs", root+"/nodir/x")
	link("dangling_chain", "dangling")
	link("d/up", "..")
	link("d/sub/uplink", "../../f")
	link("linkdir", "d/sub")
	link("tofile", "f")
	link("slashy", "d/")
	link("slashyf", "f/")
	link("toroot", "/")
	link("dotdot_abs", root+"/d/sub/..")
	// x0 → x1 → … → x39 → x40 (a file): 40 expansions, the kernel's limit.
	for i := 0; i < 40; i++ {
		link("x"+strconv.Itoa(i), "x"+strconv.Itoa(i+1))
	}
	file("x40")
	link("y", "x0") // 41 expansions
	return root
}

// realTempDir is a fresh temp dir by its resolved path.
func realTempDir(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	mustOK(t, err)
	return root
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type tcase struct {
	name   string
	task   *Task // nil: the test process
	base   string
	p      string
	follow bool
	want   Result
	mode   fs.FileMode // when non-zero: want.Mode&fs.ModeType must equal mode&fs.ModeType
	errno  syscall.Errno
}

func gettid() int { return unix.Gettid() }

func TestResolve(t *testing.T) {
	// /proc/thread-self must name this very thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	root := tree(t)
	pid, tid := os.Getpid(), gettid()
	self := Task{Tgid: pid, Tid: tid}

	// Open files whose /proc magic links the cases resolve.
	f, err := os.Open(filepath.Join(root, "d/f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dfd, err := os.Open(filepath.Join(root, "d"))
	if err != nil {
		t.Fatal(err)
	}
	defer dfd.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	del, err := os.Create(filepath.Join(root, "gone"))
	if err != nil {
		t.Fatal(err)
	}
	defer del.Close()
	if err := os.Remove(del.Name()); err != nil {
		t.Fatal(err)
	}
	// spoofed: an unlinked file whose link text "<root>/spoofed (deleted)"
	// is also the name of another, live file (F8). live: a live file whose
	// own name ends in " (deleted)".
	spoofed, err := os.Create(filepath.Join(root, "spoofed"))
	if err != nil {
		t.Fatal(err)
	}
	defer spoofed.Close()
	if err := os.Remove(spoofed.Name()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "spoofed (deleted)"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	live, err := os.Create(filepath.Join(root, "live (deleted)"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sp[0])
	defer unix.Close(sp[1])
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	// An O_PATH fd of a symlink: the kernel lands on the symlink itself
	// (nd_jump_link) and does not follow it again.
	lfd, err := unix.Open(filepath.Join(root, "abs"), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(lfd)
	pipeName, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", pr.Fd()))
	sockName, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", sp[0]))
	netns, _ := os.Readlink("/proc/self/ns/net")
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cwd, _ = filepath.EvalSymlinks(cwd)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ = filepath.EvalSymlinks(exe)

	fdp := func(fd uintptr) string { return fmt.Sprintf("/proc/self/fd/%d", fd) }
	procfd := func(fd uintptr) string { return fmt.Sprintf("/proc/%d/fd/%d", pid, fd) }
	ok := func(p string, dir bool) Result { return Result{Path: p, Exists: true, IsDir: dir} }
	missing := func(p string, e syscall.Errno) Result { return Result{Path: p, WalkErr: e} }
	r := func(p string) string { return root + p }

	cases := []tcase{
		// Plain walks.
		{name: "file", base: root, p: "f", want: ok(r("/f"), false)},
		{name: "dir", base: root, p: "d", want: ok(r("/d"), true), mode: fs.ModeDir},
		{name: "nested file", base: root, p: "d/sub/g", want: ok(r("/d/sub/g"), false)},
		{name: "dot", base: root, p: ".", want: ok(root, true)},
		{name: "dot slash dot", base: root, p: "./././d/./f", want: ok(r("/d/f"), false)},
		{name: "double slashes", base: root, p: "d//sub///g", want: ok(r("/d/sub/g"), false)},
		{name: "absolute ignores base", base: "/nonexistent", p: root + "/d/f", want: ok(r("/d/f"), false)},
		{name: "absolute with double slash", base: "/", p: "//" + root[1:] + "//f", want: ok(r("/f"), false)},
		{name: "root", base: root, p: "/", want: ok("/", true)},
		{name: "root dotdot", base: root, p: "/..", want: ok("/", true)},
		{name: "dotdot past root", base: "/", p: "../../../" + root[1:] + "/f", want: ok(r("/f"), false)},
		{name: "dotdot", base: root, p: "d/../f", want: ok(r("/f"), false)},
		{name: "dotdot from base", base: root + "/d/sub", p: "../f", want: ok(r("/d/f"), false)},
		{name: "trailing slash on dir", base: root, p: "d/", want: ok(r("/d"), true)},
		{name: "trailing slash dot on dir", base: root, p: "d/./", want: ok(r("/d"), true)},
		{name: "invalid utf8 name", base: root, p: "bad\xff", want: ok(r("/bad\xff"), false)},

		// Symlinks.
		{name: "abs link followed", base: root, p: "abs", follow: true, want: ok(r("/d"), true)},
		{name: "abs link not followed", base: root, p: "abs", want: ok(r("/abs"), false), mode: fs.ModeSymlink},
		{name: "abs link intermediate", base: root, p: "abs/f", want: ok(r("/d/f"), false)},
		{name: "rel link followed", base: root, p: "rel", follow: true, want: ok(r("/d"), true)},
		{name: "rel link intermediate", base: root, p: "rel/sub/g", want: ok(r("/d/sub/g"), false)},
		{name: "link to file followed", base: root, p: "relf", follow: true, want: ok(r("/d/f"), false)},
		{name: "link to file not followed", base: root, p: "relf", want: ok(r("/relf"), false), mode: fs.ModeSymlink},
		{name: "chain followed", base: root, p: "chain1", follow: true, want: ok(r("/d"), true)},
		{name: "chain intermediate", base: root, p: "chain1/sub/g", want: ok(r("/d/sub/g"), false)},
		{name: "chain then dotdot", base: root, p: "chain1/..", want: ok(root, true)},
		{name: "link to dir then dotdot is not lexical", base: root, p: "linkdir/../f", want: ok(r("/d/f"), false)},
		{name: "link to dir then dotdot dir", base: root, p: "linkdir/..", want: ok(r("/d"), true)},
		{name: "link dotdot body", base: root, p: "d/up/f", want: ok(r("/f"), false)},
		{name: "link dotdot body then dotdot", base: root, p: "d/up/..", want: ok(filepath.Dir(root), true)},
		{name: "relative body from link dir", base: root, p: "d/sub/uplink", follow: true, want: ok(r("/f"), false)},
		{name: "relative body not followed", base: root, p: "d/sub/uplink", want: ok(r("/d/sub/uplink"), false), mode: fs.ModeSymlink},
		{name: "abs body with dotdot", base: root, p: "dotdot_abs/f", want: ok(r("/d/f"), false)},
		{name: "link to root", base: root, p: "toroot/" + root[1:] + "/f", want: ok(r("/f"), false)},
		{name: "link to root then dotdot", base: root, p: "toroot/..", want: ok("/", true)},
		{name: "trailing slash forces follow", base: root, p: "abs/", want: ok(r("/d"), true)},
		{name: "trailing slash on link to file", base: root, p: "tofile/", want: Result{Path: r("/f"), Exists: true, WalkErr: syscall.ENOTDIR}},
		{name: "body with trailing slash", base: root, p: "slashy", follow: true, want: ok(r("/d"), true)},
		{name: "body with trailing slash to file", base: root, p: "slashyf", follow: true, want: Result{Path: r("/f"), Exists: true, WalkErr: syscall.ENOTDIR}},
		{name: "link dot follows", base: root, p: "abs/.", want: ok(r("/d"), true)},
		{name: "40 links is the limit", base: root, p: "x0", follow: true, want: ok(r("/x40"), false)},
		{name: "41 links is a loop", base: root, p: "y", follow: true, errno: syscall.ELOOP},
		{name: "41 links not followed at the end", base: root, p: "y", want: ok(r("/y"), false), mode: fs.ModeSymlink},
		{name: "loop followed", base: root, p: "loop1", follow: true, errno: syscall.ELOOP},
		{name: "loop not followed", base: root, p: "loop1", want: ok(r("/loop1"), false), mode: fs.ModeSymlink},
		{name: "loop intermediate", base: root, p: "loop1/x", errno: syscall.ELOOP},
		{name: "self loop with trailing slash", base: root, p: "selfloop/", errno: syscall.ELOOP},

		// Missing components.
		{name: "missing last", base: root, p: "new", want: missing(r("/new"), 0)},
		{name: "missing last with trailing slash", base: root, p: "newdir/", want: missing(r("/newdir"), 0)},
		{name: "missing intermediate", base: root, p: "nodir/a/b", want: missing(r("/nodir/a/b"), syscall.ENOENT)},
		{name: "missing then dotdot cleaned", base: root, p: "nodir/../../x", want: missing(filepath.Dir(root)+"/x", syscall.ENOENT)},
		{name: "missing then dot", base: root, p: "nodir/.", want: missing(r("/nodir"), syscall.ENOENT)},
		{name: "missing then dotdot to existing", base: root, p: "d/nodir/..", want: Result{Path: r("/d"), Exists: true, IsDir: true, WalkErr: syscall.ENOENT}},
		{name: "missing then dotdot to existing file", base: root, p: "d/nodir/../f", want: Result{Path: r("/d/f"), Exists: true, WalkErr: syscall.ENOENT}},
		{name: "dangling not followed", base: root, p: "dangling", want: ok(r("/dangling"), false), mode: fs.ModeSymlink},
		{name: "dangling followed creates target", base: root, p: "dangling", follow: true, want: missing(r("/missing"), 0)},
		{name: "dangling trailing slash", base: root, p: "dangling/", want: missing(r("/missing"), 0)},
		{name: "dangling chain", base: root, p: "dangling_chain", follow: true, want: missing(r("/missing"), 0)},
		{name: "dangling absolute with missing dir", base: root, p: "dangling_abs", follow: true, want: missing(r("/nodir/x"), syscall.ENOENT)},
		{name: "dangling intermediate", base: root, p: "dangling/x", want: missing(r("/missing/x"), syscall.ENOENT)},
		{name: "file as directory", base: root, p: "f/x", want: Result{Path: r("/f/x"), WalkErr: syscall.ENOTDIR}},
		{name: "file then dotdot", base: root, p: "f/..", want: Result{Path: root, Exists: true, IsDir: true, WalkErr: syscall.ENOTDIR}},
		{name: "file then dot", base: root, p: "f/.", want: Result{Path: r("/f"), Exists: true, WalkErr: syscall.ENOTDIR}},
		{name: "file then name then dotdot", base: root, p: "f/x/..", want: Result{Path: r("/f"), Exists: true, WalkErr: syscall.ENOTDIR}},
		{name: "file with trailing slash", base: root, p: "f/", want: Result{Path: r("/f"), Exists: true, WalkErr: syscall.ENOTDIR}},
		{name: "deleted base", base: root + "/old (deleted)", p: "x", want: missing(r("/old (deleted)/x"), 0)},
		{name: "base is a file", base: root + "/f", p: "x", want: Result{Path: r("/f/x"), WalkErr: syscall.ENOTDIR}},
		{name: "base is a file, dotdot", base: root + "/f", p: "x/../..", want: Result{Path: root, Exists: true, IsDir: true, WalkErr: syscall.ENOTDIR}},

		// Errors.
		{name: "empty path", base: root, p: "", errno: syscall.ENOENT},
		{name: "path of PATH_MAX bytes", base: root, p: strings.Repeat("/", PathMax), errno: syscall.ENAMETOOLONG},
		{name: "path of PATH_MAX-1 bytes", base: root, p: strings.Repeat("/", PathMax-1), want: ok("/", true)},
		{name: "component over NAME_MAX", base: root, p: strings.Repeat("a", 256), errno: syscall.ENAMETOOLONG},
		{name: "base not a path", base: "pipe:[12]", p: "x", errno: syscall.ENOTDIR},
		{name: "base not a path, absolute p", base: "pipe:[12]", p: root + "/f", want: ok(r("/f"), false)},
		{name: "proc self without pid", task: &Task{}, base: "/", p: "/proc/self/fd/0", errno: syscall.EINVAL},

		// /proc.
		{name: "proc self followed", base: "/", p: "/proc/self", follow: true, want: ok(fmt.Sprintf("/proc/%d", pid), true)},
		{name: "proc self not followed", base: "/", p: "/proc/self", want: ok("/proc/self", false), mode: fs.ModeSymlink},
		{name: "proc self trailing slash", base: "/", p: "/proc/self/", want: ok(fmt.Sprintf("/proc/%d", pid), true)},
		{name: "proc self relative from /proc", base: "/proc", p: "self/status", want: ok(fmt.Sprintf("/proc/%d/status", pid), false)},
		{name: "proc self via dotdot", base: "/proc/1", p: "../self/status", want: ok(fmt.Sprintf("/proc/%d/status", pid), false)},
		{name: "proc thread-self", base: "/", p: "/proc/thread-self", follow: true, want: ok(fmt.Sprintf("/proc/%d/task/%d", pid, tid), true)},
		{name: "proc thread-self status", base: "/", p: "/proc/thread-self/status", want: ok(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid), false)},
		{name: "proc net is self/net", base: "/", p: "/proc/net", follow: true, want: ok(fmt.Sprintf("/proc/%d/net", pid), true)},
		{name: "fd of file", base: "/", p: fdp(f.Fd()), follow: true, want: ok(r("/d/f"), false)},
		{name: "fd of file not followed", base: "/", p: fdp(f.Fd()), want: ok(procfd(f.Fd()), false), mode: fs.ModeSymlink},
		{name: "fd of file with trailing slash", base: "/", p: fdp(f.Fd()) + "/", want: Result{Path: r("/d/f"), Exists: true, WalkErr: syscall.ENOTDIR}},
		{name: "thread-self fd", base: "/", p: fmt.Sprintf("/proc/thread-self/fd/%d", f.Fd()), follow: true, want: ok(r("/d/f"), false)},
		{name: "task fd", base: "/", p: fmt.Sprintf("/proc/self/task/%d/fd/%d", tid, f.Fd()), follow: true, want: ok(r("/d/f"), false)},
		{name: "dev fd", base: "/", p: fmt.Sprintf("/dev/fd/%d", f.Fd()), follow: true, want: ok(r("/d/f"), false)},
		{name: "fd of dir then path", base: "/", p: fdp(dfd.Fd()) + "/sub/g", want: ok(r("/d/sub/g"), false)},
		{name: "fd of dir then dotdot", base: "/", p: fdp(dfd.Fd()) + "/..", want: ok(root, true)},
		{name: "fd of dir then missing", base: "/", p: fdp(dfd.Fd()) + "/new", want: missing(r("/d/new"), 0)},
		{name: "fd of symlink is not followed again", base: "/", p: fdp(uintptr(lfd)), follow: true, want: ok(r("/abs"), false), mode: fs.ModeSymlink},
		{name: "fd of symlink then name", base: "/", p: fdp(uintptr(lfd)) + "/f", want: Result{Path: r("/abs/f"), WalkErr: syscall.ENOTDIR}},
		{name: "fd of symlink with trailing slash", base: "/", p: fdp(uintptr(lfd)) + "/", want: Result{Path: r("/abs"), Exists: true, WalkErr: syscall.ENOTDIR}},
		{name: "fd of pipe", base: "/", p: fdp(pr.Fd()), follow: true, want: Result{Path: procfd(pr.Fd()), Exists: true, Special: pipeName, ProcPid: pid, Link: procfd(pr.Fd())}},
		{name: "fd of pipe write end", base: "/", p: fmt.Sprintf("/proc/%d/fd/%d", pid, pw.Fd()), follow: true, want: Result{Path: procfd(pw.Fd()), Exists: true, Special: pipeName, ProcPid: pid, Link: procfd(pw.Fd())}},
		{name: "fd of pipe as dir", base: "/", p: fdp(pr.Fd()) + "/x", want: Result{Path: procfd(pr.Fd()) + "/x", WalkErr: syscall.ENOTDIR}},
		{name: "fd of socket", base: "/", p: fdp(uintptr(sp[0])), follow: true, want: Result{Path: procfd(uintptr(sp[0])), Exists: true, Special: sockName, ProcPid: pid, Link: procfd(uintptr(sp[0]))}},
		{name: "fd of eventfd", base: "/", p: fdp(uintptr(efd)), follow: true, want: Result{Path: procfd(uintptr(efd)), Exists: true, Special: "anon_inode:[eventfd]", ProcPid: pid, Link: procfd(uintptr(efd))}},
		{name: "net namespace", base: "/", p: "/proc/self/ns/net", follow: true, want: Result{Path: fmt.Sprintf("/proc/%d/ns/net", pid), Exists: true, Special: netns, ProcPid: pid, Link: fmt.Sprintf("/proc/%d/ns/net", pid)}},
		{name: "fd of deleted file", base: "/", p: fdp(del.Fd()), follow: true, want: Result{Path: r("/gone (deleted)"), ProcPid: pid, Deleted: true, Link: procfd(del.Fd())}},
		{name: "fd of deleted file, its text spoofed by a live file", base: "/", p: fdp(spoofed.Fd()), follow: true, want: Result{Path: r("/spoofed (deleted)"), ProcPid: pid, Deleted: true, Link: procfd(spoofed.Fd())}},
		{name: "fd of live file named like a deleted one", base: "/", p: fdp(live.Fd()), follow: true, want: ok(r("/live (deleted)"), false)},
		{name: "fd of deleted file as dir", base: "/", p: fdp(del.Fd()) + "/x", want: Result{Path: r("/gone (deleted)/x"), WalkErr: syscall.ENOENT}},
		{name: "fd of deleted file dotdot", base: "/", p: fdp(del.Fd()) + "/..", want: Result{Path: root, Exists: true, IsDir: true, WalkErr: syscall.ENOENT}},
		{name: "closed fd", base: "/", p: "/proc/self/fd/999999", follow: true, want: missing(procfd(999999), 0)},
		{name: "cwd", base: "/", p: "/proc/self/cwd", follow: true, want: ok(cwd, true)},
		{name: "cwd file", base: "/", p: "/proc/self/cwd/pathres.go", want: ok(cwd+"/pathres.go", false)},
		{name: "cwd not followed", base: "/", p: "/proc/self/cwd", want: ok(fmt.Sprintf("/proc/%d/cwd", pid), false), mode: fs.ModeSymlink},
		{name: "root magic link", base: "/", p: "/proc/self/root/" + root[1:] + "/f", want: ok(r("/f"), false)},
		{name: "exe", base: "/", p: "/proc/self/exe", follow: true, want: ok(exe, false)},
		{name: "proc file not a magic link", base: "/", p: "/proc/self/status", want: ok(fmt.Sprintf("/proc/%d/status", pid), false)},
	}

	// A permission-denied directory only stops a non-root user.
	if os.Geteuid() != 0 {
		if err := os.Mkdir(r("/noperm"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(r("/noperm/secret"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(r("/noperm"), 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(r("/noperm"), 0o755) })
		cases = append(cases,
			tcase{name: "eacces assumed existing", base: root, p: "noperm/secret", want: Result{Path: r("/noperm/secret"), Exists: true, WalkErr: syscall.EACCES}},
			tcase{name: "eacces deeper", base: root, p: "noperm/a/../b", want: Result{Path: r("/noperm/b"), Exists: true, WalkErr: syscall.EACCES}},
		)
	}

	// A child process's pipe is Special with the child's pid.
	child := exec.Command("sleep", "30")
	cin, err := child.StdinPipe()
	if err == nil && child.Start() == nil {
		defer func() { cin.Close(); child.Process.Kill(); child.Wait() }()
		cp := child.Process.Pid
		if name, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", cp)); err == nil {
			cases = append(cases, tcase{name: "other process pipe", base: "/", p: fmt.Sprintf("/proc/%d/fd/0", cp), follow: true,
				want: Result{Path: fmt.Sprintf("/proc/%d/fd/0", cp), Exists: true, Special: name, ProcPid: cp, Link: fmt.Sprintf("/proc/%d/fd/0", cp)}})
		}
	}

	// Every case also runs through a cache shared by all cases, twice:
	// once filling it and once using it. The cache must never change a
	// result.
	cache := NewDirCache(1 << 10)
	for _, c := range cases {
		for _, mode := range []string{"", "/cache-fill", "/cache-use"} {
			t.Run(c.name+mode, func(t *testing.T) { checkCase(t, c, self, mode, cache) })
		}
	}
	if cache.Len() == 0 {
		t.Error("the cache holds nothing after every case")
	}
	t.Logf("%d cases", len(cases))
}

func checkCase(t *testing.T, c tcase, self Task, mode string, cache *DirCache) {
	t.Helper()
	task := self
	if c.task != nil {
		task = *c.task
	}
	var got Result
	var err error
	if mode == "" {
		got, err = Resolve(task, c.base, []byte(c.p), c.follow)
	} else {
		got, err = ResolveCached(task, c.base, c.p, c.follow, cache)
	}
	if c.errno != 0 {
		if !errors.Is(err, c.errno) {
			t.Fatalf("Resolve(%q, %q) = %+v, %v; want error %v", c.base, c.p, got, err, c.errno)
		}
		return
	}
	if err != nil {
		t.Fatalf("Resolve(%q, %q): %v", c.base, c.p, err)
	}
	gotMode := got.Mode
	got.Mode = 0
	// The identity is the object's at Path (TestResultIdentity checks
	// the values); here only that it is there when the object is.
	if got.Exists && got.Special == "" && !got.Deleted && got.WalkErr == 0 {
		var st syscall.Stat_t
		if syscall.Lstat(got.Path, &st) == nil && (got.Dev != uint64(st.Dev) || got.Ino != uint64(st.Ino)) {
			t.Errorf("identity dev %d ino %d, lstat of %s: %d %d", got.Dev, got.Ino, got.Path, st.Dev, st.Ino)
		}
	}
	got.Dev, got.Ino = 0, 0
	// Every case that names /proc, or starts there, walks through it;
	// the tree's own links stay out of it (TestViaProc has the others).
	via := strings.HasPrefix(c.p, "/proc") || strings.HasPrefix(c.base, "/proc") || strings.HasPrefix(c.p, "/dev/fd/")
	if got.ViaProc != via {
		t.Errorf("ViaProc = %v, want %v", got.ViaProc, via)
	}
	got.ViaProc = false
	if got != c.want {
		t.Fatalf("Resolve(%q, %q, follow=%v)\n got %+v\nwant %+v", c.base, c.p, c.follow, got, c.want)
	}
	if c.mode != 0 && gotMode&fs.ModeType != c.mode&fs.ModeType {
		t.Errorf("mode type = %v, want %v", gotMode&fs.ModeType, c.mode&fs.ModeType)
	}
}

// TestResolveMatchesEvalSymlinks checks every existing path of the tree (and
// some dotted forms) against the standard library's walk, which also expands
// ".." only after the symlinks before it.
func TestResolveMatchesEvalSymlinks(t *testing.T) {
	root := tree(t)
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		paths = append(paths, rel, rel+"/.", rel+"/../f", "./"+rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range paths {
		if p == "y" || strings.HasPrefix(p, "y/") || p == "./y" {
			continue // 41 links: EvalSymlinks allows 255, the kernel 40
		}
		// Not filepath.Join: that would clean "link/.." lexically.
		want, werr := filepath.EvalSymlinks(root + "/" + p)
		if werr != nil {
			continue // loops, dangling links: covered above
		}
		n++
		t.Run(p, func(t *testing.T) {
			got, err := Resolve(Task{Tgid: os.Getpid()}, root, []byte(p), true)
			if err != nil {
				t.Fatalf("Resolve(%q): %v", p, err)
			}
			if got.WalkErr != 0 {
				// EvalSymlinks accepts "file/." and "file/.."; the kernel does not.
				if got.WalkErr != syscall.ENOTDIR {
					t.Fatalf("Resolve(%q) walk error %v", p, got.WalkErr)
				}
				return
			}
			if got.Path != want || !got.Exists {
				t.Fatalf("Resolve(%q) = %q (exists %v), EvalSymlinks = %q", p, got.Path, got.Exists, want)
			}
		})
	}
	if n < 50 {
		t.Fatalf("only %d paths compared", n)
	}
}

func TestResolveFd(t *testing.T) {
	root := tree(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self := Task{Tgid: os.Getpid(), Tid: gettid()}
	f, err := os.Open(filepath.Join(root, "rel", "f")) // through a symlink
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	closed, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	cfd := int(closed.Fd())
	closed.Close()

	cases := []struct {
		name    string
		fd      int
		path    string
		special bool
		errno   syscall.Errno
	}{
		{name: "file", fd: int(f.Fd()), path: root + "/d/f"},
		{name: "pipe", fd: int(pr.Fd()), path: fmt.Sprintf("/proc/%d/task/%d/fd/%d", self.Tgid, self.Tid, pr.Fd()), special: true},
		{name: "closed", fd: cfd, errno: syscall.EBADF},
		{name: "negative", fd: -100, errno: syscall.EBADF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ResolveFd(self, c.fd)
			if c.errno != 0 {
				if !errors.Is(err, c.errno) {
					t.Fatalf("ResolveFd(%d) = %+v, %v; want %v", c.fd, got, err, c.errno)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Path != c.path || (got.Special != "") != c.special || !got.Exists {
				t.Fatalf("ResolveFd(%d) = %+v, want path %q special %v", c.fd, got, c.path, c.special)
			}
			if c.special && !strings.HasPrefix(got.Special, "pipe:[") {
				t.Fatalf("special = %q, want pipe:[…]", got.Special)
			}
		})
	}
}

func TestMagicLink(t *testing.T) {
	cases := []struct {
		dir, name string
		pid       int
		ok        bool
	}{
		{"/proc/12", "cwd", 12, true},
		{"/proc/12", "root", 12, true},
		{"/proc/12", "exe", 12, true},
		{"/proc/12", "status", 12, false},
		{"/proc/12/fd", "3", 12, true},
		{"/proc/12/map_files", "400000-401000", 12, true},
		{"/proc/12/ns", "net", 12, true},
		{"/proc/12/task/13", "cwd", 12, true},
		{"/proc/12/task/13/fd", "0", 12, true},
		{"/proc/12/task", "cwd", 0, false},
		{"/proc/12/fdinfo", "3", 0, false},
		{"/proc/self/fd", "3", 0, false}, // replaced before it gets here
		{"/proc/+12/fd", "3", 0, false},
		{"/proc", "cwd", 0, false},
		{"/srv/proc/12/fd", "3", 0, false},
		{"/proc/12/fd/3", "x", 0, false},
	}
	for _, c := range cases {
		t.Run(c.dir+"/"+c.name, func(t *testing.T) {
			pid, ok := magicLink(c.dir, c.name)
			if ok != c.ok || (ok && pid != c.pid) {
				t.Fatalf("magicLink(%q, %q) = %d, %v; want %d, %v", c.dir, c.name, pid, ok, c.pid, c.ok)
			}
		})
	}
}

// TestStopPermission covers the EACCES branch directly: tests usually run as
// root, where search permission is never missing.
func TestStopPermission(t *testing.T) {
	cases := []struct {
		name, next, rest string
		want             Result
	}{
		{"last", "/noperm/secret", "", Result{Path: "/noperm/secret", Exists: true, WalkErr: syscall.EACCES}},
		{"deeper", "/noperm/a", "/b/../c", Result{Path: "/noperm/a/c", Exists: true, WalkErr: syscall.EACCES}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := walker{orig: c.next}
			got, err := w.stop(c.next, c.rest, &fs.PathError{Op: "lstat", Path: c.next, Err: syscall.EACCES})
			if err != nil || got != c.want {
				t.Fatalf("stop(%q, %q, EACCES) = %+v, %v; want %+v", c.next, c.rest, got, err, c.want)
			}
		})
	}
}

// TestViaProc: a walk that meets /proc anywhere, through a symlink, a
// relative base or "..", says so (a copied call must not rely on it:
// tracer.uncopyable); one that never does, does not.
func TestViaProc(t *testing.T) {
	root := tree(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self := Task{Tgid: os.Getpid(), Tid: gettid()}
	f, err := os.Open(filepath.Join(root, "d", "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := strconv.Itoa(int(f.Fd()))
	mustOK(t, os.Symlink("/proc/self/fd/"+fd, filepath.Join(root, "tofd")))
	mustOK(t, os.Symlink("/proc/self", filepath.Join(root, "toself")))
	mustOK(t, os.Symlink("/proc", filepath.Join(root, "toproc")))
	cases := []struct {
		base, p string
		follow  bool
		want    bool
	}{
		{"/", "/proc/self/fd/" + fd, true, true},
		{"/", "/proc/self/fd/" + fd, false, true},
		{"/", "/dev/fd/" + fd, true, true}, // /dev/fd -> /proc/self/fd
		{"/", root + "/tofd", true, true},
		{"/", root + "/tofd", false, false}, // the link itself, not followed
		{"/", root + "/toself/cwd/x", false, true},
		{"/", root + "/toproc", false, false},
		{"/", root + "/toproc/", false, true}, // a trailing slash follows
		{"/", root + "/../../../../../../../../proc/self/status", false, true},
		{"/proc/self", "status", false, true}, // a cwd in /proc
		{"/proc", "../tmp", false, true},
		{"/", "/proc", false, true},
		{"/", "/procfoo/x", false, false},
		{"/", root + "/d/sub/../f", false, false},
		{root, "rel/sub/uplink", true, false},
		{"/", "/", false, false},
	}
	for _, c := range cases {
		got, err := Resolve(self, c.base, []byte(c.p), c.follow)
		if err != nil {
			t.Errorf("Resolve(%q, %q): %v", c.base, c.p, err)
			continue
		}
		if got.ViaProc != c.want {
			t.Errorf("Resolve(%q, %q, follow=%v).ViaProc = %v, want %v (%+v)", c.base, c.p, c.follow, got.ViaProc, c.want, got)
		}
	}
}

func TestFdInfoPath(t *testing.T) {
	for _, c := range []struct {
		res, want string
		ok        bool
	}{
		{"/proc/42/fd/3", "/proc/42/fdinfo/3", true},
		{"/proc/42/task/43/fd/10", "/proc/42/task/43/fdinfo/10", true},
		{"/proc/42/ns/net", "", false},
		{"/proc/42/map_files/1000-2000", "", false},
		{"/proc/42/cwd", "", false},
		{"/proc/self/fd/3", "", false},
		{"/proc/42/fd", "", false},
		{"/proc/42/fd/3/x", "", false},
		{"/proc/42/task/x/fd/3", "", false},
		{"/dev/fd/3", "", false},
	} {
		t.Run(c.res, func(t *testing.T) {
			got, ok := FdInfoPath(c.res)
			if got != c.want || ok != c.ok {
				t.Errorf("FdInfoPath(%q) = %q, %v; want %q, %v", c.res, got, ok, c.want, c.ok)
			}
		})
	}
}

// TestFdFlags reads the access mode of both ends of a pipe of this process
// through the links a tree would reopen.
func TestFdFlags(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	pid, tid := os.Getpid(), unix.Gettid()
	for _, c := range []struct {
		name string
		link string
		acc  uint64
	}{
		{"read end", fmt.Sprintf("/proc/%d/fd/%d", pid, p[0]), unix.O_RDONLY},
		{"write end", fmt.Sprintf("/proc/%d/fd/%d", pid, p[1]), unix.O_WRONLY},
		{"write end through task", fmt.Sprintf("/proc/%d/task/%d/fd/%d", pid, tid, p[1]), unix.O_WRONLY},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := FdFlags(c.link)
			if err != nil {
				t.Fatal(err)
			}
			if f&unix.O_ACCMODE != c.acc || f&unix.O_NONBLOCK == 0 {
				t.Errorf("flags %#o, want access mode %#o with O_NONBLOCK", f, c.acc)
			}
		})
	}
	if _, err := FdFlags(fmt.Sprintf("/proc/%d/ns/net", pid)); err == nil {
		t.Error("FdFlags of an ns link: no error")
	}
	if _, err := ParseFdInfoFlags([]byte("pos:\t0\nmnt_id:\t15\n")); err == nil {
		t.Error("ParseFdInfoFlags without a flags: line: no error")
	}
}

// A result names its object's identity: the st_dev and st_ino of the file a
// path (through a symlink) and an fd of it resolve to.
func TestResultIdentity(t *testing.T) {
	root := tree(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self := Task{Tgid: os.Getpid(), Tid: gettid()}
	var want syscall.Stat_t
	if err := syscall.Stat(filepath.Join(root, "rel", "f"), &want); err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(self, root, []byte("rel/f"), true)
	if err != nil || got.Dev != uint64(want.Dev) || got.Ino != uint64(want.Ino) {
		t.Errorf("Resolve(rel/f) = dev %d ino %d (%v), want %d %d", got.Dev, got.Ino, err, want.Dev, want.Ino)
	}
	f, err := os.Open(filepath.Join(root, "rel", "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err = Resolve(self, "/", []byte(fmt.Sprintf("/proc/self/fd/%d", f.Fd())), true)
	if err != nil || got.Dev != uint64(want.Dev) || got.Ino != uint64(want.Ino) {
		t.Errorf("Resolve(/proc/self/fd/N) = dev %d ino %d (%v), want %d %d", got.Dev, got.Ino, err, want.Dev, want.Ino)
	}
}
