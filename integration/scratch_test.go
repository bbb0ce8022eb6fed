package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scratchRun runs testdata/py/scratch_owner.py MODE under tracecell on a
// fresh /dev/shm base name; host, when not nil, is the host process: it
// runs once the tree has made its entries (the tree waits for it) and
// changes them from outside; before, when given, prepares the host's
// entries before the run. It returns the tree's attempts by name, the run
// and the base.
func scratchRun(t *testing.T, mode string, host func(base string) error, flags, args []string, before ...func(base string) error) (map[string]string, result, string) {
	t.Helper()
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		t.Skip("no /dev/shm")
	}
	base := fmt.Sprintf("/dev/shm/tracecell-it-owner-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		for _, s := range []string{"-d", "-d2", "-f", "-f-ln", "-moved", "-in"} {
			os.RemoveAll(base + s)
		}
	})
	for _, b := range before {
		if err := b(base); err != nil {
			t.Fatalf("host process, before the run: %v", err)
		}
	}
	sbx := realDir(t)
	signal := filepath.Join(sbx, "signal")
	hostErr := make(chan error, 1)
	go func() {
		if host == nil {
			hostErr <- nil
			return
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := os.Stat(signal + ".ready"); err == nil {
				break
			}
			if time.Now().After(deadline) {
				hostErr <- fmt.Errorf("the tree never made its entries")
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		err := host(base)
		if werr := os.WriteFile(signal+".go", nil, 0o644); err == nil {
			err = werr
		}
		hostErr <- err
	}()
	argv := append([]string{python, pyScript("scratch_owner.py"), mode, base, signal}, args...)
	r := runTraced(t, sbx, runEnv(t, sbx), append([]string{"-q"}, flags...), argv...)
	if err := <-hostErr; err != nil {
		t.Fatalf("host process: %v", err)
	}
	if r.status != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", r.status, r.stdout, r.stderr)
	}
	got := attemptLines(r.stdout)
	return got, r, base
}

// wantAttempts checks the tree's attempts: EACCES for each denied one, OK
// for each allowed one.
func wantAttempts(t *testing.T, got map[string]string, r result, denied, allowed []string) {
	t.Helper()
	for _, what := range denied {
		if got[what] != "EACCES" {
			t.Errorf("%s: got %q, want EACCES", what, got[what])
		}
	}
	for _, what := range allowed {
		if got[what] != "OK" {
			t.Errorf("%s: got %q, want OK", what, got[what])
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nreport:\n%s", r.stdout, r.report.denialList())
	}
}

// wantContent checks a host file from outside the tree.
func wantContent(t *testing.T, p, want string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || string(b) != want {
		t.Errorf("ESCAPED: the host's %s holds %q (%v), want %q", p, b, err, want)
	}
}

// wantAbsent checks from outside that the tree made nothing at p.
func wantAbsent(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); err == nil {
		t.Errorf("ESCAPED: %s exists", p)
	}
}

// scratchDenials counts the report's scratch-not-owned denials on paths
// under base, checking each, and how many say the entry was replaced.
func scratchDenials(t *testing.T, r result, base string) (n, replaced int) {
	t.Helper()
	for _, e := range r.report.Denials {
		for _, p := range e.Paths {
			if strings.HasPrefix(p.Resolved, base) {
				if e.Rule != "scratch-not-owned" || e.Errno != "EACCES" {
					t.Errorf("denial %v: want rule scratch-not-owned, EACCES", e)
				}
				n++
				if strings.Contains(e.Reason, "another process") {
					replaced++
				}
				break
			}
		}
	}
	return n, replaced
}

