package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeSessionsXattrInotify: getxattr, listxattr and inotify_add_watch
// on another session's sandbox are denied as reads of the state directory
// and reported; the other session's attribute value and file names never
// reach the reader.
func TestServeSessionsXattrInotify(t *testing.T) {
	s := startServer(t, "serve", nil, "--pool-size", "0")
	s.create("owner")
	s.create("spy")
	r := s.exec("owner", "import os\nopen('f', 'w').write('x')\nos.setxattr('f', 'user.tc', b'sk-xattr-secret')\nos.path.abspath('f')", 0)
	if r.Error != nil {
		t.Skipf("user xattrs on the state directory's file system: %s", r)
	}
	f := strings.Trim(r.result(), "'")
	for _, c := range []struct{ name, code string }{
		{"getxattr", fmt.Sprintf("import os\nos.getxattr(%q, 'user.tc')", f)},
		{"listxattr", fmt.Sprintf("import os\nos.listxattr(%q)", f)},
		{"inotify_add_watch", fmt.Sprintf("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nfd = libc.inotify_init1(0)\n"+
			"if libc.inotify_add_watch(fd, %q.encode(), 0xfff) < 0:\n    raise PermissionError(ctypes.get_errno(), 'inotify_add_watch')", filepath.Dir(f))},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.exec("spy", c.code, 0)
			if strings.Contains(r.String(), "sk-xattr-secret") || strings.Contains(r.String(), "user.tc") {
				t.Fatalf("the other session's attribute reached the spy: %s", r)
			}
			if r.errName() != "PermissionError" || len(r.Denials) == 0 || r.Denials[0].Rule != "deny-read" {
				t.Fatalf("want a reported deny-read denial: %s", r)
			}
		})
	}
}
