package tracer

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/report"
)

// ledgerDir is a temporary directory with a ledger and helpers that act
// as the tree (mk records what it makes) and as a host process (the
// plain os calls).
type ledgerDir struct {
	t *testing.T
	d string
	l *ledger
}

func newLedgerDir(t *testing.T) *ledgerDir {
	return &ledgerDir{t: t, d: t.TempDir(), l: newLedger(nil)}
}

func (x *ledgerDir) p(name string) string { return filepath.Join(x.d, name) }

// host makes name as another process would (a directory when it ends in
// "/"), without the ledger.
func (x *ledgerDir) host(name string) {
	x.t.Helper()
	var err error
	if strings.HasSuffix(name, "/") {
		err = os.Mkdir(x.p(name), 0o755)
	} else {
		err = os.WriteFile(x.p(name), []byte("host"), 0o644)
	}
	if err != nil {
		x.t.Fatal(err)
	}
}

// replace removes the tree's name and makes the host's own under it, as a
// host's "unlink stale; create" does. It waits first for the coarse clock
// that birth times come from to move on: where the file system hands the
// freed inode number to the new file at once (ext4, the usual TempDir),
// only the birth time tells the two apart (entryID).
func (x *ledgerDir) replace(name string) {
	x.t.Helper()
	time.Sleep(30 * time.Millisecond)
	if err := os.RemoveAll(x.p(name)); err != nil {
		x.t.Fatal(err)
	}
	x.host(name)
}

// mk makes name as the tree and records it, as callDone does.
func (x *ledgerDir) mk(name string) {
	x.t.Helper()
	x.host(name)
	x.l.record(x.p(strings.TrimSuffix(name, "/")))
}

// TestLedgerOwned: an entry is owned while its name holds what the tree
// made; a host's entry under the same name (F4a) or in the tree's
// directory (F4b) is not; a drop takes the entry and everything below.
func TestLedgerOwned(t *testing.T) {
	x := newLedgerDir(t)
	x.mk("a/")
	x.mk("a/b")
	x.mk("f")
	x.mk("g")
	x.host("a/hostfile")
	x.host("ab")
	x.replace("f") // a host process took the name over
	if err := os.Remove(x.p("g")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path           string
		owned, replace bool
	}{
		{"a", true, false},
		{"a/b", true, false},
		{"a/hostfile", false, false},
		{"a/missing", false, false},
		{"ab", false, false},
		{"f", false, true},
		{"g", false, false}, // gone: nothing there to be the tree's
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			p := x.p(c.path)
			if got := x.l.Owned(p); got != c.owned {
				t.Errorf("Owned = %v, want %v", got, c.owned)
			}
			if got := x.l.Replaced(p); got != c.replace {
				t.Errorf("Replaced = %v, want %v", got, c.replace)
			}
			if got := x.l.Owned(p); got != c.owned {
				t.Errorf("Owned asked again = %v, want %v", got, c.owned)
			}
		})
	}
	t.Run("recreated", func(t *testing.T) {
		// The tree removes the host's entry (it may not: only to test the
		// ledger) and makes its own again: a new object, recorded anew.
		if err := os.Remove(x.p("f")); err != nil {
			t.Fatal(err)
		}
		x.mk("f")
		if !x.l.Owned(x.p("f")) || x.l.Replaced(x.p("f")) {
			t.Errorf("recreated: Owned %v Replaced %v", x.l.Owned(x.p("f")), x.l.Replaced(x.p("f")))
		}
	})
	t.Run("drop", func(t *testing.T) {
		x.l.drop(x.p("a"))
		x.l.drop("") // nothing
		if x.l.Owned(x.p("a")) || x.l.Owned(x.p("a/b")) || !x.l.Owned(x.p("f")) {
			t.Errorf("after drop: a %v a/b %v f %v", x.l.Owned(x.p("a")), x.l.Owned(x.p("a/b")), x.l.Owned(x.p("f")))
		}
	})
}

