package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// rawRead is the tree's side of TestDenyReadRawDevice: read the file the
// operator denied, then scan the block device it is stored on for its
// bytes.
const rawRead = `
import sys
secret, dev, marker = sys.argv[1], sys.argv[2], sys.argv[3].encode()
try:
    open(secret, "rb").read()
    print("file: read")
except OSError as e:
    print("file: errno=%d" % e.errno)
try:
    with open(dev, "rb") as f:
        found = marker in f.read(64 << 20)
    print("device: found" if found else "device: read, not found")
except OSError as e:
    print("device: errno=%d" % e.errno)
`

// TestDenyReadRawDevice: where reads are restricted, a tree that may open
// the block device a file is stored on (root here) must not read the
// file's bytes from the raw blocks. Round 56 of the red team read a
// --deny-read file from /dev/loopN while the open of the file itself was
// denied and reported. The device is refused with the rule that protects
// the file (deny-read, or read-not-allowed under --read); --allow-device
// naming it gives it back. Ground truth: the test process finds the
// bytes on the device itself.
func TestDenyReadRawDevice(t *testing.T) {
	mnt := btrfsMount(t)
	dev := mountSource(t, mnt)
	sbx := filepath.Join(mnt, "sbx")
	mkdir(t, sbx)
	var nonce [12]byte
	rand.Read(nonce[:])
	marker := "TRACECELL-RAW-" + hex.EncodeToString(nonce[:])
	secret := filepath.Join(mnt, "secret")
	writeFile(t, secret, strings.Repeat(marker+"\n", 2048), 0o600)
	if err := exec.Command("sync", "-f", secret).Run(); err != nil {
		unix.Sync()
	}
	raw, err := os.ReadFile(dev)
	if err != nil || !bytes.Contains(raw, []byte(marker)) {
		t.Skipf("the test cannot find the file's bytes on %s itself (%v): nothing to show", dev, err)
	}

	cases := []struct {
		name   string
		flags  []string
		device string // the tree's result for the device
		rule   string
	}{
		{"deny-read", []string{"--deny-read", secret}, "device: errno=13", "deny-read"},
		{"read-roots", []string{"--read", sbx}, "device: errno=13", "read-not-allowed"},
		{"allow-device", []string{"--deny-read", secret, "--allow-device", dev}, "device: found", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runTraced(t, sbx, nil, append([]string{"--quiet"}, c.flags...), python, "-c", rawRead, secret, dev, marker)
			if !strings.Contains(r.stdout, "file: errno=13") || !strings.Contains(r.stdout, c.device+"\n") {
				t.Fatalf("want the file denied and %q, got (status %d):\n%s%s", c.device, r.status, r.stdout, r.stderr)
			}
			var rules []string
			for _, d := range r.report.Denials {
				if len(d.Paths) > 0 && d.Paths[0].Resolved == dev {
					rules = append(rules, d.Rule)
				}
			}
			want := []string{}
			if c.rule != "" {
				want = []string{c.rule}
			}
			if strings.Join(rules, ",") != strings.Join(want, ",") {
				t.Errorf("denials of %s in the report: %v, want %v", dev, rules, want)
			}
		})
	}
}

// mountSource is the device mountinfo names for the file system mounted at
// mnt (a loop device for btrfsMount's image).
func mountSource(t *testing.T, mnt string) string {
	t.Helper()
	for _, m := range mountTable(t) {
		if m.point == mnt {
			return m.source
		}
	}
	t.Fatalf("%s is not in /proc/self/mountinfo", mnt)
	return ""
}

// mountLine is one mount of /proc/self/mountinfo: where, which file system
// type and its source.
type mountLine struct{ point, fstype, source string }

// mountTable reads this process's mounts.
func mountTable(t *testing.T) []mountLine {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []mountLine
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, " ")
		for i, x := range f {
			if x == "-" && i > 4 && i+2 < len(f) {
				out = append(out, mountLine{point: f[4], fstype: f[i+1], source: f[i+2]})
				break
			}
		}
	}
	return out
}