// TestScratchNameReuse: red team F4a. The tree makes a directory and a
// file in /dev/shm; a host process removes both and makes its own under
// the same names (a host program's "shm_unlink stale; shm_open O_EXCL").
// The names are no longer the tree's: it may not write, change, remove or
// move the host's entries, nor create in the host's directory; each is
// denied and reported as replaced by another process.
func TestScratchNameReuse(t *testing.T) {
	t.Parallel()
	got, r, base := scratchRun(t, "reuse", func(base string) error {
		if err := os.RemoveAll(base + "-d"); err != nil {
			return err
		}
		if err := os.Remove(base + "-f"); err != nil {
			return err
		}
		if err := os.Mkdir(base+"-d", 0o777); err != nil {
			return err
		}
		if err := os.WriteFile(base+"-d/hostfile", []byte("HOST"), 0o666); err != nil {
			return err
		}
		return os.WriteFile(base+"-f", []byte("HOSTF"), 0o666)
	}, nil, nil)
	wantAttempts(t, got, r, []string{"write host file in re-made dir", "create in re-made dir", "write re-made file",
		"chmod re-made file", "unlink re-made file", "rename re-made dir"}, nil)
	wantContent(t, base+"-d/hostfile", "HOST")
	wantContent(t, base+"-f", "HOSTF")
	wantNotChmodded(t, base+"-f")
	wantAbsent(t, base+"-d/new")
	wantAbsent(t, base+"-moved")
	// All but the write of hostfile, which never was the tree's, say
	// that the tree's entry was replaced.
	n, replaced := scratchDenials(t, r, base)
	if n != 6 || replaced != 5 {
		t.Errorf("%d scratch-not-owned denials under %s, %d of them saying another process replaced the entry; want 6 and 5:\n%s", n, base, replaced, r.report.denialList())
	}
}

// TestScratchDeletedInRemadeDir: red team 31. A host process's file in its
// own /dev/shm directory, unlinked with that directory while the host and
// the tree hold it open, reads as "BASE-d/hostfile (deleted)"; the tree
// then makes a BASE-d of its own. The name of the last directory shows
// nothing about whose the file is: reopening it for writing through the
// tree's own fd, and re-permissioning it, stay denied (deleted-file), with
// reads checked too (--deny-read, as the session server runs).
func TestScratchDeletedInRemadeDir(t *testing.T) {
	t.Parallel()
	for name, flags := range map[string][]string{"open-reads": nil, "deny-read": {"--deny-read", "/nonexistent-tracecell"}} {
		t.Run(name, func(t *testing.T) {
			var host *os.File
			got, r, _ := scratchRun(t, "deleted-dir", func(base string) error {
				if err := os.Remove(base + "-d/hostfile"); err != nil {
					return err
				}
				return os.Remove(base + "-d")
			}, flags, nil, func(base string) error {
				if err := os.Mkdir(base+"-d", 0o777); err != nil {
					return err
				}
				if err := os.WriteFile(base+"-d/hostfile", []byte("HOST"), 0o644); err != nil {
					return err
				}
				if err := os.Chmod(base+"-d/hostfile", 0o644); err != nil { // whatever the umask
					return err
				}
				var err error
				host, err = os.Open(base + "-d/hostfile")
				return err
			})
			defer host.Close()
			wantAttempts(t, got, r, []string{"reopen deleted host file", "chmod deleted host file", "fchmod deleted host file"}, nil)
			wantHostHeldIntact(t, host, r, 3)
		})
	}
}