// TestLedgerRename: a rename of the tree's moves its entries with their
// identities, a renamed-over name of the tree's holds the object moved
// there, an exchange swaps.
func TestLedgerRename(t *testing.T) {
	rename := func(x *ledgerDir, from, to string, exchange bool) {
		t.Helper()
		m := scratchMove{from: x.p(from), to: x.p(to), exchange: exchange}
		if !x.l.involves(m.from, m.to) {
			t.Fatalf("rename %s %s: not involving the ledger", from, to)
		}
		var err error
		if exchange {
			err = unix.Renameat2(unix.AT_FDCWD, m.from, unix.AT_FDCWD, m.to, unix.RENAME_EXCHANGE)
		} else {
			err = os.Rename(m.from, m.to)
		}
		if err != nil {
			t.Fatal(err)
		}
		x.l.renameDone(m)
	}
	owns := func(x *ledgerDir, want map[string]bool) {
		t.Helper()
		for name, w := range want {
			if got := x.l.Owned(x.p(name)); got != w {
				t.Errorf("Owned(%s) = %v, want %v", name, got, w)
			}
		}
	}
	t.Run("directory", func(t *testing.T) {
		x := newLedgerDir(t)
		x.mk("d/")
		x.mk("d/sub/")
		x.mk("d/sub/f")
		x.mk("dx") // a sibling with the prefix
		rename(x, "d", "e", false)
		owns(x, map[string]bool{"e": true, "e/sub": true, "e/sub/f": true, "d": false, "d/sub/f": false, "dx": true})
		if len(x.l.own) != 4 {
			t.Errorf("ledger %v: want the 4 entries", x.l.own)
		}
	})
	t.Run("over its own", func(t *testing.T) {
		x := newLedgerDir(t)
		x.mk("tmp")
		x.mk("final")
		rename(x, "tmp", "final", false)
		owns(x, map[string]bool{"final": true, "tmp": false})
		if x.l.Replaced(x.p("final")) {
			t.Error("final replaced")
		}
	})
	t.Run("from elsewhere over its own", func(t *testing.T) {
		// A file of the writable root (not recorded) moved over the tree's
		// scratch entry: the name holds it now, and it is the tree's.
		x := newLedgerDir(t)
		x.mk("final")
		x.host("sandboxfile")
		rename(x, "sandboxfile", "final", false)
		owns(x, map[string]bool{"final": true})
	})
	t.Run("directory moved in from a writable root", func(t *testing.T) {
		// Not recorded where it was (the sandbox): at its fresh scratch
		// name it is recorded with everything in it.
		x := newLedgerDir(t)
		x.host("sbxdir/")
		x.host("sbxdir/sub/")
		x.host("sbxdir/sub/f")
		m := scratchMove{from: x.p("sbxdir"), to: x.p("moved"), fresh: true}
		if err := os.Rename(m.from, m.to); err != nil {
			t.Fatal(err)
		}
		x.l.renameDone(m)
		owns(x, map[string]bool{"moved": true, "moved/sub": true, "moved/sub/f": true, "sbxdir": false})
	})
	t.Run("exchange", func(t *testing.T) {
		x := newLedgerDir(t)
		x.mk("a/")
		x.mk("a/in")
		x.mk("b")
		rename(x, "a", "b", true)
		owns(x, map[string]bool{"a": true, "b": true, "b/in": true, "a/in": false})
	})
	t.Run("not involved", func(t *testing.T) {
		x := newLedgerDir(t)
		x.mk("mine")
		if x.l.involves(x.p("other"), x.p("other2")) || x.l.involves(x.p("min"), "") {
			t.Error("involves entries it does not touch")
		}
	})
}

