package pathres

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/internal/procfs"
)

// otherMountNS starts a process in a mount namespace of its own (unshare
// -Urm, as any user may where user namespaces are enabled) that mounts a
// tmpfs over dir, which must exist, creates dir/file and dir/sub, and sleeps
// with dir as its cwd. It returns the process's pid, or skips the test.
func otherMountNS(t *testing.T, dir string) int {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1)")
	}
	script := fmt.Sprintf(`mount -t tmpfs none %[1]q && cd %[1]q && echo victim > file && mkdir sub && echo victim > sub/g && echo > ready && exec sleep 1000`, dir)
	cmd := exec.Command("unshare", "-Urm", "sh", "-c", script)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Skipf("unshare -Urm: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	ready := fmt.Sprintf("/proc/%d/root%s/ready", pid, dir)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(ready); err == nil {
			return pid
		}
		if time.Now().After(deadline) || !procfs.Runs(pid) {
			t.Skipf("no process in a mount namespace of its own (unprivileged user namespaces disabled?): %s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOtherMountNamespace: the text of a magic link of an object in another
// mount namespace names a path there, not on tracecell's side; the walk must
// not take it for a path of tracecell's namespace (the red team's
// /proc/<pid>/root/dev/shm/... overwrite). Each case fails with a
// *LinkError rather than resolving to tracecell's own file of that name.
func TestOtherMountNamespace(t *testing.T) {
	root := realTempDir(t)
	mustOK(t, os.Mkdir(root+"/mnt", 0o755))
	// tracecell's side of the same names: a file and a directory that a
	// wrong walk would find and decide on.
	mustOK(t, os.WriteFile(root+"/mnt/file", []byte("host\n"), 0o644))
	mustOK(t, os.Mkdir(root+"/mnt/sub", 0o755))
	v := otherMountNS(t, root+"/mnt")
	self := Task{Tgid: os.Getpid()}
	vroot := fmt.Sprintf("/proc/%d/root", v)

	// Objects of the other namespace held by this process.
	sub, err := unix.Open(vroot+root+"/mnt/sub", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	mustOK(t, err)
	defer unix.Close(sub)
	vrootFd, err := unix.Open(vroot, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	mustOK(t, err)
	defer unix.Close(vrootFd)
	file, err := unix.Open(vroot+root+"/mnt/file", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	mustOK(t, err)
	defer unix.Close(file)
	mustOK(t, os.WriteFile(vroot+root+"/mnt/gone", nil, 0o644))
	gone, err := unix.Open(vroot+root+"/mnt/gone", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	mustOK(t, err)
	defer unix.Close(gone)
	mustOK(t, os.Remove(vroot+root+"/mnt/gone"))
	// The same name on tracecell's side exists: the deleted check must
	// not be fooled by it either.
	mustOK(t, os.WriteFile(root+"/mnt/gone", nil, 0o644))
	fd := func(n int) string { return "/proc/self/fd/" + strconv.Itoa(n) }

	for _, c := range []struct {
		name, base, p string
		follow        bool
	}{
		{"root then a path only the other namespace has", "/", vroot + root + "/mnt/file", true},
		{"root then a missing name", "/", vroot + root + "/mnt/new", false},
		{"root then a host path", "/", vroot + "/etc/hostname", false},
		{"root itself", "/", vroot, true},
		{"root with trailing slash", "/", vroot + "/", false},
		{"root relative from /proc/pid", fmt.Sprintf("/proc/%d", v), "root/tmp/x", false},
		{"cwd then a name", "/", fmt.Sprintf("/proc/%d/cwd/file", v), false},
		{"task cwd then a name", "/", fmt.Sprintf("/proc/%d/task/%d/cwd/new", v, v), false},
		{"own fd of a directory there, then a name", "/", fd(sub) + "/new", false},
		{"own fd of a directory there, then dotdot", "/", fd(sub) + "/../file", false},
		// The same inode as tracecell's "/", on the other namespace's mount.
		{"own fd of the root there, then a name", "/", fd(vrootFd) + "/dev/shm/x", false},
		{"own fd of a file there", "/", fd(file), true},
		{"own fd of a deleted file there", "/", fd(gone), true},
		{"fd of a directory there via /dev/fd", "/", "/dev/fd/" + strconv.Itoa(sub) + "/x", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() { noMntID = false }()
			for _, m := range []struct {
				cache   *DirCache
				noMntID bool
			}{
				{nil, false},
				{NewDirCache(64), false},
				// As on a kernel whose statx has no mount id
				// (before 5.8): the mount comes from fdinfo.
				{nil, true},
			} {
				noMntID = m.noMntID
				r, err := ResolveCached(self, c.base, c.p, c.follow, m.cache)
				var le *LinkError
				if !errors.As(err, &le) {
					t.Fatalf("Resolve(%q) (no mount ids: %v) = %+v, %v; want a *LinkError", c.p, m.noMntID, r, err)
				}
				var en syscall.Errno
				if errors.As(err, &en) {
					t.Fatalf("the error wraps errno %v: callers would fail the call silently", en)
				}
			}
		})
	}

	// ResolveFd goes through the same walk.
	t.Run("ResolveFd", func(t *testing.T) {
		for _, n := range []int{sub, file, gone} {
			var le *LinkError
			if r, err := ResolveFd(self, n); !errors.As(err, &le) {
				t.Errorf("ResolveFd(%d) = %+v, %v; want a *LinkError", n, r, err)
			}
		}
	})

	// CheckLink, as the tracer uses it for a cwd or dirfd.
	t.Run("CheckLink", func(t *testing.T) {
		defer func() { noMntID = false }()
		for _, noMntID = range []bool{false, true} {
			checkLinks(t, v, fd(sub), root)
		}
	})

	// The same walks within tracecell's namespace still resolve.
	t.Run("own namespace", func(t *testing.T) {
		defer func() { noMntID = false }()
		for _, noMntID = range []bool{false, true} {
			ownWalks(t, self, root)
		}
	})
	if b, err := os.ReadFile(root + "/mnt/file"); err != nil || string(b) != "host\n" {
		t.Errorf("host file: %q, %v", b, err)
	}
}

// checkLinks: CheckLink fails the links of the other namespace's objects
// (sub is a link of a directory there) and passes this namespace's own.
func checkLinks(t *testing.T, v int, sub, root string) {
	t.Helper()
	own, err := unix.Open(root+"/mnt/sub", unix.O_PATH|unix.O_CLOEXEC, 0)
	mustOK(t, err)
	defer unix.Close(own)
	for _, c := range []struct {
		link    string
		foreign bool
	}{
		{sub, true},
		{fmt.Sprintf("/proc/%d/cwd", v), true},
		{fmt.Sprintf("/proc/%d/root", v), true},
		{"/proc/self/fd/" + strconv.Itoa(own), false},
		{"/proc/self/cwd", false},
		{"/proc/self/root", false},
	} {
		text, err := os.Readlink(c.link)
		mustOK(t, err)
		obj, err := StatID(c.link, true)
		mustOK(t, err)
		_, err = CheckLink(c.link, text, obj)
		var le *LinkError
		if c.foreign != errors.As(err, &le) || !c.foreign && err != nil {
			t.Errorf("CheckLink(%s, %q) (no statx mount ids: %v) = %v; want a *LinkError: %v", c.link, text, noMntID, err, c.foreign)
		}
	}
}

// ownWalks: walks through magic links within tracecell's namespace resolve.
func ownWalks(t *testing.T, self Task, root string) {
	t.Helper()
	own, err := unix.Open(root+"/mnt/sub", unix.O_PATH|unix.O_CLOEXEC, 0)
	mustOK(t, err)
	defer unix.Close(own)
	fd := "/proc/self/fd/" + strconv.Itoa(own)
	for _, c := range []struct{ p, want string }{
		{"/proc/self/root" + root + "/mnt/file", root + "/mnt/file"},
		{fd + "/new", root + "/mnt/sub/new"},
		{fd + "/../file", root + "/mnt/file"},
	} {
		r, err := Resolve(self, "/", []byte(c.p), false)
		if err != nil || r.Path != c.want {
			t.Errorf("Resolve(%q) (no statx mount ids: %v) = %+v, %v; want %s", c.p, noMntID, r, err, c.want)
		}
	}
}

// TestStatIDMount: the mount id from fdinfo (kernels before 5.8) is the one
// statx reports, through magic links too.
func TestStatIDMount(t *testing.T) {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, "/", 0, unix.STATX_MNT_ID, &stx); err != nil || stx.Mask&unix.STATX_MNT_ID == 0 {
		t.Skip("statx reports no mount id on this kernel")
	}
	dir := realTempDir(t)
	mustOK(t, os.Symlink("/proc", dir+"/l"))
	for _, c := range []struct {
		p      string
		follow bool
	}{
		{"/", true}, {"/proc/self/root", true}, {"/proc/self/cwd", true}, {"/proc/self", false},
		{"/proc/self/status", false}, {dir, false}, {dir + "/l", false}, {dir + "/l", true}, {"/dev/null", true},
	} {
		t.Run(fmt.Sprintf("%s follow=%v", c.p, c.follow), func(t *testing.T) {
			a, err := StatID(c.p, c.follow)
			mustOK(t, err)
			m, err := fdinfoMountID(c.p, c.follow)
			mustOK(t, err)
			if a.Mnt == 0 || a.Mnt != m {
				t.Fatalf("statx mount %d, fdinfo mount %d", a.Mnt, m)
			}
		})
	}
}
