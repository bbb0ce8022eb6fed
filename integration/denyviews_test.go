package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readAll is the tree's side of TestDenyReadThroughMounts: it tries to read
// each path and prints what it got.
const readAll = `
import sys
for p in sys.argv[1:]:
    try:
        print(p, "read", open(p).read().strip())
    except OSError as e:
        print(p, "errno", e.errno)
`

// TestDenyReadThroughMounts: --deny-read is decided by path, and a mount
// shows the same files under another path: a bind mount of the denied
// file's directory (or of a directory above it), a bind mount of a
// directory below a denied tree, an overlay's lower directory seen through
// its merged view. Each of those paths was readable (the file's content
// printed) while the entry's own path was denied. Root only; the mounts
// are made in a mount namespace of their own (unshare -m), with the run.
// Ground truth: the same reads made bare in that namespace get the secret.
func TestDenyReadThroughMounts(t *testing.T) {
	base := mountNSDirs(t, "sbx", "host/keys", "host/vol", "alias", "keys-alias", "alias\u3000x", "alias\vy", "vol2",
		"layers/lower", "layers/upper", "layers/work", "merged", "layers-alias")
	host, sbx := filepath.Join(base, "host"), filepath.Join(base, "sbx")
	writeFile(t, filepath.Join(host, "secret"), "SECRET-FILE\n", 0o600)
	writeFile(t, filepath.Join(host, "keys", "id"), "SECRET-KEY\n", 0o600)
	writeFile(t, filepath.Join(base, "layers", "lower", "conf"), "SECRET-LOWER\n", 0o600)
	// Round 57 of the red team: mount points named with an ideographic
	// space or a vertical tab (strings.Fields split them), a volume mounted
	// inside the denied tree and also elsewhere, a second mount of an
	// overlay's layers.
	mounts := `mount --bind "$B/host" "$B/alias" && mount --bind "$B/host/keys" "$B/keys-alias" &&
mount --bind "$B/host" "$B/alias` + "\u3000" + `x" && mount --bind "$B/host" "$B/alias` + "\v" + `y" &&
mount -t tmpfs vol "$B/host/vol" && echo SECRET-VOL > "$B/host/vol/key" && mount --bind "$B/host/vol" "$B/vol2" &&
{ mount -t overlay overlay -o "lowerdir=$B/layers/lower,upperdir=$B/layers/upper,workdir=$B/layers/work" "$B/merged" &&
  mount --bind "$B/layers" "$B/layers-alias" || echo "no overlay" >&2; }`
	reads := []string{
		filepath.Join(base, "alias", "secret"),               // a bind mount of the denied file's directory
		filepath.Join(base, "keys-alias", "id"),              // of a directory inside a denied tree
		filepath.Join(base, "alias", "keys", "id"),           // the denied tree through the first one
		filepath.Join(base, "alias\u3000x", "secret"),        // a name strings.Fields split
		filepath.Join(base, "alias\vy", "secret"),            // likewise
		filepath.Join(base, "vol2", "key"),                   // a volume mounted inside the denied tree
		filepath.Join(base, "layers", "lower", "conf"),       // the layer of a denied merged-view file
		filepath.Join(base, "layers-alias", "lower", "conf"), // that layer through another mount
	}
	deny := []string{"--deny-read", filepath.Join(host, "secret"), "--deny-read", host, "--deny-read", filepath.Join(base, "merged", "conf")}
	run := func(t *testing.T, traced bool) result {
		script := mounts + ` && exec "$@"`
		argv := []string{"unshare", "-m", "--propagation", "private", "env", "B=" + base, "sh", "-c", script, "sh"}
		if traced {
			rp := filepath.Join(t.TempDir(), "r.json")
			argv = append(argv, tcBin, "run", "-q", "--write", sbx, "--report", rp)
			argv = append(argv, deny...)
			argv = append(argv, "--", python, "-c", readAll)
			r := execute(t, "", os.Environ(), append(argv, reads...))
			r.report, r.reportPath = readReport(t, rp, r), rp
			return r
		}
		argv = append(argv, python, "-c", readAll)
		return execute(t, "", os.Environ(), append(argv, reads...))
	}
	bare := run(t, false)
	if bare.status != 0 {
		t.Fatalf("the mounts failed (status %d):\n%s%s", bare.status, bare.stdout, bare.stderr)
	}
	overlay := !strings.Contains(bare.stderr, "no overlay")
	for _, p := range reads {
		if !overlay && strings.HasSuffix(p, "conf") {
			continue
		}
		if !strings.Contains(bare.stdout, p+" read SECRET") {
			t.Fatalf("bare: %s not read, nothing to show:\n%s%s", p, bare.stdout, bare.stderr)
		}
	}
	r := run(t, true)
	for _, p := range reads {
		if !overlay && strings.HasSuffix(p, "conf") {
			continue
		}
		if !strings.Contains(r.stdout, p+" errno 13\n") {
			t.Errorf("%s: not denied:\n%s%s", p, r.stdout, r.stderr)
		}
		found := false
		for _, d := range r.report.Denials {
			found = found || (d.Rule == "deny-read" && d.hasResolved(p) && strings.Contains(d.Reason, "another mount"))
		}
		if !found {
			t.Errorf("%s: no deny-read denial naming the other mount in the report", p)
		}
	}
	if strings.Contains(r.stdout, "SECRET") {
		t.Errorf("a secret reached the tree:\n%s", r.stdout)
	}
}