// TestLedgerForeign: renaming a directory of the tree's would move every
// entry in it: Foreign names the first that is not the tree's.
func TestLedgerForeign(t *testing.T) {
	x := newLedgerDir(t)
	x.mk("clean/")
	x.mk("clean/a")
	x.mk("clean/sub/")
	x.mk("clean/sub/b")
	x.mk("dirty/")
	x.mk("dirty/sub/")
	x.host("dirty/sub/hostfile")
	x.mk("hostdir/")
	x.host("hostdir/sub/")
	x.mk("empty/")
	cases := []struct{ dir, want string }{
		{"clean", ""},
		{"empty", ""},
		{"dirty", "dirty/sub/hostfile"},
		{"hostdir", "hostdir/sub"},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			want := c.want
			if want != "" {
				want = x.p(want)
			}
			if got := x.l.Foreign(x.p(c.dir)); got != want {
				t.Errorf("Foreign = %q, want %q", got, want)
			}
		})
	}
	t.Run("unlistable", func(t *testing.T) {
		if got := x.l.Foreign(x.p("missing")); !strings.Contains(got, "cannot be listed") {
			t.Errorf("Foreign of a missing directory = %q", got)
		}
		// A FIFO swapped in under the directory's name is named, never
		// opened for reading (which would block until a writer came).
		if err := unix.Mkfifo(x.p("fifo"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := x.l.Foreign(x.p("fifo")); !strings.Contains(got, "cannot be listed") {
			t.Errorf("Foreign of a FIFO = %q", got)
		}
		if err := os.Symlink(x.p("clean"), x.p("link")); err != nil {
			t.Fatal(err)
		}
		if got := x.l.Foreign(x.p("link")); !strings.Contains(got, "cannot be listed") {
			t.Errorf("Foreign of a symlink = %q", got)
		}
	})
}

// TestLedgerLeft: what is left is what still holds the tree's objects,
// outermost first, never nil.
func TestLedgerLeft(t *testing.T) {
	cases := []struct {
		name string
		mk   []string
		host []string // made by a host process after the tree's are removed
		want []string
	}{
		{"empty", nil, nil, []string{}},
		{"nested under a listed directory", []string{"a/", "a/b/", "c/"}, nil, []string{"a", "c"}},
		{"replaced by a host's", []string{"r"}, []string{"r"}, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := newLedgerDir(t)
			for _, n := range c.mk {
				x.mk(n)
			}
			for _, n := range c.host {
				x.replace(n)
			}
			x.l.record(x.p("never-made")) // nothing there: not recorded
			want := []string{}
			for _, w := range c.want {
				want = append(want, x.p(w))
			}
			if got := x.l.left(); !reflect.DeepEqual(got, want) {
				t.Errorf("left = %#v, want %#v", got, want)
			}
		})
	}
}

// TestBoundSocketsCap: past maxBound no socket is recorded.
func TestBoundSocketsCap(t *testing.T) {
	b := boundSockets{}
	for i := range uint64(maxBound) {
		b.add(i + 1)
	}
	if !b.full() || !b.has(1) {
		t.Fatalf("full %v has(1) %v", b.full(), b.has(1))
	}
	b.add(maxBound + 1)
	if b.has(maxBound+1) || len(b) != maxBound {
		t.Fatalf("recorded past the cap: %d sockets", len(b))
	}
}

// TestRecorder: counts are exact, kept events stop at the cap and the rest
// are counted as dropped, every event reaches onEvent.
func TestRecorder(t *testing.T) {
	cases := []struct {
		name      string
		max       int
		decisions []string
		kept      int
		dropped   int
		counts    report.Counts
	}{
		{"under the cap", 0, []string{report.Deny, report.Audit, report.Allow}, 2, 0, report.Counts{Denied: 1, Audited: 1}},
		{"at the cap", 2, []string{report.Deny, report.Deny, report.Deny, report.Audit, report.Allow}, 2, 2, report.Counts{Denied: 3, Audited: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seen := 0
			r := recorder{maxDenials: c.max, onEvent: func(*report.Event) { seen++ }}
			for _, d := range c.decisions {
				r.add(&report.Event{Decision: d})
			}
			if len(r.denials) != c.kept || r.dropped != c.dropped || r.counts != c.counts || seen != len(c.decisions) {
				t.Errorf("kept %d dropped %d counts %+v seen %d; want %d %d %+v %d", len(r.denials), r.dropped, r.counts, seen, c.kept, c.dropped, c.counts, len(c.decisions))
			}
		})
	}
	t.Run("tasks born", func(t *testing.T) {
		var r recorder
		r.taskBorn(&task{tid: 5, tgid: 5})
		r.taskBorn(&task{tid: 6, tgid: 5})
		if r.counts.Processes != 1 || r.counts.Threads != 2 {
			t.Errorf("processes %d threads %d, want 1 2", r.counts.Processes, r.counts.Threads)
		}
	})
}

