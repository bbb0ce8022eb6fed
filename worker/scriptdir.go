package worker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// scriptDirPrefix names the private directories that hold worker.py until
// the interpreter has read it: tracecell-worker-<host pid>-<random>.
const scriptDirPrefix = "tracecell-worker-"

// staleUnnamedAge is when a directory of the older naming (no pid) is taken
// as left behind: one lives only until the interpreter's hello.
const staleUnnamedAge = time.Hour

// makeScriptDir makes the directory for worker.py in TMPDIR, after removing
// the ones earlier worker-hosts left behind. A host removes its own once
// the interpreter has read the script, but one killed while starting (a
// pool refill at shutdown, a cancelled start) cannot.
func makeScriptDir() (string, error) {
	removeStaleScriptDirs(os.TempDir(), time.Now())
	return os.MkdirTemp("", fmt.Sprintf("%s%d-", scriptDirPrefix, os.Getpid()))
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
