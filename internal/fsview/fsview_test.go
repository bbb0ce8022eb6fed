package fsview

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tracecell/tracecell/pathres"
)

// TestParseMountinfo: the fields fsPlace needs, escapes undone.
func TestParseMountinfo(t *testing.T) {
	b := []byte("22 1 0:21 / /proc rw,nosuid - proc proc rw\n" +
		"31 1 8:1 /srv/data /mnt/my\\040data rw - ext4 /dev/sda1 rw\n" +
		"bad line\n")
	m := parseMountinfo(b)
	if len(m) != 2 {
		t.Fatalf("%d mounts, want 2: %+v", len(m), m)
	}
	if e := m[31]; e.dev != "8:1" || e.root != "/srv/data" || e.point != "/mnt/my data" {
		t.Errorf("mount 31 = %+v", e)
	}
	for in, want := range map[string]string{`a\040b`: "a b", `a\134b`: `a\b`, `a\04`: `a\04`, `plain`: "plain"} {
		if got := unescapeOctal(in); got != want {
			t.Errorf("unescapeOctal(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFsPlace: a directory's place is the mount's root joined with the
// path below the mount point, so that two mounts of the same files (a bind
// mount of a sandbox at another path) name it alike (red team, round 51).
// The mount table here is made up around this directory's real mount id.
func TestFsPlace(t *testing.T) {
	dir := t.TempDir()
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	sub := filepath.Join(dir, "out")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	id, err := pathres.StatID(sub, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    mountEntry
		want string
		ok   bool
	}{
		{"root-mount", mountEntry{"8:1", "/", "/", false}, sub, true},
		{"bind-of-a-subtree", mountEntry{"8:1", "/srv/sbx", dir, false}, "/srv/sbx/out", true},
		{"point-elsewhere", mountEntry{"8:1", "/", "/elsewhere", false}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := fsPlace(sub, map[uint64]mountEntry{id.Mnt: tc.m})
			if ok != tc.ok || ok && (p.path != tc.want || p.dev != "8:1") {
				t.Errorf("fsPlace = %+v, %v; want %q, %v", p, ok, tc.want, tc.ok)
			}
		})
	}
	if _, ok := fsPlace(sub, map[uint64]mountEntry{}); ok {
		t.Errorf("a mount missing from the table gave a place")
	}
}

// TestOverlayAliases: a root seen through an overlay mount is also its
// place in each layer, and a root in a layer is also its place in the
// merged view (red team, round 52); escapes in the super options undone.
func TestOverlayAliases(t *testing.T) {
	mi := []byte("40 1 0:50 / /srv/merged rw,relatime shared:9 - overlay overlay rw,lowerdir=/srv/low\\:er:/srv/low2,upperdir=/srv/up,workdir=/srv/work\n" +
		"41 1 0:51 / /srv/m2 rw - overlay overlay rw,lowerdir+=/srv/a,datadir+=/srv/d,upperdir=/srv/u2,workdir=/srv/w2\n" +
		"42 1 8:1 / / rw - ext4 /dev/sda1 rw\n")
	ovs := parseOverlays(mi)
	if len(ovs) != 2 || ovs[0].point != "/srv/merged" || len(ovs[0].layers) != 3 || ovs[0].layers[0] != "/srv/low:er" || len(ovs[1].layers) != 3 {
		t.Fatalf("overlays %+v", ovs)
	}
	for _, tc := range []struct {
		name  string
		roots []string
		in    string // a path that must map to the root
		out   string // one that must not
	}{
		{"root-is-merged", []string{"/srv/merged"}, "/srv/up/t.jsonl", "/srv/work/t.jsonl"},
		{"root-below-merged", []string{"/srv/merged/sbx"}, "/srv/up/sbx/out/r.json", "/srv/up/other/r.json"},
		{"root-is-upper", []string{"/srv/up/sbx"}, "/srv/merged/sbx/t.jsonl", "/srv/merged/t.jsonl"},
		{"root-in-a-lower", []string{"/srv/low2"}, "/srv/merged/x", "/srv/m2/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			al := overlayAliases(ovs, tc.roots, nil)
			hit := func(p string) bool {
				for a := range al {
					if _, ok := below(p, a); ok {
						return true
					}
				}
				return false
			}
			if !hit(tc.in) {
				t.Errorf("%s not seen as inside %v (aliases %v)", tc.in, tc.roots, al)
			}
			if hit(tc.out) {
				t.Errorf("%s seen as inside %v (aliases %v)", tc.out, tc.roots, al)
			}
		})
	}
}

// Views of a path that does not exist are none, and a path is never its
// own view.
func TestViewsSelf(t *testing.T) {
	if v := Views("/nonexistent-tracecell-view"); v != nil {
		t.Errorf("Views of a missing path: %v", v)
	}
	d := t.TempDir()
	for _, v := range Views(d) {
		if v == d {
			t.Errorf("Views(%s) lists itself: %v", d, Views(d))
		}
	}
}
