package fsview

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tracecell/tracecell/pathres"
)

// A directory can be reached under more than one path: a bind mount of a
// writable root (or of a directory inside one) at another place shows the
// same files, so comparing path strings alone let --report alias/out/r.json
// land in the sandbox (red team, round 51). fsPlace names a directory by
// where it is in its file system instead: the device and the path from
// that file system's own root, as /proc/self/mountinfo gives them for the
// mount the directory is reached through (its "root" field: the subtree
// the mount shows).

// place is a directory's device ("major:minor") and its path inside that
// file system.
type place struct {
	dev, path string
}

// mountEntry is one line of /proc/self/mountinfo: its device, the path
// inside the file system that the mount shows (root), and where (point).
type mountEntry struct {
	dev, root, point string
	ro               bool // mounted read-only ("ro" in its mount options)
}

// parseMountinfo reads the lines "ID PARENT MAJ:MIN ROOT POINT ..." of
// /proc/<pid>/mountinfo (Documentation/filesystems/proc.rst), by mount id;
// ROOT and POINT have their spaces, tabs, newlines and backslashes written
// as octal escapes.
func parseMountinfo(b []byte) map[uint64]mountEntry {
	out := map[uint64]mountEntry{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := mountFields(string(line))
		if len(f) < 5 {
			continue
		}
		id, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		ro := false
		if len(f) > 5 {
			for _, o := range strings.Split(f[5], ",") {
				ro = ro || o == "ro"
			}
		}
		out[id] = mountEntry{dev: f[2], root: unescapeOctal(f[3]), point: unescapeOctal(f[4]), ro: ro}
	}
	return out
}

// mountFields splits a mountinfo line at its spaces, the only separator:
// the kernel escapes a space, tab, newline or backslash in a name
// (show_mountinfo, seq_path_root with " \t\n\\") but no other byte, so
// strings.Fields, which also splits at \v, \f, \r and Unicode spaces
// (U+3000, the ideographic space of Japanese names), cut such a mount's
// name and lost it (round 57 of the red team).
func mountFields(line string) []string {
	f := strings.Split(line, " ")
	out := f[:0]
	for _, x := range f {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// unescapeOctal undoes mountinfo's \ooo escapes.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// fsPlace is where the directory dir (absolute, symlinks resolved) is in
// its file system, given the mount table; ok is false when it cannot be
// told (the directory is missing, its mount is not in the table).
func fsPlace(dir string, mounts map[uint64]mountEntry) (place, bool) {
	id, err := pathres.StatID(dir, true)
	if err != nil {
		return place{}, false
	}
	m, ok := mounts[id.Mnt]
	if !ok {
		return place{}, false
	}
	rel := dir
	if m.point != "/" {
		r, ok := strings.CutPrefix(dir, m.point)
		if !ok || (r != "" && r[0] != '/') {
			return place{}, false
		}
		rel = r
	}
	return place{dev: m.dev, path: path.Join(m.root, "/", rel)}, true
}

// overlay is an overlayfs mount: where it is mounted and its layers (the
// upper directory, the lower ones), as its super options name them.
type overlay struct {
	id     uint64 // its mount id
	point  string
	layers []string
}

// parseOverlays lists the overlay mounts of a mountinfo text: fields after
// the "-" separator are FSTYPE SOURCE SUPEROPTIONS, and an overlay's super
// options hold upperdir=, lowerdir= (layers split at ':', "\:" a colon in a
// name) and, mounted with the new mount API (6.8), lowerdir+= and
// datadir+= one layer each.
func parseOverlays(b []byte) []overlay {
	var out []overlay
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := mountFields(string(line))
		sep := -1
		for i, x := range f {
			if x == "-" && i >= 5 {
				sep = i
				break
			}
		}
		if sep < 0 || sep+3 >= len(f) || f[sep+1] != "overlay" {
			continue
		}
		id, _ := strconv.ParseUint(f[0], 10, 64)
		o := overlay{id: id, point: unescapeOctal(f[4])}
		for _, opt := range strings.Split(f[sep+3], ",") {
			k, v, _ := strings.Cut(opt, "=")
			switch k {
			case "upperdir", "lowerdir+", "datadir+":
				o.layers = append(o.layers, unescapeOctal(v))
			case "lowerdir":
				// "A::B" (6.5): B is a data-only layer; the empty
				// string between is no layer (round 57: it counted as
				// one, below which every path lies).
				for _, l := range splitUnescaped(unescapeOctal(v), ':') {
					if l != "" {
						o.layers = append(o.layers, l)
					}
				}
			}
		}
		out = append(out, o)
	}
	return out
}

// splitUnescaped splits s at sep, not at a sep written "\sep".
func splitUnescaped(s string, sep byte) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == sep:
			cur.WriteByte(sep)
			i++
		case s[i] == sep:
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(s[i])
		}
	}
	return append(out, cur.String())
}

// below is p's path below dir ("" for dir itself), ok false when p is not
// dir or below it.
func below(p, dir string) (string, bool) {
	if p == dir {
		return "", true
	}
	if r, ok := strings.CutPrefix(p, strings.TrimSuffix(dir, "/")+"/"); ok {
		return r, true
	}
	return "", false
}

