package integration

// Issue 16, finding 1: ioctls were checked against a deny-list, and btrfs
// commands on a read-only directory fd created subvolumes outside the
// sandbox, snapshotted a subvolume the tree had filled to an outside path,
// and made an outside subvolume read-only. The policy is now an
// allow-list (syscalls.IoctlAllowed); everything else stops and is decided.

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/internal/ptytest"
	"github.com/tracecell/tracecell/syscalls"
)

// ioctlProg is testdata/escapes/ioctl.c, compiled into the test's temp
// dir (or TRACECELL_IOCTL_BIN, already compiled, where the machine has no
// gcc).
func ioctlProg(t *testing.T) string {
	return cProgram(t, "TRACECELL_IOCTL_BIN", "escapes/ioctl.c")
}

// btrfsMount makes a 128 MiB btrfs image (mkfs.btrfs wants 109 MiB at
// least), loop-mounts it in a temp dir and returns the mount point. It
// skips the test where that cannot be: not root, no loop devices, no btrfs
// in the kernel or no btrfs-progs.
func btrfsMount(t *testing.T) string {
	t.Helper()
	if !isRoot {
		t.Skip("needs root: loop-mounting a btrfs image")
	}
	mkfs, err := exec.LookPath("mkfs.btrfs")
	if err != nil {
		// make test installs btrfs-progs (scripts/deps.sh); the arm64
		// guest of scripts/arm64-vm.sh has none.
		t.Skipf("no btrfs here: mkfs.btrfs is missing (scripts/deps.sh installs btrfs-progs): %v", err)
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		exec.Command("modprobe", "loop").Run()
		if _, err := os.Stat("/dev/loop-control"); err != nil {
			t.Skipf("no loop devices here (/dev/loop-control: %v, modprobe loop did not help)", err)
		}
	}
	d := realDir(t)
	img, mnt := filepath.Join(d, "btrfs.img"), filepath.Join(d, "mnt")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(128 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := exec.Command(mkfs, "-q", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.btrfs %s: %v\n%s", img, err, out)
	}
	mkdir(t, mnt)
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		fs, _ := os.ReadFile("/proc/filesystems")
		if !bytes.Contains(fs, []byte("btrfs")) {
			exec.Command("modprobe", "btrfs").Run()
			if out2, err2 := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err2 != nil {
				t.Skipf("this kernel cannot mount btrfs (%v: %s; after modprobe btrfs: %v: %s)", err, out, err2, out2)
			}
		} else {
			t.Fatalf("mount -o loop %s %s: %v\n%s", img, mnt, err, out)
		}
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", mnt, err, out)
		}
	})
	return mnt
}