// TestDenyReadHardLink: a hard link to a --deny-read file, made outside the
// tree (the tree may not link it), is the same file under a name no path
// rule covers. It is denied by the file's identity, and the denial names
// the entry; another file beside it stays readable. Any user.
func TestDenyReadHardLink(t *testing.T) {
	d := realDir(t)
	host, sbx := filepath.Join(d, "host"), filepath.Join(d, "sbx")
	mkdirs(t, host, sbx)
	secret, link, other := filepath.Join(host, "secret"), filepath.Join(d, "backup-secret"), filepath.Join(d, "other")
	writeFile(t, secret, "SECRET-LINKED\n", 0o644)
	writeFile(t, other, "PLAIN\n", 0o644)
	if err := os.Link(secret, link); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	bare := runBare(t, sbx, nil, python, "-c", readAll, link)
	if !strings.Contains(bare.stdout, link+" read SECRET-LINKED") {
		t.Fatalf("bare: the link was not read:\n%s%s", bare.stdout, bare.stderr)
	}
	r := runTraced(t, sbx, nil, []string{"--quiet", "--deny-read", secret}, python, "-c", readAll, link, other)
	if !strings.Contains(r.stdout, link+" errno 13\n") || !strings.Contains(r.stdout, other+" read PLAIN") {
		t.Fatalf("want the link denied and the other file read:\n%s%s", r.stdout, r.stderr)
	}
	found := false
	for _, e := range r.report.Denials {
		found = found || (e.Rule == "deny-read" && e.hasResolved(link) && strings.Contains(e.Reason, secret))
	}
	if !found {
		t.Errorf("no deny-read denial of %s naming %s:\n%s", link, secret, r.stderr)
	}
}