// localLayers resolves the layers of overlays as they are in this mount
// namespace, in place; a layer that cannot be one here becomes "" and is
// never compared:
//   - mountinfo names a layer as mount(2) was given it: through a symlink,
//     it is compared as it resolves now (round 53 of the red team);
//   - a layer that is not there under its name (a host path in a
//     container, where mountinfo names the layers as the host's mount(2)
//     was given them) could by its name lie in a root or a deny-read tree
//     of this namespace, and make the whole merged view, "/" in a
//     container, one of its views (round 57);
//   - nor one that is there only inside the overlay itself: after a
//     pivot_root into the overlay, the host's name of a layer resolves in
//     the merged view (a directory of the image, say), never to the layer.
func localLayers(overlays []overlay) []overlay {
	for i := range overlays {
		for j, l := range overlays[i].layers {
			r, err := filepath.EvalSymlinks(l)
			if err != nil || !filepath.IsAbs(l) {
				overlays[i].layers[j] = ""
				continue
			}
			if id, err := pathres.StatID(r, true); err != nil || id.Mnt == overlays[i].id {
				overlays[i].layers[j] = ""
				continue
			}
			overlays[i].layers[j] = r
		}
	}
	return overlays
}

// overlayAliases maps the other paths that show a root's files through an
// overlay mount to that root: a root in the merged view is also its place
// in each layer (a file created there lands in the upper directory), and a
// root in a layer is also its place in the merged view (round 52 of the red
// team: a trace in the upper directory of an overlay whose merged view was
// the writable root was the tree's to rewrite). Refusing an output in a
// lower layer the tree cannot write is more than needed, and harmless.
func overlayAliases(overlays []overlay, roots []string, mounts map[uint64]mountEntry) map[string]string {
	out := map[string]string{}
	for _, r := range roots {
		rp, rok := fsPlace(r, mounts)
		for _, o := range overlays {
			// A layer named through another mount of the root (a bind
			// mount): compared by place too (round 55 of the red team).
			for _, l := range o.layers {
				if l == "" {
					continue
				}
				lp, lok := fsPlace(l, mounts)
				if !rok || !lok || rp.dev != lp.dev {
					continue
				}
				if rel, ok := below(rp.path, lp.path); ok {
					out[filepath.Join(o.point, rel)] = r
				}
				if _, ok := below(lp.path, rp.path); ok {
					out[o.point] = r
				}
			}
			if rel, ok := below(r, o.point); ok {
				for _, l := range o.layers {
					if l != "" {
						out[filepath.Join(l, rel)] = r
					}
				}
			}
			for _, l := range o.layers {
				if l == "" {
					continue
				}
				if rel, ok := below(r, l); ok {
					out[filepath.Join(o.point, rel)] = r
				}
				// A layer inside the root: the tree changes what the
				// whole merged view shows (round 54).
				if _, ok := below(l, r); ok {
					out[o.point] = r
				}
			}
		}
	}
	return out
}

// Inside is the root of roots (absolute, symlinks resolved) whose files the
// directory dir (absolute, symlinks resolved) is among, "" for none: dir is
// a root or below one; or below an overlay's other view of a root
// (overlayAliases); or its place in its file system (fsPlace) lies in a
// place whose files the root's tree can write: the root's own (a bind
// mount of a root or of a directory inside one shares it), or that of any
// mount below the root (a volume mounted inside the sandbox and also
// elsewhere: round 53 of the red team). Not seen (README, Known gaps): a
// file system that shows another's files in other ways (FUSE bindfs, an
// NFS export mounted back) and overlay layers that mountinfo does not name
// as they are now (given relative, renamed since).
func Inside(dir string, roots []string) string { return inside(dir, roots, false) }

// InsideWritable is Inside for what the tree could change rather than see:
// a mount below a root that is read-only does not count (the kernel
// answers EROFS through it). For tracecell's own outputs; the session
// server, whose sessions must not even read each other's files, uses
// Inside.
func InsideWritable(dir string, roots []string) string { return inside(dir, roots, true) }

func inside(dir string, roots []string, writable bool) string {
	for _, r := range roots {
		if _, ok := below(dir, r); ok {
			return r
		}
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	mounts := parseMountinfo(b)
	overlays := localLayers(parseOverlays(b))
	aliases := overlayAliases(overlays, roots, mounts)
	for a, r := range aliases {
		if _, ok := below(dir, a); ok {
			return r
		}
	}
	d, ok := fsPlace(dir, mounts)
	if !ok {
		return ""
	}
	in := func(r string) bool {
		for _, p := range reachablePlaces(r, mounts, overlays, writable) {
			if _, ok := below(d.path, p.path); ok && p.dev == d.dev {
				return true
			}
		}
		return false
	}
	for _, r := range roots {
		if in(r) {
			return r
		}
	}
	for a, r := range aliases {
		if in(a) {
			return r
		}
	}
	return ""
}

// reachablePlaces are the places whose files a tree that may write r can
// reach: r's own, the whole subtree each mount below r shows (not a
// read-only one when writable is set), and for an overlay mounted below r
// each of its layers, where its files really are (round 54 of the red team:
// its own device hid them).
func reachablePlaces(r string, mounts map[uint64]mountEntry, overlays []overlay, writable bool) []place {
	var out []place
	if p, ok := fsPlace(r, mounts); ok {
		out = append(out, p)
	}
	for _, m := range mounts {
		if rel, ok := below(m.point, r); ok && rel != "" && !(writable && m.ro) {
			out = append(out, place{dev: m.dev, path: m.root})
		}
	}
	for _, o := range overlays {
		if _, ok := below(o.point, r); !ok {
			continue
		}
		for _, l := range o.layers {
			if p, ok := fsPlace(l, mounts); ok {
				out = append(out, p)
			}
		}
	}
	return out
}