func btrfs(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("btrfs", args...).CombinedOutput(); err != nil {
		t.Fatalf("btrfs %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// subvolFlags reads a subvolume's flags with BTRFS_IOC_SUBVOL_GETFLAGS
// from the test process, outside the traced tree.
func subvolFlags(t *testing.T, p string) uint64 {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var fl uint64
	const btrfsIocSubvolGetflags = 0x80089419 // _IOR(0x94, 25, __u64)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), btrfsIocSubvolGetflags, uintptr(unsafe.Pointer(&fl))); e != 0 {
		t.Fatalf("BTRFS_IOC_SUBVOL_GETFLAGS %s: %v", p, e)
	}
	return fl
}

// isSubvol: the root directory of a btrfs subvolume has inode 256
// (BTRFS_FIRST_FREE_OBJECTID).
func isSubvol(p string) bool {
	var st unix.Stat_t
	return unix.Lstat(p, &st) == nil && st.Ino == 256
}

func stepResults(stdout string) map[string][]string {
	out := map[string][]string{}
	for _, l := range strings.Split(stdout, "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok {
			out[k] = append(out[k], v)
		}
	}
	return out
}

// TestIoctlBtrfsEscape: through O_RDONLY fds, the tree asks btrfs for a
// new subvolume in an outside directory, a snapshot of a subvolume it
// filled inside the sandbox (a file named "ls" with content it chose) to
// an outside path, and the read-only flag on an outside subvolume. All
// three are denied and reported with their rule and resolved path, and
// nothing changed outside (seen from the test process); the same
// creations inside the sandbox work. Run bare, each of the three escapes.
func TestIoctlBtrfsEscape(t *testing.T) {
	mnt := btrfsMount(t)
	prog := ioctlProg(t)
	sbx, outside := filepath.Join(mnt, "sbx"), filepath.Join(mnt, "home", "bin")
	btrfs(t, "subvolume", "create", sbx)
	btrfs(t, "subvolume", "create", filepath.Join(sbx, "tools"))
	writeFile(t, filepath.Join(sbx, "tools", "ls"), "#!/bin/sh\necho pwned\n", 0o755)
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	vol := filepath.Join(mnt, "home", "vol")
	btrfs(t, "subvolume", "create", vol)
	writeFile(t, filepath.Join(vol, "data"), "host data\n", 0o644)

	steps := func(made, snap, in, snapIn string) []string {
		return []string{prog,
			"subvol-create", outside, made,
			"snap-create-v2", filepath.Join(sbx, "tools"), outside, snap,
			"subvol-setflags", vol,
			"subvol-create", sbx, in,
			"snap-create-v2", filepath.Join(sbx, "tools"), sbx, snapIn,
		}
	}

	// Bare, the escapes work on this machine: the test means something.
	t.Run("bare", func(t *testing.T) {
		r := runBare(t, sbx, nil, steps("bare-made", "bare-snap", "bare-in", "bare-snap-in")...)
		got := stepResults(r.stdout)
		if r.status != 0 || got["subvol-create"][0] != "ok" || got["snap-create-v2"][0] != "ok" || got["subvol-setflags"][0] != "ok" {
			t.Fatalf("bare run did not escape (status %d):\n%s%s", r.status, r.stdout, r.stderr)
		}
		if !isSubvol(filepath.Join(outside, "bare-made")) || !isSubvol(filepath.Join(outside, "bare-snap")) || subvolFlags(t, vol)&2 == 0 {
			t.Fatal("bare run reported success but nothing changed")
		}
		btrfs(t, "property", "set", vol, "ro", "false")
		for _, p := range []string{filepath.Join(outside, "bare-made"), filepath.Join(outside, "bare-snap"), filepath.Join(sbx, "bare-in"), filepath.Join(sbx, "bare-snap-in")} {
			btrfs(t, "subvolume", "delete", p)
		}
	})

	r := runTraced(t, sbx, nil, []string{"--quiet"}, steps("made", "snap", "in", "snap-in")...)
	got := stepResults(r.stdout)
	want := map[string][]string{
		"subvol-create":   {"errno=EACCES", "ok"},
		"snap-create-v2":  {"errno=EACCES", "ok"},
		"subvol-setflags": {"errno=EACCES"},
	}
	for k, v := range want {
		if strings.Join(got[k], ",") != strings.Join(v, ",") {
			t.Errorf("%s: %v, want %v\nstdout:\n%s\nstderr:\n%s", k, got[k], v, r.stdout, r.stderr)
		}
	}

	// Ground truth, from outside the tree.
	for _, name := range []string{"made", "snap"} {
		if _, err := os.Lstat(filepath.Join(outside, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists outside the sandbox (%v)", filepath.Join(outside, name), err)
		}
	}
	if fl := subvolFlags(t, vol); fl != 0 {
		t.Errorf("outside subvolume %s has flags %#x now (read-only is 0x2)", vol, fl)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "data")); err != nil || string(b) != "host data\n" {
		t.Errorf("outside subvolume's file: %q, %v", b, err)
	}
	if !isSubvol(filepath.Join(sbx, "in")) {
		t.Errorf("the subvolume created inside the sandbox is missing")
	}
	if b, err := os.ReadFile(filepath.Join(sbx, "snap-in", "ls")); err != nil || !strings.Contains(string(b), "pwned") || !isSubvol(filepath.Join(sbx, "snap-in")) {
		t.Errorf("the snapshot made inside the sandbox: %q, %v", b, err)
	}

	// The report: each denial, by command, rule and resolved path.
	type den struct{ flags, kind, path string }
	wantDen := []den{
		{"BTRFS_IOC_SUBVOL_CREATE", "create", filepath.Join(outside, "made")},
		{"BTRFS_IOC_SNAP_CREATE_V2", "create", filepath.Join(outside, "snap")},
		{"BTRFS_IOC_SUBVOL_SETFLAGS", "chmod", vol},
	}
	if len(r.report.Denials) != len(wantDen) {
		t.Errorf("%d denials, want %d:\n%s", len(r.report.Denials), len(wantDen), r.report.denialList())
	}
	for _, w := range wantDen {
		found := false
		for _, e := range r.report.Denials {
			if e.Syscall == "ioctl" && e.Flags == w.flags && e.Kind == w.kind && e.Rule == "outside-writable-roots" && e.Errno == "EACCES" && e.hasResolved(w.path) && e.Program == "ioctl" {
				found = true
			}
		}
		if !found {
			t.Errorf("no denial of %s on %s (kind %s, rule outside-writable-roots):\n%s", w.flags, w.path, w.kind, r.report.denialList())
		}
	}
	// The snapshot's source is named too.
	for _, e := range r.report.Denials {
		if e.Flags == "BTRFS_IOC_SNAP_CREATE_V2" && !e.hasResolved(filepath.Join(sbx, "tools")) {
			t.Errorf("snapshot denial does not name its source %s: %s", filepath.Join(sbx, "tools"), e)
		}
	}
}

// TestIoctlBtrfsWholeFS: commands that act on the file system rather than
// on the fd's file are denied even on an fd inside the sandbox: a btrfs
// command of no rule (SNAP_DESTROY_V2 by subvolume id, the default
// subvolume), and a snapshot from the sandbox of a subvolume outside it
// (it would copy files the tree may not write into its reach).
func TestIoctlBtrfsWholeFS(t *testing.T) {
	mnt := btrfsMount(t)
	prog := ioctlProg(t)
	sbx := filepath.Join(mnt, "sbx")
	btrfs(t, "subvolume", "create", sbx)
	vol := filepath.Join(mnt, "vol")
	btrfs(t, "subvolume", "create", vol)
	r := runTraced(t, sbx, nil, []string{"--quiet"}, prog,
		"raw", sbx, "40089413", // BTRFS_IOC_DEFAULT_SUBVOL with id 0 from a zeroed buffer
		"snap-create-v2", vol, sbx, "copy",
	)
	got := stepResults(r.stdout)
	if strings.Join(got["raw"], ",") != "errno=EPERM" || strings.Join(got["snap-create-v2"], ",") != "errno=EACCES" {
		t.Fatalf("results %v\nstdout:\n%s\nstderr:\n%s", got, r.stdout, r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(sbx, "copy")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("snapshot of an outside subvolume made in the sandbox (%v)", err)
	}
	var forb, src bool
	for _, e := range r.report.Denials {
		if e.Flags == "BTRFS_IOC_DEFAULT_SUBVOL" && e.Rule == "forbidden-syscall" && e.hasResolved(sbx) && strings.Contains(e.Reason, "btrfs") {
			forb = true
		}
		if e.Flags == "BTRFS_IOC_SNAP_CREATE_V2" && e.Rule == "outside-writable-roots" && e.hasResolved(vol) && strings.Contains(e.Reason, "source") {
			src = true
		}
	}
	if !forb || !src {
		t.Errorf("want a forbidden-syscall denial of BTRFS_IOC_DEFAULT_SUBVOL on %s and a source denial of %s:\n%s", sbx, vol, r.report.denialList())
	}
}

// TestIoctlBtrfsDedupe: FIDEDUPERANGE made on a sandbox file's fd names
// its destination by an fd inside its argument. On a read-only fd of a host
// file the kernel takes it (the caller owns the file) and replaces the host
// file's extents by the sandbox file's: its bytes stay, its blocks change
// (red team on the issue-16 build). The destination is decided like the
// source now: denied and reported, and filefrag, run here outside the
// tree, shows the host file's extents unshared. Into a sandbox file it works.
func TestIoctlBtrfsDedupe(t *testing.T) {
	mnt := btrfsMount(t)
	if _, err := exec.LookPath("filefrag"); err != nil {
		t.Skip("no filefrag (e2fsprogs) to see the extents")
	}
	prog := ioctlProg(t)
	sbx, host := filepath.Join(mnt, "sbx"), filepath.Join(mnt, "host")
	mkdir(t, sbx)
	mkdir(t, host)
	data := strings.Repeat("tracecell dedupe block\n", 64<<10/23+1)[:64<<10]
	src, mine, theirs := filepath.Join(sbx, "src"), filepath.Join(sbx, "mine"), filepath.Join(host, "theirs")
	for _, f := range []string{src, mine, theirs} {
		writeFile(t, f, data, 0o644)
	}
	if out, err := exec.Command("sync").CombinedOutput(); err != nil {
		t.Fatalf("sync: %v\n%s", err, out)
	}
	shared := func(p string) bool {
		out, err := exec.Command("filefrag", "-v", p).CombinedOutput()
		if err != nil {
			t.Fatalf("filefrag %s: %v\n%s", p, err, out)
		}
		return strings.Contains(string(out), "shared")
	}
	if shared(theirs) || shared(mine) {
		t.Fatal("extents shared before the run")
	}
	r := runTraced(t, sbx, nil, []string{"--quiet"}, prog,
		"dedupe", src, theirs, "65536",
		"dedupe", src, mine, "65536",
	)
	got := stepResults(r.stdout)
	if strings.Join(got["dedupe"], ",") != "errno=EPERM,ok" {
		t.Errorf("results %v, want the host destination denied and the sandbox one done\nstdout:\n%s\nstderr:\n%s", got, r.stdout, r.stderr)
	}
	if shared(theirs) {
		t.Errorf("the host file %s now shares its extents with the sandbox file", theirs)
	}
	if !shared(mine) {
		t.Errorf("the sandbox file %s was not deduplicated: the test proves nothing", mine)
	}
	found := false
	for _, e := range r.report.Denials {
		if e.Flags == "FIDEDUPERANGE" && e.Rule == "ioctl-not-allowed" && e.hasResolved(theirs) {
			found = true
		}
	}
	if !found {
		t.Errorf("no ioctl-not-allowed denial of FIDEDUPERANGE naming %s:\n%s", theirs, r.report.denialList())
	}
}

// TestIoctlUnknownCommand: a command off the allow-list is decided on what
// its fd points to: on a read-only fd of a host file it is denied as
// ioctl-not-allowed (named in hex, with the resolved path); inside the
// sandbox it reaches the kernel, which answers for itself (ENOTTY). FAT's
// attribute command on a host file and LOOP_CLR_FD on a loop device are
// denied the same way, by name. Runs as any user.
func TestIoctlUnknownCommand(t *testing.T) {
	prog := ioctlProg(t)
	sbx, host := realDir(t), realDir(t)
	writeFile(t, filepath.Join(sbx, "mine"), "x\n", 0o644)
	writeFile(t, filepath.Join(host, "theirs"), "y\n", 0o644)
	args := []string{prog,
		"raw", filepath.Join(sbx, "mine"), "7a7b",
		"raw", filepath.Join(host, "theirs"), "7a7b",
		"raw", filepath.Join(host, "theirs"), "40047211", // FAT_IOCTL_SET_ATTRIBUTES
	}
	// A loop device bound to nothing (no backing_file in sysfs), so that
	// even a build that lets LOOP_CLR_FD through detaches no one's mount
	// (it answers ENXIO); only root may open one.
	loop := ""
	ms, _ := filepath.Glob("/dev/loop[0-9]*")
	for _, m := range ms {
		if _, err := os.Stat("/sys/block/" + filepath.Base(m) + "/loop/backing_file"); err == nil {
			continue
		}
		if f, err := os.Open(m); err == nil {
			f.Close()
			loop = m
			args = append(args, "raw", loop, "4c01") // LOOP_CLR_FD
			break
		}
	}
	r := runTraced(t, sbx, nil, []string{"--quiet"}, args...)
	got := stepResults(r.stdout)["raw"]
	want := []string{"errno=ENOTTY", "errno=EPERM", "errno=EPERM"}
	if loop != "" {
		want = append(want, "errno=EPERM")
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("results %v, want %v\nstdout:\n%s\nstderr:\n%s", got, want, r.stdout, r.stderr)
	}
	type den struct{ flags, path string }
	wantDen := []den{{"0x7a7b", filepath.Join(host, "theirs")}, {"FAT_IOCTL_SET_ATTRIBUTES", filepath.Join(host, "theirs")}}
	if loop != "" {
		wantDen = append(wantDen, den{"LOOP_CLR_FD", loop})
	}
	if len(r.report.Denials) != len(wantDen) {
		t.Errorf("%d denials, want %d:\n%s", len(r.report.Denials), len(wantDen), r.report.denialList())
	}
	for _, w := range wantDen {
		found := false
		for _, e := range r.report.Denials {
			if e.Syscall == "ioctl" && e.Kind == "ioctl" && e.Flags == w.flags && e.Rule == "ioctl-not-allowed" && e.Errno == "EPERM" && e.hasResolved(w.path) &&
				strings.Contains(e.Reason, w.flags) && strings.Contains(e.Reason, w.path) {
				found = true
			}
		}
		if !found {
			t.Errorf("no ioctl-not-allowed denial of %s on %s:\n%s", w.flags, w.path, r.report.denialList())
		}
	}
}

// resolvedProgram is the executable the tree runs by name, for
// --allow-exec ("" when it is not installed).
func resolvedProgram(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestIoctlMeasuredPrograms runs the programs syscalls.IoctlAllowed was
// measured on (testdata/ioctl) under tracecell: none of their ioctls may be
// denied. A command missing from the allow-list that they need would show
// up here as an ioctl denial (or, inside the sandbox, as a stop that the
// count of checked calls would not explain: the terminal and pty commands
// they make on their own ptys are decided and allowed).
func TestIoctlMeasuredPrograms(t *testing.T) {
	var allow []string
	for _, n := range []string{"bash", "echo", "stty", "tput", "ls", "sqlite3", "git", "cat", "python3", "rm", "mkdir"} {
		if p := resolvedProgram(t, n); p != "" {
			allow = append(allow, "--allow-exec", p)
		}
	}
	if python != "/usr/bin/python3" {
		allow = append(allow, "--allow-exec", python)
	}
	td := filepath.Join(repoRoot, "testdata", "ioctl")
	data := []string{"bash", "echo", "stty", "tput"}
	shell := []string{"bash", "ls", "sqlite3", "git", "cat", "rm", "mkdir"}
	runs := []struct {
		name  string
		argv  func(sbx string) []string
		tty   bool
		needs []string
	}{
		{"python-data", func(sbx string) []string { return []string{python, filepath.Join(td, "measure.py"), sbx} }, false, data},
		{"python-data-tty", func(sbx string) []string { return []string{python, filepath.Join(td, "measure.py"), sbx} }, true, data},
		{"shell-tools", func(sbx string) []string { return []string{"/bin/bash", filepath.Join(td, "shell.sh"), sbx} }, false, shell},
		{"shell-tools-tty", func(sbx string) []string { return []string{"/bin/bash", filepath.Join(td, "shell.sh"), sbx} }, true, shell},
		{"interactive-pty", func(sbx string) []string { return []string{python, filepath.Join(td, "interactive.py")} }, false, []string{"bash", "ls", "stty", "python3"}},
	}
	for _, c := range runs {
		t.Run(c.name, func(t *testing.T) {
			for _, n := range c.needs {
				if resolvedProgram(t, n) == "" {
					t.Skipf("%s is not installed", n)
				}
			}
			sbx := realDir(t)
			env := runEnv(t, sbx)
			trace := filepath.Join(t.TempDir(), "trace.jsonl")
			flags := append([]string{"--trace", trace}, allow...)
			var r result
			if c.tty {
				r = runTracedTTY(t, sbx, env, flags, c.argv(sbx)...)
			} else {
				r = runTraced(t, sbx, env, append([]string{"--quiet"}, flags...), c.argv(sbx)...)
			}
			if r.status != 0 {
				t.Errorf("status %d\nstdout:\n%s\nstderr:\n%s\ndenials:\n%s", r.status, r.stdout, r.stderr, r.report.denialList())
			}
			for _, e := range r.report.Denials {
				if e.Syscall == "ioctl" {
					t.Errorf("ioctl denied: %s", e)
				}
			}
			// Every ioctl that stopped is one decided by a rule of its
			// own (the terminal changes on the tree's ptys, TIOCGPTN):
			// none fell to the generic decision, which a command the
			// programs use but the allow-list lacks would (allowed or
			// not, on a file of the sandbox or its own pty).
			b, err := os.ReadFile(trace)
			if err != nil {
				t.Fatal(err)
			}
			stops := map[string]int{}
			for _, l := range bytes.Split(b, []byte("\n")) {
				var e event
				if len(l) == 0 || json.Unmarshal(l, &e) != nil || e.Syscall != "ioctl" {
					continue
				}
				stops[e.Flags]++
				if !slices.ContainsFunc(syscalls.Ioctls, func(s syscalls.IoctlSpec) bool { return s.Name == e.Flags }) {
					t.Errorf("ioctl %s stopped and was decided on what its fd points to: not on the allow-list: %s", e.Flags, e)
				}
			}
			t.Logf("ioctl stops: %v", stops)
			if t.Failed() {
				t.Logf("all denials:\n%s", r.report.denialList())
			}
		})
	}
}

// runTracedTTY is runTraced with tracecell's standard input, output and
// error on the slave of a fresh pty (tracecell's own terminal, whose
// settings the tree may change).
func runTracedTTY(t *testing.T, sbx string, env, flags []string, argv ...string) result {
	t.Helper()
	m, slave := ptytest.Open(t)
	s, err := os.OpenFile(slave, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rp := filepath.Join(t.TempDir(), "report.json")
	args := []string{"run", "--quiet", "--write", sbx, "--report", rp}
	for _, kv := range env {
		args = append(args, "--env", kv)
	}
	args = append(append(append(args, flags...), "--"), argv...)
	cmd := exec.Command(tcBin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var out bytes.Buffer
	deadline := time.After(runTimeout)
	var werr error
loop:
	for {
		o, _ := ptytest.Output(m, 100*time.Millisecond) // keep the pty drained
		out.WriteString(o)
		select {
		case werr = <-done:
			break loop
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("%q: still running after %v\n%s", argv, runTimeout, out.String())
		default:
		}
	}
	o, _ := ptytest.Output(m, 100*time.Millisecond)
	out.WriteString(o)
	res := result{stdout: out.String()}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		res.status = ee.ExitCode()
	} else if werr != nil {
		t.Fatal(werr)
	}
	b, err := os.ReadFile(rp)
	if err != nil {
		t.Fatalf("no report (status %d): %v\n%s", res.status, err, res.stdout)
	}
	res.report = &reportDoc{}
	if err := json.Unmarshal(b, res.report); err != nil {
		t.Fatal(err)
	}
	return res
}