// TestScratchDeletedMovedIntoRoot: red team 32. A host program puts a file
// into a directory the tree made in /dev/shm; the tree opens it read-only;
// the host unlinks it and keeps it open; the tree moves the (now clean)
// directory into its writable root, so the file's link text names a place
// in the root. A read-only fd shows nothing about whose the file is:
// writing it through the tree's /proc/self/fd/N and re-permissioning it
// stay denied (deleted-file).
func TestScratchDeletedMovedIntoRoot(t *testing.T) {
	t.Parallel()
	root, err := os.MkdirTemp("/dev/shm", "tracecell-it-root-")
	if err != nil {
		t.Skipf("no directory on /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	var host *os.File
	var hostErr error
	placed := make(chan struct{})
	got, r, _ := scratchRun(t, "deleted-moved", func(base string) error {
		// The tree has the file open read-only by now (it waits for us).
		return os.Remove(base + "-d/hostfile")
	}, []string{"--write", root}, []string{root}, func(base string) error {
		// Before the tree's open: put the file in once its directory is
		// there (the tree polls for it).
		go func() {
			defer close(placed)
			for i := 0; i < 400; i++ {
				if _, err := os.Stat(base + "-d"); err == nil {
					if err := os.WriteFile(base+"-d/hostfile", []byte("HOST"), 0o644); err != nil {
						hostErr = err
						return
					}
					host, hostErr = os.Open(base + "-d/hostfile")
					return
				}
				time.Sleep(25 * time.Millisecond)
			}
			hostErr = fmt.Errorf("the tree never made %s-d", base)
		}()
		return nil
	})
	<-placed
	if hostErr != nil || host == nil {
		t.Fatalf("host process: %v", hostErr)
	}
	defer host.Close()
	wantAttempts(t, got, r, []string{"reopen deleted host file", "fchmod deleted host file"}, []string{"move dir into root"})
	wantHostHeldIntact(t, host, r, 2)
}

// wantNotChmodded checks that the host's file p was not given mode 0600,
// the mode the tree's chmod attempts set.
func wantNotChmodded(t *testing.T, p string) {
	t.Helper()
	if st, err := os.Stat(p); err == nil && st.Mode().Perm() == 0o600 {
		t.Errorf("ESCAPED: the tree re-permissioned the host's %s", p)
	}
}

// wantHostHeldIntact checks the host's unlinked file the tree tried to
// change (written "HOST", mode 0644, held open by the host as host) and that
// the report has n deleted-file denials, one per attempt.
func wantHostHeldIntact(t *testing.T, host *os.File, r result, n int) {
	t.Helper()
	b := make([]byte, 16)
	k, _ := host.ReadAt(b, 0)
	if string(b[:k]) != "HOST" {
		t.Errorf("ESCAPED: the host's unlinked file now holds %q, want HOST", b[:k])
	}
	if st, err := host.Stat(); err == nil && st.Mode().Perm() != 0o644 {
		t.Errorf("ESCAPED: the host's unlinked file has mode %v, want 0644", st.Mode().Perm())
	}
	denied := 0
	for _, e := range r.report.Denials {
		if e.Rule == "deleted-file" {
			denied++
		}
	}
	if denied != n {
		t.Errorf("%d deleted-file denials, want %d:\n%s", denied, n, r.report.denialList())
	}
}

// TestScratchHostFileInOwnDir: red team F4b. The tree makes a directory in
// /dev/shm; a host program (one with a fixed /dev/shm directory name) puts
// files into it. Those files are the host's: the tree may not write,
// remove, re-permission, link, rename or rename over them, nor move the
// directory that holds them; its own entries there stay its own.
func TestScratchHostFileInOwnDir(t *testing.T) {
	t.Parallel()
	got, r, base := scratchRun(t, "hostfile", func(base string) error {
		for name, data := range map[string]string{"hostfile": "HOST", "hostfile2": "HOST2", "hostfile3": "HOST3"} {
			if err := os.WriteFile(base+"-d/"+name, []byte(data), 0o666); err != nil {
				return err
			}
		}
		return nil
	}, nil, nil)
	wantAttempts(t, got, r,
		[]string{"write-open", "unlink", "chmod", "link host file", "rename host file", "rename-over", "rename-dir-away"},
		[]string{"create mine", "write own", "unlink own"})
	d := base + "-d"
	wantContent(t, d+"/hostfile", "HOST")
	wantContent(t, d+"/hostfile2", "HOST2")
	wantContent(t, d+"/hostfile3", "HOST3")
	wantNotChmodded(t, d+"/hostfile")
	wantAbsent(t, d+"/lnk")
	wantAbsent(t, d+"/taken")
	wantAbsent(t, base+"-moved")
	if n, _ := scratchDenials(t, r, base); n != 7 {
		t.Errorf("%d scratch-not-owned denials under %s, want 7:\n%s", n, base, r.report.denialList())
	}
}

// TestScratchOwnLifecycle: what the tree does with its own scratch entries
// stays allowed, by identity as by name: create, write, rename within
// scratch (files and directories with their contents), links, deleting
// and recreating a name, RENAME_EXCHANGE, a directory of the sandbox moved
// into scratch with its contents.
func TestScratchOwnLifecycle(t *testing.T) {
	t.Parallel()
	// A second writable root on /dev/shm's file system, for the move of
	// one of its directories into scratch (a rename across file systems
	// fails with EXDEV).
	root, err := os.MkdirTemp("/dev/shm", "tracecell-it-root-")
	if err != nil {
		t.Skipf("no directory on /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	got, r, base := scratchRun(t, "lifecycle", nil, []string{"--write", root}, []string{root})
	all := []string{"mkdir", "mkdir sub", "create in sub", "rename in dir", "rename dir", "write moved", "rename dir back",
		"create", "link", "unlink first name", "write linked", "recreate", "rename over own", "write", "move into own dir",
		"exchange", "write exchanged", "unlink", "unlink sub file", "rmdir sub", "rmdir", "recreate dir",
		"create in recreated dir", "cleanup", "move dir in from sandbox", "write moved-in file", "remove moved-in"}
	wantAttempts(t, got, r, nil, all)
	if len(r.report.Denials) != 0 {
		t.Errorf("denials:\n%s", r.report.denialList())
	}
	wantAbsent(t, base+"-d")
	wantAbsent(t, base+"-f")
	wantAbsent(t, base+"-in")
}
