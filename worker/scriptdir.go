package worker

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/policy"
)

// scriptDirPrefix names the private directories that hold worker.py until
// the interpreter has read it: tracecell-worker-<host pid>-<random>.
const scriptDirPrefix = "tracecell-worker-"

// staleUnnamedAge is when a directory of the older naming (no pid) is taken
// as left behind: one lives only until the interpreter's hello.
const staleUnnamedAge = time.Hour

// scriptBases are the directories, in order of preference, in which the
// worker-host may make the private directory for worker.py: TMPDIR, then
// the usual system temporary directories.
func scriptBases() []string {
	return []string{os.TempDir(), "/var/tmp", "/tmp"}
}

// pickScriptBase is the first of bases (its symlinks expanded) that no
// directory in writable contains (the tree's writable roots and scratch
// directories: anything under them the tree can replace, rename or plant a
// symlink in while the untraced worker-host writes there) and that no entry
// of unreadable contains (the interpreter must read the script). The
// expanded path is returned, so a symlink on the way (which may itself lie
// in a writable root) is not walked again.
func pickScriptBase(bases, writable, unreadable []string) (string, error) {
	var tried []string
	for _, b := range bases {
		if b == "" || !filepath.IsAbs(b) {
			continue
		}
		r, err := filepath.EvalSymlinks(b)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s (%v)", b, err))
			continue
		}
		if st, err := os.Stat(r); err != nil || !st.IsDir() {
			tried = append(tried, b+" (not a directory)")
			continue
		}
		ok := true
		for _, w := range writable {
			if policy.Under(r, w) {
				tried = append(tried, fmt.Sprintf("%s (inside the tree's writable %s)", b, w))
				ok = false
				break
			}
		}
		for _, d := range unreadable {
			if ok && policy.Under(r, d) {
				tried = append(tried, fmt.Sprintf("%s (inside deny-read %s)", b, d))
				ok = false
			}
		}
		if ok {
			return r, nil
		}
	}
	return "", fmt.Errorf("no directory for worker.py that the tree cannot write: tried %s; set TMPDIR to a directory outside every writable root and scratch directory",
		strings.Join(tried, ", "))
}

// scriptDirName is a fresh name for the directory of worker.py:
// tracecell-worker-<host pid>-<random>.
func scriptDirName() string {
	var b [8]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s%d-%s", scriptDirPrefix, os.Getpid(), hex.EncodeToString(b[:]))
}

// writeScript makes dir (mode 0700; mkdir(2) never follows a symlink at its
// last component and fails with EEXIST on anything already there) and writes
// worker.py in it through the directory's fd, with
// O_CREAT|O_EXCL|O_NOFOLLOW: nothing planted at the name (a symlink to a host
// file, another file) is followed, truncated or reused. The directory is
// checked to be one this user owns, mode 0700, before the write. The caller
// has checked that dir's parent lies outside every root the tree can write
// (pickScriptBase); this is the second line. On an error after the mkdir
// the directory is removed; an entry that was already there is left.
func writeScript(dir string, script []byte) (p string, err error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err // whatever is there is left alone
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir) // made above: ours
		}
	}()
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return "", fmt.Errorf("fstat %s: %w", dir, err)
	}
	if st.Uid != uint32(os.Getuid()) || st.Mode&0o077 != 0 {
		return "", fmt.Errorf("%s: owned by uid %d with mode %#o, not this user's private directory", dir, st.Uid, st.Mode&0o7777)
	}
	fd, err := unix.Openat(dfd, "worker.py", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return "", fmt.Errorf("create %s/worker.py: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir, "worker.py"))
	if _, err := f.Write(script); err != nil {
		f.Close()
		return "", fmt.Errorf("write %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return filepath.Join(dir, "worker.py"), nil
}

// removeStaleScriptDirs removes, in tmp, this user's script directories
// whose worker-host is gone (its pid no longer exists), and those of the
// older naming without a pid that are older than staleUnnamedAge. Best
// effort: a directory it cannot remove is left.
func removeStaleScriptDirs(tmp string, now time.Time) {
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	uid := uint32(os.Getuid())
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, scriptDirPrefix) || !e.IsDir() {
			continue // e.IsDir is false for a symlink: never followed
		}
		p := filepath.Join(tmp, name)
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != uid {
			continue
		}
		rest := strings.TrimPrefix(name, scriptDirPrefix)
		if pidText, _, ok := strings.Cut(rest, "-"); ok {
			if pid, err := strconv.Atoi(pidText); err == nil && pid > 0 {
				if !errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
					continue // its host may still be starting
				}
				os.RemoveAll(p)
				continue
			}
		}
		if now.Sub(fi.ModTime()) > staleUnnamedAge {
			os.RemoveAll(p)
		}
	}
}
