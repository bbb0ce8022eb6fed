package fsview

import (
	"os"
	"path/filepath"
	"strings"
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
	if v, err := Views("/nonexistent-tracecell-view"); v != nil || err != nil {
		t.Errorf("Views of a missing path: %v, %v", v, err)
	}
	d := t.TempDir()
	vs, err := Views(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Path == d {
			t.Errorf("Views(%s) lists itself: %v", d, vs)
		}
	}
}

// Mountinfo separates its fields with spaces only: a name with a vertical
// tab or an ideographic space (U+3000) is one field (round 57 of the red
// team: strings.Fields cut it and the mount was lost); the data-only
// layers of "lowerdir=A::B" (6.5) leave no empty layer.
func TestMountinfoNames(t *testing.T) {
	mi := []byte("50 1 0:60 /data /srv/alias\u3000x rw - ext4 /dev/sdb rw\n" +
		"51 1 0:60 /data /srv/alias\vy rw - ext4 /dev/sdb rw\n" +
		"52 1 0:61 / /srv/m\u3000n ro - overlay overlay ro,lowerdir=/srv/meta::/srv/blobs,redirect_dir=on\n")
	ms := parseMountinfo(mi)
	if ms[50].point != "/srv/alias\u3000x" || ms[51].point != "/srv/alias\vy" || ms[50].root != "/data" {
		t.Errorf("mounts %+v", ms)
	}
	ovs := parseOverlays(mi)
	if len(ovs) != 1 || ovs[0].point != "/srv/m\u3000n" || ovs[0].id != 52 || strings.Join(ovs[0].layers, ",") != "/srv/meta,/srv/blobs" {
		t.Errorf("overlays %+v", ovs)
	}
}

// A layer is compared only where it is one here: not a path missing in this
// namespace, not a path inside the overlay's own mount (the host's layer
// names seen from inside a container whose root is the overlay).
func TestLocalLayers(t *testing.T) {
	d := t.TempDir()
	id, err := pathres.StatID(d, true)
	if err != nil {
		t.Fatal(err)
	}
	ovs := localLayers([]overlay{
		{id: id.Mnt + 1000, layers: []string{d, filepath.Join(d, "missing"), "relative"}},
		{id: id.Mnt, layers: []string{d}},
	})
	if got := strings.Join(ovs[0].layers, ","); got != d+",," {
		t.Errorf("layers of another mount: %q, want %q", got, d+",,")
	}
	if ovs[1].layers[0] != "" {
		t.Errorf("a layer inside the overlay's own mount was kept: %q", ovs[1].layers[0])
	}
}
