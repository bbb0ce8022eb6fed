package tracer

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/decode"
	"github.com/tracecell/tracecell/internal/procfs"
)

// TestReadBase: the directory a relative path starts from is taken by the
// text of its /proc link only when that text names it in tracecell's mount
// namespace; a cwd or dirfd in another mount namespace (reached through
// /proc/<pid>/root of a process there) reads as a path of that namespace.
func TestReadBase(t *testing.T) {
	dir, err := os.MkdirTemp("", "readbase")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(dir+"/mnt", 0o755))
	must(os.Mkdir(dir+"/mnt/sub", 0o755))
	must(os.WriteFile(dir+"/file", nil, 0o644))
	open := func(p string, flags int) string {
		t.Helper()
		fd, err := unix.Open(p, flags|unix.O_CLOEXEC, 0)
		must(err)
		t.Cleanup(func() { unix.Close(fd) })
		return fmt.Sprintf("/proc/self/fd/%d", fd)
	}
	type tcase struct {
		name, link string
		want       string // the text; "" for an *errBase
		errno      syscall.Errno
	}
	cases := []tcase{
		{"own dir", open(dir+"/mnt/sub", unix.O_PATH), dir + "/mnt/sub", 0},
		{"own cwd", "/proc/self/cwd", mustGetwd(t), 0},
		{"file", open(dir+"/file", unix.O_RDONLY), "", syscall.ENOTDIR},
	}
	if v, ok := otherMountNS(t, dir+"/mnt"); ok {
		vroot := fmt.Sprintf("/proc/%d/root", v)
		cases = append(cases,
			tcase{"dir of another mount namespace", open(vroot+dir+"/mnt/sub", unix.O_PATH), "", 0},
			tcase{"root of another mount namespace", open(vroot, unix.O_PATH), "", 0},
			tcase{"cwd of a process in another mount namespace", fmt.Sprintf("/proc/%d/cwd", v), "", 0},
		)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := readBase(c.link)
			var be *decode.BaseError
			switch {
			case c.errno != 0:
				if !errors.Is(err, c.errno) {
					t.Fatalf("readBase(%s) = %q, %v; want %v", c.link, got, err, c.errno)
				}
			case c.want == "":
				if !errors.As(err, &be) {
					t.Fatalf("readBase(%s) = %q, %v; want an errBase", c.link, got, err)
				}
			case err != nil || got != c.want:
				t.Fatalf("readBase(%s) = %q, %v; want %q", c.link, got, err, c.want)
			}
		})
	}
}

func mustGetwd(t *testing.T) string {
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// otherMountNS starts a process in a mount namespace of its own (unshare
// -Urm) that mounts a tmpfs over dir and makes dir/sub there, with dir as its
// cwd; false when this system does not let it.
func otherMountNS(t *testing.T, dir string) (int, bool) {
	t.Helper()
	script := fmt.Sprintf(`mount -t tmpfs none %[1]q && cd %[1]q && mkdir sub && echo > ready && exec sleep 1000`, dir)
	cmd := exec.Command("unshare", "-Urm", "sh", "-c", script)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Logf("skipping the other-namespace cases: unshare -Urm: %v", err)
		return 0, false
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/root%s/ready", pid, dir)); err == nil {
			return pid, true
		}
		if !procfs.Runs(pid) {
			break
		}
	}
	t.Logf("skipping the other-namespace cases: no process in a mount namespace of its own (user namespaces disabled?): %s", out.String())
	return 0, false
}

// BenchmarkReadBase prices reading a dirfd's directory, which every *at call
// with a real dirfd pays (a cwd is remembered while the walk cache is used).
func BenchmarkReadBase(b *testing.B) {
	dir, err := os.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer dir.Close()
	link := fmt.Sprintf("/proc/self/fd/%d", dir.Fd())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readBase(link); err != nil {
			b.Fatal(err)
		}
	}
}

// TestExeUnverified: the exec check decides on /proc/<pid>/exe's text only
// when it names the loaded file in tracecell's mount namespace.
func TestExeUnverified(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(dir+"/mnt", 0o755); err != nil {
		t.Fatal(err)
	}
	type tcase struct {
		name, link string
		verified   bool
	}
	cases := []tcase{{"own", "/proc/self/exe", true}}
	if v, ok := otherMountNS(t, dir+"/mnt"); ok {
		// sleep(1), loaded through the other namespace's copy of "/",
		// once the shell has exec'd it. A busybox system runs sleep as an
		// applet of the binary loaded before the namespace was made: no
		// such case there.
		link := fmt.Sprintf("/proc/%d/exe", v)
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if exe, _ := os.Readlink(link); strings.HasSuffix(exe, "/sleep") {
				cases = append(cases, tcase{"in another mount namespace", link, false})
				break
			}
			if time.Now().After(deadline) {
				t.Logf("skipping the other-namespace case: %s is not sleep(1) (a busybox applet?)", link)
				break
			}
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exe, err := os.Readlink(c.link)
			if err != nil {
				t.Fatal(err)
			}
			why := exeUnverified(c.link, exe)
			if (why == "") != c.verified {
				t.Fatalf("exeUnverified(%s, %q) = %q; want verified %v", c.link, exe, why, c.verified)
			}
		})
	}
}
