package fsview

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/tracecell/tracecell/pathres"
)

// View is another path that shows some of a path's files through the mount
// table. Inside is set when it shows only a directory strictly inside that
// path (a bind mount of a subdirectory, a file system mounted below it), not
// the path itself: a writable root there is the operator's more specific
// grant (policy: carvedOut).
type View struct {
	Path   string
	Inside bool
}

// MaxViews bounds how many views Views follows; past it Views fails rather
// than return part of them (round 58 of the red team: a store of 4,250
// overlay layers in a denied directory hid a bind mount of one of them).
const MaxViews = 65536

// maxPath is PATH_MAX: a view that long is no path a program names.
const maxPath = 4096

// ErrTooManyViews is Views' error past MaxViews.
var ErrTooManyViews = errors.New("too many other paths show it through the mount table")

// Views are the other paths the mount table shows p's files under (p
// absolute, symlinks resolved), sorted; none when p does not exist or its
// mount cannot be told. For --deny-read, decided by path. A path shows
// some of p's files when its mount is of a file system p's files are on
// and its subtree holds the place of one of them, or lies inside it:
//   - p's own place: a bind mount of p, of a directory above it or below
//     it, the same file system mounted twice;
//   - the file systems mounted below p (a volume inside a denied
//     directory, mounted elsewhere too: round 57 of the red team), and the
//     layers of an overlay mounted below p;
//   - an overlay's other views: its layers for p in its merged view, its
//     merged view for p in (or holding) a layer, by path and by place, as
//     overlayAliases finds them.
//
// Each view found is looked at in turn, so a second mount of an overlay's
// layer is seen too (round 57). The mount table is indexed once, so a host
// with thousands of mounts and layers costs milliseconds, not seconds
// (round 58). Not seen, as with Inside: FUSE bindfs, NFS exports mounted
// back, mounts made later, and the data an overlay keeps at another path of
// a lower layer (redirect_dir, metacopy).
func Views(p string) ([]View, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, nil
	}
	ix := newMountIndex(b)
	seen := map[string]int{p: -1} // path: its index in out
	var out []View
	scanned := map[place]bool{}
	for queue := 0; queue <= len(out); queue++ {
		if len(out) > MaxViews {
			return nil, fmt.Errorf("%w: more than %d", ErrTooManyViews, MaxViews)
		}
		q, qInside := p, false
		if queue > 0 {
			q, qInside = out[queue-1].Path, out[queue-1].Inside
		}
		// A view of a view inside p is inside p too; a path found both
		// ways shows p itself somewhere, and is not.
		var long string
		ix.views(q, scanned, func(v string, inside bool) {
			if len(v) >= maxPath {
				long = v
				return
			}
			inside = inside || qInside
			if i, ok := seen[v]; ok {
				if i >= 0 && !inside {
					out[i].Inside = false
				}
				return
			}
			seen[v] = len(out)
			out = append(out, View{v, inside})
		})
		if long != "" {
			return nil, fmt.Errorf("%w: one is %d bytes long (the mount table nests a file system in itself?)", ErrTooManyViews, len(long))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// mountIndex is the mount table and its overlays, indexed for Views.
type mountIndex struct {
	mounts   map[uint64]mountEntry
	byDev    map[string][]mountEntry
	byPoint  []mountEntry // sorted by point
	overlays []overlay    // layers as they are here (localLayers)
	atPoint  map[string][]int
	atLayer  map[string][]int // a layer's path: the overlays it is a layer of
	layers   []string         // every layer's path, sorted
	layerDev map[string][]layerPlace
	places   map[string]placeOK
	mnt      map[string]uint64 // mountOf, remembered (0: unknown)
}

type layerPlace struct {
	overlay int
	place   place
}

type placeOK struct {
	p  place
	ok bool
}

func newMountIndex(b []byte) *mountIndex {
	ix := &mountIndex{mounts: parseMountinfo(b), byDev: map[string][]mountEntry{}, atPoint: map[string][]int{},
		atLayer: map[string][]int{}, layerDev: map[string][]layerPlace{}, places: map[string]placeOK{}, mnt: map[string]uint64{}}
	for _, m := range ix.mounts {
		ix.byDev[m.dev] = append(ix.byDev[m.dev], m)
		ix.byPoint = append(ix.byPoint, m)
	}
	sort.Slice(ix.byPoint, func(i, j int) bool { return ix.byPoint[i].point < ix.byPoint[j].point })
	ix.overlays = localLayers(parseOverlays(b))
	for i, o := range ix.overlays {
		ix.atPoint[o.point] = append(ix.atPoint[o.point], i)
		for _, l := range o.layers {
			if l == "" {
				continue
			}
			if len(ix.atLayer[l]) == 0 {
				ix.layers = append(ix.layers, l)
			}
			ix.atLayer[l] = append(ix.atLayer[l], i)
			if lp, ok := ix.place(l); ok {
				ix.layerDev[lp.dev] = append(ix.layerDev[lp.dev], layerPlace{i, lp})
			}
		}
	}
	sort.Strings(ix.layers)
	return ix
}

// place is fsPlace, remembered.
func (ix *mountIndex) place(p string) (place, bool) {
	if r, ok := ix.places[p]; ok {
		return r.p, r.ok
	}
	pl, ok := fsPlace(p, ix.mounts)
	ix.places[p] = placeOK{pl, ok}
	return pl, ok
}

// mountOf is the id of the mount p is on (statx, or fdinfo before 5.8),
// remembered; false when p cannot be looked at.
func (ix *mountIndex) mountOf(p string) (uint64, bool) {
	if m, ok := ix.mnt[p]; ok {
		return m, m != 0
	}
	var m uint64
	if id, err := pathres.StatID(p, true); err == nil {
		m = id.Mnt
	}
	ix.mnt[p] = m
	return m, m != 0
}

// ancestors are p and each directory above it, "/" last.
func ancestors(p string) []string {
	out := []string{p}
	for p != "/" && p != "" {
		p = path.Dir(p)
		out = append(out, p)
	}
	return out
}

// sortedBelow calls f for every string of sorted that is below q (not q
// itself).
func sortedBelow(sorted []string, q string, f func(s string)) {
	prefix := strings.TrimSuffix(q, "/") + "/"
	for i := sort.SearchStrings(sorted, prefix); i < len(sorted) && strings.HasPrefix(sorted[i], prefix); i++ {
		f(sorted[i])
	}
}

// views calls add for every path that shows some of q's files, one step
// (Views follows them). A place whose mounts were scanned once is not
// scanned again.
func (ix *mountIndex) views(q string, scanned map[place]bool, add func(string, bool)) {
	// Mounts of the file systems q's files are on.
	sameFS := func(pl place, inside bool) {
		if scanned[pl] {
			return
		}
		scanned[pl] = true
		for _, m := range ix.byDev[pl.dev] {
			if rel, ok := below(pl.path, m.root); ok {
				add(path.Join(m.point, rel), inside)
			} else if _, ok := below(m.root, pl.path); ok {
				add(m.point, true)
			}
		}
	}
	qp, qok := ix.place(q)
	if qok {
		sameFS(qp, false)
	}
	prefix := strings.TrimSuffix(q, "/") + "/"
	for i := sort.Search(len(ix.byPoint), func(i int) bool { return ix.byPoint[i].point >= prefix }); i < len(ix.byPoint) && strings.HasPrefix(ix.byPoint[i].point, prefix); i++ {
		m := ix.byPoint[i]
		sameFS(place{dev: m.dev, path: m.root}, true)
	}
	// Overlays: q in a merged view, or in a layer. Only where q is on that
	// very mount: a path below an overlay's mount point on another mount
	// (/media/root-ro, the lower layer of an overlayroot "/", is mounted
	// there too) is not shown through the overlay, and following it as if
	// it were nested the layer in itself without end (round 59 of the red
	// team). An overlay does not cross mounts inside its layers either.
	if qm, ok := ix.mountOf(q); ok {
		for _, a := range ancestors(q) {
			rel, _ := below(q, a)
			for _, i := range ix.atPoint[a] {
				if ix.overlays[i].id != qm {
					continue
				}
				for _, l := range ix.overlays[i].layers {
					if l != "" {
						add(path.Join(l, rel), false)
					}
				}
			}
			if len(ix.atLayer[a]) > 0 {
				if lm, ok := ix.mountOf(a); ok && lm == qm {
					for _, i := range ix.atLayer[a] {
						add(path.Join(ix.overlays[i].point, rel), false)
					}
				}
			}
		}
	}
	sortedBelow(ix.layers, q, func(l string) {
		for _, i := range ix.atLayer[l] {
			add(ix.overlays[i].point, true)
		}
	})
	for point, idx := range ix.atPoint {
		if rel, ok := below(point, q); ok && rel != "" {
			for _, i := range idx {
				for _, l := range ix.overlays[i].layers {
					if l != "" {
						add(l, true)
					}
				}
			}
		}
	}
	// A layer named through another mount of q's file system: by place.
	if qok {
		for _, lp := range ix.layerDev[qp.dev] {
			if rel, ok := below(qp.path, lp.place.path); ok {
				add(path.Join(ix.overlays[lp.overlay].point, rel), false)
			}
			if _, ok := below(lp.place.path, qp.path); ok {
				add(ix.overlays[lp.overlay].point, true)
			}
		}
	}
}

// FollowLinks follows each of links (deny-read entries given through a
// symlink: absolute, clean) as the kernel would now, and returns the first
// whose target is resolved or a directory above it, with that target; ""
// for none. Both the tracer (every checked path) and the session server (a
// copy's source) ask it, so a link swapped while the tree runs (kubelet
// rotating a token) is followed the same way by both.
func FollowLinks(links []string, resolved string) (given, now string) {
	for _, g := range links {
		r, err := pathres.Resolve(pathres.Task{Tgid: os.Getpid()}, "/", []byte(g), true)
		if err == nil {
			if _, ok := below(resolved, r.Path); ok {
				return g, r.Path
			}
		}
	}
	return "", ""
}
