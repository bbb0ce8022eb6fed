package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// buildIDs compiles testdata/setid/ids.c into dir.
func buildIDs(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "ids")
	if err := gccBuild(bin, "setid/ids.c"); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestExecPatterns: --allow-exec takes a directory or a glob over the
// resolved program. A shell may then run the programs of that directory,
// and a program elsewhere (one the tree copied into its sandbox) is still
// refused, named in the report; that it never ran is seen on disk: the file
// it would have created is absent.
func TestExecPatterns(t *testing.T) {
	top := realDir(t)
	bin := filepath.Join(top, "bin")
	mkdir(t, bin)
	ids := buildIDs(t, bin)
	if err := os.Symlink(bin, filepath.Join(top, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, allow string
	}{
		{"glob", bin + "/*"},
		{"question mark", bin + "/i?s"},
		{"directory", bin},
		{"directory slash", bin + "/"},
		{"glob through a symlinked directory", top + "/link/*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sbx := realDir(t)
			copyFile(t, ids, filepath.Join(sbx, "ids"), 0o755)
			script := ids + " " + sbx + "/allowed; ./ids " + sbx + "/copied; echo copied=$?"
			r := runTraced(t, sbx, nil, []string{"--allow-exec", tc.allow}, "/bin/sh", "-c", script)
			if r.status != 0 || !strings.Contains(r.stdout, "copied=126") {
				t.Fatalf("status %d, want 0 and the copy refused (126)\nstdout:\n%s\nstderr:\n%s", r.status, r.stdout, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(sbx, "allowed")); err != nil {
				t.Errorf("the program matched by %q did not run: %v", tc.allow, err)
			}
			if _, err := os.Lstat(filepath.Join(sbx, "copied")); !os.IsNotExist(err) {
				t.Errorf("the copy in the sandbox ran (its file exists: %v)", err)
			}
			var found bool
			for _, d := range r.report.Denials {
				if d.Kind == "exec" && d.Rule == "exec-not-allowed" && d.hasResolved(filepath.Join(sbx, "ids")) &&
					strings.Contains(d.Reason, "exec of "+filepath.Join(sbx, "ids")+" not allowed") && strings.Contains(d.Reason, bin+"/") {
					found = true
				}
			}
			if !found || r.report.Counts.Denied != 1 {
				t.Errorf("want one exec-not-allowed denial naming %s/ids and the pattern; got %d:\n%s", sbx, r.report.Counts.Denied, r.report.denialList())
			}
		})
	}
}

// TestSetIDNoPrivilege: a set-uid, set-gid program never gains its owner's
// identity under tracecell, neither as the command nor exec'd by the tree
// through an exec pattern: the stub sets PR_SET_NO_NEW_PRIVS before the
// first exec, and the kernel then ignores set-id bits at execve (Linux 3.5,
// Documentation/userspace-api/no_new_privs.rst). The same program run bare
// shows the bits work on this file system, and the owner of the file each
// run creates is read from outside the tree.
func TestSetIDNoPrivilege(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root can make a set-uid program owned by another user (nobody)")
	}
	const nobody = 65534
	top := openDir(t)
	bin := filepath.Join(top, "bin")
	mkdir(t, bin)
	ids := buildIDs(t, bin)
	if err := os.Chown(ids, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ids, 0o755|os.ModeSetuid|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	owner := func(t *testing.T, p string) (uint32, uint32) {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatalf("the program created no %s: %v", p, err)
		}
		return st.Uid, st.Gid
	}
	sbx := openDir(t)
	os.Chmod(sbx, 0o777)
	bare := runBare(t, sbx, nil, ids, filepath.Join(sbx, "bare"))
	if uid, gid := owner(t, filepath.Join(sbx, "bare")); bare.status != 0 || uid != nobody || gid != nobody {
		t.Skipf("set-id bits have no effect here (status %d, %q, file %d:%d): nothing to show", bare.status, bare.stdout, uid, gid)
	}
	for _, tc := range []struct {
		name, file string
		flags      []string
		argv       []string
	}{
		{"command", "command", nil, []string{ids, filepath.Join(sbx, "command")}},
		{"exec'd by a shell", "shell", []string{"--allow-exec", bin + "/*"}, []string{"/bin/sh", "-c", ids + " " + filepath.Join(sbx, "shell")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runTraced(t, sbx, nil, tc.flags, tc.argv...)
			if r.status != 0 || strings.TrimSpace(r.stdout) != "0 0 0 0" {
				t.Errorf("status %d, ids %q: want 0 and \"0 0 0 0\" (no set-id gain)\nstderr:\n%s", r.status, r.stdout, r.stderr)
			}
			if uid, gid := owner(t, filepath.Join(sbx, tc.file)); uid != 0 || gid != 0 {
				t.Errorf("the file the program created is owned by %d:%d, want 0:0", uid, gid)
			}
		})
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b), mode)
}

// openDir is a fresh directory that every user may enter (t.TempDir's
// parent is 0700), with symlinks expanded.
func openDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "tracecell-setid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if d, err = filepath.EvalSymlinks(d); err != nil {
		t.Fatal(err)
	}
	return d
}