// TestDenyReadSandboxIsAView: the sandbox is a bind mount of a directory
// inside a denied tree (--deny-read /home with --write /work, /work being
// /home/u/project mounted there, as containers do): it stays readable and
// writable, as a sandbox nested in a denied tree does; the rest of the tree
// through another mount does not. Root only.
func TestDenyReadSandboxIsAView(t *testing.T) {
	base := mountNSDirs(t, "home/u/project", "home/u/.ssh", "work")
	home, work := filepath.Join(base, "home"), filepath.Join(base, "work")
	writeFile(t, filepath.Join(home, "u", "project", "data.txt"), "PROJECT\n", 0o644)
	writeFile(t, filepath.Join(home, "u", ".ssh", "id"), "SECRET-KEY\n", 0o600)
	script := `mount --bind "$1/u/project" "$2" && shift 2 && exec "$@"`
	rp := filepath.Join(t.TempDir(), "r.json")
	argv := []string{"unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", home, work,
		tcBin, "run", "-q", "--write", work, "--deny-read", home, "--report", rp, "--",
		python, "-c", readAll + "\nopen('" + work + "/new.txt', 'w').write('x')\nprint('wrote')",
		filepath.Join(work, "data.txt"), filepath.Join(home, "u", ".ssh", "id")}
	r := execute(t, "", os.Environ(), argv)
	if !strings.Contains(r.stdout, filepath.Join(work, "data.txt")+" read PROJECT") || !strings.Contains(r.stdout, "wrote") {
		t.Errorf("the sandbox was not readable and writable:\n%s%s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, filepath.Join(home, "u", ".ssh", "id")+" errno 13") {
		t.Errorf("the denied tree was read:\n%s%s", r.stdout, r.stderr)
	}
}

// swapRead waits for the file named by its second argument to exist, then
// reads the first (the tree's side of TestDenyReadLinkSwapped).
const swapRead = `
import os, sys, time
for _ in range(1000):
    if os.path.exists(sys.argv[2]):
        break
    time.sleep(0.01)
try:
    print("read", open(sys.argv[1]).read().strip())
except OSError as e:
    print("errno", e.errno)
`

// TestDenyReadLinkSwapped: a Kubernetes secret volume's layout (kubelet's
// atomic writer): token -> ..data/token, ..data -> ..<timestamp>. At a
// rotation kubelet writes a new timestamped directory, swaps ..data and
// removes the old one. The deny-read entry, given as vol/token, was
// resolved once at the start, and after the swap the same path read the
// new token (round 58 of the red team). The entry is followed again at
// every checked read. Any user.
func TestDenyReadLinkSwapped(t *testing.T) {
	d := realDir(t)
	vol, sbx := filepath.Join(d, "vol"), filepath.Join(d, "sbx")
	mkdirs(t, filepath.Join(vol, "..2024_01_01_v1"), sbx)
	writeFile(t, filepath.Join(vol, "..2024_01_01_v1", "token"), "OLD-TOKEN\n", 0o644)
	for _, l := range [][2]string{{"..2024_01_01_v1", "..data"}, {"..data/token", "token"}} {
		if err := os.Symlink(l[0], filepath.Join(vol, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	token, marker := filepath.Join(vol, "token"), filepath.Join(d, "swapped")
	rotate := func() {
		time.Sleep(300 * time.Millisecond)
		mkdirs(t, filepath.Join(vol, "..2024_01_01_v2"))
		writeFile(t, filepath.Join(vol, "..2024_01_01_v2", "token"), "NEW-TOKEN\n", 0o644)
		tmp := filepath.Join(vol, "..data_tmp")
		if err := os.Symlink("..2024_01_01_v2", tmp); err != nil {
			t.Error(err)
		}
		if err := os.Rename(tmp, filepath.Join(vol, "..data")); err != nil {
			t.Error(err)
		}
		os.RemoveAll(filepath.Join(vol, "..2024_01_01_v1"))
		writeFile(t, marker, "", 0o644)
	}
	go rotate()
	r := runTraced(t, sbx, nil, []string{"--quiet", "--deny-read", token}, python, "-c", swapRead, token, marker)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the rotation did not happen: %v", err)
	}
	if !strings.Contains(r.stdout, "errno 13") {
		t.Fatalf("after the rotation the denied path was read:\n%s%s", r.stdout, r.stderr)
	}
	found := false
	for _, e := range r.report.Denials {
		found = found || (e.Rule == "deny-read" && strings.Contains(e.Reason, token))
	}
	if !found {
		t.Errorf("no deny-read denial naming %s:\n%s", token, r.report.denialList())
	}
	// Ground truth: bare, after a rotation, the path reads the new token.
	os.Remove(marker)
	go rotateAgain(t, vol, marker)
	bare := runBare(t, sbx, nil, python, "-c", swapRead, token, marker)
	if !strings.Contains(bare.stdout, "read NEW-TOKEN-2") {
		t.Errorf("bare, after the rotation: %s%s", bare.stdout, bare.stderr)
	}
}

// rotateAgain is a second kubelet rotation (v3) for the bare run.
func rotateAgain(t *testing.T, vol, marker string) {
	time.Sleep(300 * time.Millisecond)
	mkdirs(t, filepath.Join(vol, "..2024_01_01_v3"))
	writeFile(t, filepath.Join(vol, "..2024_01_01_v3", "token"), "NEW-TOKEN-2\n", 0o644)
	tmp := filepath.Join(vol, "..data_tmp")
	os.Symlink("..2024_01_01_v3", tmp)
	os.Rename(tmp, filepath.Join(vol, "..data"))
	writeFile(t, marker, "", 0o644)
}

// TestUnresolvableReadKind: a read-only open that tracecell cannot resolve
// (through /proc/<pid>/root of a process in another mount namespace) is
// denied as unresolvable and reported as a read, not a write (round 58 of
// the red team). Root only.
func TestUnresolvableReadKind(t *testing.T) {
	base := mountNSDirs(t, "home/.ssh", "keys", "sbx")
	writeFile(t, filepath.Join(base, "home", ".ssh", "id"), "KEY\n", 0o600)
	other := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		`mount --bind "$0/home/.ssh" "$0/keys" && exec sleep 30`, base)
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	p := fmt.Sprintf("/proc/%d/root%s/keys/id", other.Process.Pid, base)
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(p); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := runTraced(t, filepath.Join(base, "sbx"), nil, []string{"--quiet", "--deny-read", filepath.Join(base, "home", ".ssh")}, "/bin/cat", p)
	if r.status == 0 || strings.Contains(r.stdout, "KEY") {
		t.Fatalf("the key was read (status %d): %s", r.status, r.stdout)
	}
	for _, e := range r.report.Denials {
		if e.Rule == "unresolvable-path" && e.Kind != "read" {
			t.Errorf("an unresolvable read-only open reported as %q: %v", e.Kind, e)
		}
	}
}

// TestDenyReadSymlinkedHome: --deny-read of a home directory named through
// a symlink (/home -> /data/home) with the sandbox inside it: the sandbox
// stays readable (the more specific grant), the rest of the home does not
// (round 59 of the red team: the entry followed through its symlink was
// denied without the carve-out, and the tree could not read its own
// sandbox). Any user.
func TestDenyReadSymlinkedHome(t *testing.T) {
	d := realDir(t)
	real := filepath.Join(d, "data", "home", "u")
	mkdirs(t, filepath.Join(real, "project"))
	if err := os.Symlink(filepath.Join(d, "data", "home"), filepath.Join(d, "home")); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(d, "home", "u")
	writeFile(t, filepath.Join(real, "project", "notes.txt"), "MINE\n", 0o644)
	writeFile(t, filepath.Join(real, ".netrc"), "SECRET\n", 0o644)
	r := runTraced(t, filepath.Join(home, "project"), nil, []string{"--quiet", "--deny-read", home}, python, "-c", readAll,
		filepath.Join(home, "project", "notes.txt"), filepath.Join(home, ".netrc"))
	if !strings.Contains(r.stdout, "notes.txt read MINE") || !strings.Contains(r.stdout, ".netrc errno 13") {
		t.Errorf("want the sandbox read and the rest of the home denied:\n%s%s", r.stdout, r.stderr)
	}
}

// TestDenyReadNextVersion: kubelet writes a Kubernetes volume's next
// version (..<time>/token) before it swaps ..data to it; a tree watching
// the volume opened the new token in between (round 59 of the red team).
// The other versions beside the one the links lead to are denied too.
// Any user.
func TestDenyReadNextVersion(t *testing.T) {
	d := realDir(t)
	vol, sbx := filepath.Join(d, "vol"), filepath.Join(d, "sbx")
	mkdirs(t, filepath.Join(vol, "..2024_01_01_v1"), sbx)
	writeFile(t, filepath.Join(vol, "..2024_01_01_v1", "token"), "OLD-TOKEN\n", 0o644)
	writeFile(t, filepath.Join(vol, "..2024_01_01_v1", "ca.crt"), "CA\n", 0o644)
	for _, l := range [][2]string{{"..2024_01_01_v1", "..data"}, {"..data/token", "token"}, {"..data/ca.crt", "ca.crt"}} {
		if err := os.Symlink(l[0], filepath.Join(vol, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	next, marker := filepath.Join(vol, "..2024_01_02_v2", "token"), filepath.Join(d, "written")
	go func() {
		time.Sleep(300 * time.Millisecond)
		mkdirs(t, filepath.Dir(next))
		writeFile(t, next, "NEXT-TOKEN\n", 0o644)
		writeFile(t, marker, "", 0o644)
	}()
	r := runTraced(t, sbx, nil, []string{"--quiet", "--deny-read", filepath.Join(vol, "token")}, python, "-c", swapRead, next, marker)
	if !strings.Contains(r.stdout, "errno 13") {
		t.Fatalf("the next version was read before the swap:\n%s%s", r.stdout, r.stderr)
	}
	// The volume's other keys stay readable; bare, the next version is.
	r = runTraced(t, sbx, nil, []string{"--quiet", "--deny-read", filepath.Join(vol, "token")}, python, "-c", readAll, filepath.Join(vol, "ca.crt"))
	if !strings.Contains(r.stdout, "read CA") {
		t.Errorf("another key of the volume was denied:\n%s%s", r.stdout, r.stderr)
	}
	if bare := runBare(t, sbx, nil, python, "-c", readAll, next); !strings.Contains(bare.stdout, "read NEXT-TOKEN") {
		t.Errorf("bare: %s%s", bare.stdout, bare.stderr)
	}
}

// TestDenyReadOverlayBelowItsLayer: an overlay mounted below its own lower
// layer (as an overlayroot "/" whose lower layer is also mounted at
// /media/root-ro): following its views nested the layer in itself without
// end, and every run with a --deny-read hung at its start (round 59 of the
// red team). The run starts, and the denied files are denied through the
// overlay and through a bind mount of it. Root only.
func TestDenyReadOverlayBelowItsLayer(t *testing.T) {
	base := mountNSDirs(t, "data/D/vol", "up", "work", "sbx", "other")
	D := filepath.Join(base, "data", "D")
	writeFile(t, filepath.Join(D, "secret.txt"), "TOPSECRET\n", 0o600)
	script := `mount -t overlay overlay -o "lowerdir=$1,upperdir=$2/up,workdir=$2/work" "$1/vol" || exit 99
mount --bind "$1/vol" "$2/other" && shift 2 && exec "$@"`
	rp := filepath.Join(t.TempDir(), "r.json")
	r := execute(t, "", os.Environ(), []string{"unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", D, base,
		tcBin, "run", "-q", "--write", filepath.Join(base, "sbx"), "--deny-read", D, "--report", rp, "--",
		python, "-c", readAll, filepath.Join(D, "vol", "secret.txt"), filepath.Join(base, "other", "secret.txt")})
	if r.status == 99 {
		t.Skipf("no overlayfs here: %s", r.stderr)
	}
	if r.status != 0 || strings.Contains(r.stdout, "TOPSECRET") || strings.Count(r.stdout, "errno 13") != 2 {
		t.Errorf("status %d, want both reads denied:\n%s%s", r.status, r.stdout, r.stderr)
	}
}

// TestDenyReadNextVersionLayouts: the atomic writer's other versions are
// found from the entry's resolved path, so they are denied when the entry is
// named through a symlinked parent (/var/run -> /run, the usual path of a
// service-account token) and for a nested key (vol/sub -> ..data/sub), where
// no pattern was made (round 60 of the red team). Any user.
func TestDenyReadNextVersionLayouts(t *testing.T) {
	for _, tc := range []struct{ name, key string }{{"symlinked-parent", "token"}, {"nested-key", "sub/key"}} {
		t.Run(tc.name, func(t *testing.T) {
			d := realDir(t)
			vol, sbx := filepath.Join(d, "run", "secrets", "vol"), filepath.Join(d, "sbx")
			mkdirs(t, filepath.Join(vol, "..v1", filepath.Dir(tc.key)), filepath.Join(vol, "..v2", filepath.Dir(tc.key)), sbx)
			writeFile(t, filepath.Join(vol, "..v1", tc.key), "OLD\n", 0o644)
			writeFile(t, filepath.Join(vol, "..v2", tc.key), "NEXT\n", 0o644) // written, ..data not swapped yet
			first, _, _ := strings.Cut(tc.key, "/")
			for _, l := range [][2]string{{"..v1", "..data"}, {"..data/" + first, first}} {
				if err := os.Symlink(l[0], filepath.Join(vol, l[1])); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(filepath.Join(d, "run"), filepath.Join(d, "varrun")); err != nil {
				t.Fatal(err)
			}
			entry := filepath.Join(d, "varrun", "secrets", "vol", tc.key)
			next := filepath.Join(vol, "..v2", tc.key)
			r := runTraced(t, sbx, nil, []string{"--quiet", "--deny-read", entry}, python, "-c", readAll, entry, next)
			if strings.Contains(r.stdout, " read ") || strings.Count(r.stdout, "errno 13") != 2 {
				t.Errorf("want the entry and its next version denied:\n%s%s", r.stdout, r.stderr)
			}
		})
	}
}

// TestDenyReadNextVersionThroughView: the volume is also mounted elsewhere
// (as a pod's volumes are under /var/lib/kubelet on a node): its next
// version, and after a rotation its current token, were readable through
// that mount (round 60 of the red team). Root only.
func TestDenyReadNextVersionThroughView(t *testing.T) {
	base := mountNSDirs(t, "vol", "view", "sbx")
	script := `mount -t tmpfs vol "$1/vol" && cd "$1/vol" && mkdir ..v1 ..v2 && echo OLD > ..v1/token && echo NEXT > ..v2/token &&
ln -s ..v1 ..data && ln -s ..data/token token && mount --bind "$1/vol" "$1/view" && shift && exec "$@"`
	r := execute(t, "", os.Environ(), []string{"unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", base,
		tcBin, "run", "-q", "--write", filepath.Join(base, "sbx"), "--deny-read", filepath.Join(base, "vol", "token"), "--",
		python, "-c", readAll, filepath.Join(base, "view", "..v2", "token"), filepath.Join(base, "view", "token")})
	if strings.Contains(r.stdout, " read ") || strings.Count(r.stdout, "errno 13") != 2 {
		t.Errorf("want the versions denied through the other mount (status %d):\n%s%s", r.status, r.stdout, r.stderr)
	}
}