// TestLedgerScansOnlyNearScratch: renames and removals outside the scratch
// roots need not look at the entries (mayHold) while none lies outside
// them; a RENAME_EXCHANGE that puts entries in a writable root makes every
// path count again. And the caps hold: past maxLedgerEntries nothing more is
// recorded (red team, rounds 46 and 47).
func TestLedgerScansOnlyNearScratch(t *testing.T) {
	d := t.TempDir()
	shm, sbx := filepath.Join(d, "shm"), filepath.Join(d, "sbx")
	for _, p := range []string{shm, sbx, filepath.Join(shm, "a"), filepath.Join(sbx, "x")} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l := newLedger([]string{shm})
	l.record(filepath.Join(shm, "a"))
	for _, c := range []struct {
		from, to  string
		near, inv bool // mayHold of either; involves
	}{
		{filepath.Join(sbx, "x"), filepath.Join(sbx, "y"), false, false},
		{filepath.Join(shm, "a"), filepath.Join(sbx, "y"), true, true},
		{filepath.Join(sbx, "x"), filepath.Join(shm, "b"), true, false},
		{d, filepath.Join(sbx, "y"), true, true}, // d holds the root and its entry
	} {
		if got := l.involves(c.from, c.to); got != c.inv {
			t.Errorf("involves(%s, %s) = %v, want %v", c.from, c.to, got, c.inv)
		}
		if got := l.mayHold(c.from) || l.mayHold(c.to); got != c.near {
			t.Errorf("mayHold(%s or %s) = %v, want %v", c.from, c.to, got, c.near)
		}
	}
	// An exchange put the tree's directory at sbx/x, with an entry below.
	l.put(filepath.Join(sbx, "x"), map[string]entryID{"": {ino: 1}, "/in": {ino: 2}})
	if l.outside != 2 || !l.mayHold(filepath.Join(sbx, "z")) {
		t.Errorf("outside %d, mayHold(sbx/z) %v: want 2, true", l.outside, l.mayHold(filepath.Join(sbx, "z")))
	}
	l.drop(filepath.Join(sbx, "x"))
	if l.outside != 0 || len(l.own) != 1 {
		t.Errorf("after the drop: outside %d, %d entries; want 0 and 1", l.outside, len(l.own))
	}
	// The caps: a full ledger records nothing more, and says so.
	for i := 0; len(l.own) < maxLedgerEntries; i++ {
		l.set(filepath.Join(shm, "f", strconv.Itoa(i)), entryID{ino: uint64(i) + 10})
	}
	l.set(filepath.Join(shm, "one-more"), entryID{ino: 5})
	if len(l.own) != maxLedgerEntries || !l.full([]string{filepath.Join(shm, "two-more")}) {
		t.Errorf("%d entries past the cap %d, full %v", len(l.own), maxLedgerEntries, l.full([]string{"x"}))
	}
}

// TestLedgerRenameNoOpAndWhiteout: a rename of a name onto a hard link of
// the same file is a no-op in the kernel, which returns 0; the ledger
// moved the record and the tree lost its own entry. RENAME_WHITEOUT leaves
// a whiteout of the tree's at the source (red team, round 48). Ground
// truth: the file system after the real calls.
func TestLedgerRenameNoOpAndWhiteout(t *testing.T) {
	d := t.TempDir()
	a, b, c := filepath.Join(d, "a"), filepath.Join(d, "b"), filepath.Join(d, "c")
	if err := os.WriteFile(a, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	l := newLedger([]string{d})
	l.record(a)
	l.record(b)
	if !l.involves(a, b) {
		t.Fatal("involves(a, b) = false for two recorded names")
	}
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(a); err != nil {
		t.Fatalf("the kernel removed %s: %v (the case needs the no-op)", a, err)
	}
	l.renameDone(scratchMove{from: a, to: b})
	if !l.Owned(a) || !l.Owned(b) {
		t.Errorf("after a no-op rename: owned a %v, b %v; want both", l.Owned(a), l.Owned(b))
	}
	// A whiteout: b moves to c, and b becomes a 0:0 character device.
	err := unix.Renameat2(unix.AT_FDCWD, b, unix.AT_FDCWD, c, unix.RENAME_WHITEOUT)
	if err != nil {
		t.Skipf("renameat2(RENAME_WHITEOUT): %v", err)
	}
	l.renameDone(scratchMove{from: b, to: c, whiteout: true})
	if !l.Owned(b) || !l.Owned(c) {
		t.Errorf("after a whiteout rename: owned b (the whiteout) %v, c %v; want both", l.Owned(b), l.Owned(c))
	}
	// A rename of files needs no scan: a file cannot hold entries.
	if l.involves(filepath.Join(d, "x"), filepath.Join(d, "y")) {
		t.Error("involves of two unrecorded file names")
	}
}
