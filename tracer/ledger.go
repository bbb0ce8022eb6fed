package tracer

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/policy"
	"github.com/tracecell/tracecell/report"
)

// ledger records the scratch entries the tree created: the resolved path of
// each entry a create in a scratch directory made, with the identity of the
// object the create made (entryID: device, inode number, birth time), read
// at the call's completion (callDone). An entry is the tree's only while its name still
// holds that object: a host process that removes the tree's entry and makes
// its own under the same name ("shm_unlink stale; shm_open O_EXCL") has made
// a new object, which is not the tree's (red team F4a). Nothing is owned
// by being below a directory the tree made: a host program may put files
// into it (a fixed /dev/shm directory name), and those are its own (F4b);
// the tree owns exactly the entries it made, each recorded.
//
// An entry leaves it when the tree deletes it (scratchStarts), when a
// rename of the tree's moves it (the ledger moves it with its recorded
// entries below, renameDone), or when a check finds its name holding
// another object (Owned; the name is then remembered as replaced, for the
// reason of the denial). It is the policy's view of ownership
// (policy.Ledger).
type ledger struct {
	own map[string]entryID
	// names is the bytes of own's keys: with len(own), what full bounds.
	names int
	// roots are the scratch directories; outside counts the entries of
	// own not below any (a RENAME_EXCHANGE of a scratch entry with a
	// directory of a writable root puts some there). While it is 0, a
	// path unrelated to every root has no entry at or below it
	// (mayHold), and renames and removals elsewhere skip the scan of
	// every entry (red team, round 47: 10 ms a rename with the ledger
	// full).
	roots   []string
	outside int
	// replaced are names the tree created whose object another process
	// removed or replaced; forgotten when the tree creates the name anew.
	replaced map[string]bool
}

// entryID is the identity of a recorded object: its device and inode
// number, and its birth time where the file system keeps one (statx
// STATX_BTIME; 0 otherwise). The inode number alone is not enough where
// the file system hands a freed number to the next file at once (ext4
// does: a host process's "unlink; create" makes a new file with the old
// number); tmpfs (/dev/shm) takes a fresh number for every file.
type entryID struct {
	dev, ino uint64
	btime    int64 // nanoseconds since the epoch; 0 when unknown
}

// maxForeignScan bounds the entries Foreign looks at below one directory.
const maxForeignScan = 100000

// The ledger holds at most maxLedgerEntries entries and maxLedgerNames
// bytes of their names; a create that would record more is refused
// (full, RuleScratchFull). Each entry costs the tree about a kilobyte of
// tmpfs but tracecell its whole resolved name: a tree that made empty
// files with 250-byte names 13 directories deep in /dev/shm grew
// tracecell by 8 KB a file, 1.6 GB after 200,000 (red team, round 46),
// bounded only by the tmpfs's inodes.
const (
	maxLedgerEntries = 100000
	maxLedgerNames   = 16 << 20
)

func newLedger(roots []string) *ledger {
	return &ledger{own: map[string]entryID{}, replaced: map[string]bool{}, roots: roots}
}

// inRoots reports whether p is a scratch root or below one.
func (l *ledger) inRoots(p string) bool {
	for _, r := range l.roots {
		if policy.Under(p, r) {
			return true
		}
	}
	return false
}

// mayHold reports whether an entry of the ledger may be at or below p:
// some entry lies outside the scratch roots, or p is related to a root
// (at or below it, or above it).
func (l *ledger) mayHold(p string) bool {
	if l.outside > 0 || l.inRoots(p) {
		return true
	}
	for _, r := range l.roots {
		if policy.Under(r, p) {
			return true
		}
	}
	return false
}

// noStatxID is set once statx(2) answered ENOSYS (a kernel before 4.11,
// or a seccomp profile that does not know it): lstat then, without birth
// times.
var noStatxID atomic.Bool

// lstatID is the identity of the object at p (not following a last
// symlink).
func lstatID(p string) (entryID, bool) {
	for !noStatxID.Load() {
		var sx unix.Statx_t
		err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_SYNC_AS_STAT,
			unix.STATX_TYPE|unix.STATX_INO|unix.STATX_BTIME, &sx)
		switch err {
		case unix.EINTR:
			continue
		case unix.ENOSYS:
			noStatxID.Store(true)
			continue
		case nil:
		default:
			return entryID{}, false
		}
		id := entryID{dev: unix.Mkdev(sx.Dev_major, sx.Dev_minor), ino: sx.Ino}
		if sx.Mask&unix.STATX_BTIME != 0 {
			id.btime = sx.Btime.Sec*1e9 + int64(sx.Btime.Nsec)
		}
		return id, true
	}
	var st unix.Stat_t
	for {
		err := unix.Lstat(p, &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return entryID{}, false
		}
		return entryID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
	}
}

// record makes the object now at p the tree's (a create of the tree's has
// just made it). Nothing is recorded when p is gone already.
func (l *ledger) record(p string) {
	if id, ok := lstatID(p); ok {
		l.set(p, id)
		delete(l.replaced, p)
	}
}

// set records id at p, counting its name. Past maxLedgerEntries or
// maxLedgerNames nothing more is recorded: the entries a rename moves into
// a scratch directory (recordTree) come without a create to refuse, and
// one that is not recorded is not the tree's to change there (fail
// closed).
func (l *ledger) set(p string, id entryID) {
	if _, ok := l.own[p]; !ok {
		if len(l.own) >= maxLedgerEntries || l.names+len(p) > maxLedgerNames {
			return
		}
		l.names += len(p)
		if !l.inRoots(p) {
			l.outside++
		}
	}
	l.own[p] = id
}

// unset forgets p, counting its name.
func (l *ledger) unset(p string) {
	if _, ok := l.own[p]; ok {
		l.names -= len(p)
		if !l.inRoots(p) {
			l.outside--
		}
		delete(l.own, p)
	}
}

// full reports whether recording the entries ps (resolved names of
// creates) would take the ledger past maxLedgerEntries or maxLedgerNames.
func (l *ledger) full(ps []string) bool {
	n := 0
	for _, p := range ps {
		n += len(p)
	}
	return len(l.own)+len(ps) > maxLedgerEntries || l.names+n > maxLedgerNames
}

// Owned reports whether the tree created the entry p itself and p still
// holds the object it made. An entry whose name holds another object now
// is forgotten and remembered as replaced.
func (l *ledger) Owned(p string) bool {
	id, ok := l.own[p]
	if !ok {
		return false
	}
	cur, ok := lstatID(p)
	if ok && cur == id {
		return true
	}
	l.unset(p)
	if ok {
		l.replaced[p] = true
	}
	return false
}

// Replaced reports whether p is a name the tree created whose object
// another process has since removed and replaced by its own.
func (l *ledger) Replaced(p string) bool {
	if l.replaced[p] {
		return true
	}
	// Not checked yet: a recorded name holding another object.
	if _, ok := l.own[p]; ok && !l.Owned(p) {
		return l.replaced[p]
	}
	return false
}

// Foreign names an entry below the directory dir that is not the tree's
// (not recorded, or replaced), "" when every entry below it is: renaming
// dir would move that entry, another process's, with it. Only the tree's
// own directories are descended into, so the cost is bounded by what the
// tree recorded below dir; past maxForeignScan entries it gives up and
// says so (the caller denies). A directory is opened O_DIRECTORY and
// O_NOFOLLOW: whatever was swapped in under its name (a FIFO, whose open
// would block the tracer; a symlink) is not listed but named.
func (l *ledger) Foreign(dir string) string {
	n := 0
	var walk func(d string) string
	walk = func(d string) string {
		fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return d + " (cannot be listed: " + err.Error() + ")"
		}
		f := os.NewFile(uintptr(fd), d)
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return d + " (cannot be listed: " + err.Error() + ")"
		}
		sort.Strings(names)
		for _, name := range names {
			n++
			if n > maxForeignScan {
				return fmt.Sprintf("%s (more than %d entries below %s: not checked)", d, maxForeignScan, dir)
			}
			p := d + "/" + name
			if !l.Owned(p) {
				return p
			}
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
				if f := walk(p); f != "" {
					return f
				}
			}
		}
		return ""
	}
	return walk(dir)
}

// left lists the recorded entries that still hold the tree's objects,
// outermost first.
func (l *ledger) left() []string {
	out := []string{}
	for p, id := range l.own {
		if cur, ok := lstatID(p); ok && cur == id {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	// Drop entries inside a directory that is listed already.
	var res []string
	for _, p := range out {
		if n := len(res); n > 0 && strings.HasPrefix(p, res[n-1]+"/") {
			continue
		}
		res = append(res, p)
	}
	if res == nil {
		res = []string{}
	}
	return res
}

// drop forgets p and everything recorded below it.
func (l *ledger) drop(p string) {
	if p == "" {
		return
	}
	l.unset(p)
	// Only a directory has entries below it: a delete of a file (or of
	// a name that is gone) need not look at every recorded entry, which
	// made removing n files of the tree's n² string comparisons (30,000
	// files in /dev/shm: 7 minutes).
	// With nothing recorded there is nothing below p either: a tree that
	// deletes only inside its writable roots (the common case, and a
	// sandbox under /dev/shm is such a root) pays no lstat a delete.
	var st unix.Stat_t
	if len(l.own) == 0 || !l.mayHold(p) || unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return
	}
	for q := range l.own {
		if strings.HasPrefix(q, p+"/") {
			l.unset(q)
		}
	}
}

// take removes p and the entries recorded below it and returns them, by
// their path relative to p ("" for p itself). dir says whether the object
// p named may be a directory: when not, nothing is below it.
func (l *ledger) take(p string, dir bool) map[string]entryID {
	out := map[string]entryID{}
	if p == "" {
		return out
	}
	if !dir {
		if id, ok := l.own[p]; ok {
			out[""] = id
			l.unset(p)
		}
		return out
	}
	for q, id := range l.own {
		if q == p {
			out[""] = id
		} else if strings.HasPrefix(q, p+"/") {
			out[q[len(p):]] = id
		}
	}
	for rel := range out {
		l.unset(p + rel)
	}
	return out
}

// put records the entries of take under p.
func (l *ledger) put(p string, m map[string]entryID) {
	for rel, id := range m {
		l.set(p+rel, id)
		delete(l.replaced, p+rel)
	}
}

// scratchMove is a rename of the tree's in flight that involves the
// ledger: from and to are its resolved source and target; exchange for
// RENAME_EXCHANGE; fresh when the target is a new name in a scratch
// directory (Decision.Scratch).
type scratchMove struct {
	from, to        string
	exchange, fresh bool
	// whiteout: RENAME_WHITEOUT, which leaves a whiteout (a 0:0
	// character device) of the tree's making at from.
	whiteout bool
}

// involves reports whether a rename of from to to touches recorded
// entries (at or below either name).
func (l *ledger) involves(from, to string) bool {
	if !l.mayHold(from) && !l.mayHold(to) {
		return false
	}
	if _, ok := l.own[from]; ok {
		return true
	}
	if _, ok := l.own[to]; ok {
		return true
	}
	// Entries below a name need a directory there: a rename of files
	// needs no scan (red team, round 48: a sandbox inside /dev/shm made
	// every rename compare every entry).
	if !isDir(from) && !isDir(to) {
		return false
	}
	for q := range l.own {
		for _, p := range [2]string{from, to} {
			if p != "" && (q == p || strings.HasPrefix(q, p+"/")) {
				return true
			}
		}
	}
	return false
}

// renameDone updates the ledger for a rename that succeeded: the objects
// keep their identities, the names change. The recorded entries at and
// below the source now are at and below the target; what the target held
// is gone, or, exchanged, at the source. A scratch name (new, or the
// tree's) that now holds what was not recorded is recorded by what is
// there now, with everything below it (recordTree): the policy let only
// the tree's own objects move there, a file or directory of a writable
// root, the tree's to change where it was.
func (l *ledger) renameDone(m scratchMove) {
	if !m.exchange && !m.whiteout && exists(m.from) {
		// rename of a name onto a hard link of the same file: the
		// kernel does nothing and returns 0 (red team, round 48: the
		// record moved, and the tree lost its own entry). (Should a
		// host process have made a new entry at from this instant, the
		// tree keeps no record of what it moved: it loses a right.)
		return
	}
	// The moved objects are now at to (and, exchanged, at from).
	dir := isDir(m.to) || (m.exchange && isDir(m.from))
	src := l.take(m.from, dir)
	dst := l.take(m.to, dir)
	if len(src) > 0 {
		l.put(m.to, src)
	} else if len(dst) > 0 || m.fresh {
		l.recordTree(m.to)
	}
	if m.exchange {
		if len(dst) > 0 {
			l.put(m.from, dst)
		} else if len(src) > 0 {
			l.recordTree(m.from)
		}
	}
	if m.whiteout && l.inRoots(m.from) {
		l.record(m.from) // the whiteout is the tree's
	}
}

// exists reports whether there is an entry at p (lstat).
func exists(p string) bool {
	var st unix.Stat_t
	return unix.Lstat(p, &st) == nil
}

// isDir reports whether p is a directory (lstat: a symlink is none).
func isDir(p string) bool {
	var st unix.Stat_t
	return unix.Lstat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// recordTree records p and, when it is a directory, every entry below it,
// at most maxForeignScan (past that, the rest is not the tree's: changing
// it in scratch is denied). Directories are opened as in Foreign.
func (l *ledger) recordTree(p string) {
	n := 0
	var walk func(d string)
	walk = func(d string) {
		l.record(d)
		fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return // not a directory (or gone)
		}
		f := os.NewFile(uintptr(fd), d)
		names, _ := f.Readdirnames(-1)
		f.Close()
		for _, name := range names {
			if n++; n > maxForeignScan {
				return
			}
			walk(d + "/" + name)
		}
	}
	walk(p)
}

// boundSockets holds the inet sockets (by inode) that a bind of the
// tree's bound to an allowed address: listen may use them (listen.go). It
// holds at most maxBound.
type boundSockets map[uint64]bool

// add records socket ino, unless the set is full.
func (b boundSockets) add(ino uint64) {
	if len(b) < maxBound {
		b[ino] = true
	}
}

// has reports whether socket ino was bound by an allowed bind.
func (b boundSockets) has(ino uint64) bool { return b[ino] }

// full reports whether no more sockets are recorded.
func (b boundSockets) full() bool { return len(b) >= maxBound }

// maxDenialBytes caps the text the kept denials hold (their paths, argv,
// exe and reasons, report.Event.ListedBytes). A program chooses how long
// each is: 10,000 denials of 4 KiB paths, each repeating a 4 KiB argv,
// held 290 MB of tracecell's memory at the end of a run (red team, round
// 44). A run's ordinary denials are a few hundred bytes each.
const maxDenialBytes = 16 << 20

// recorder is the record side of the tracer: the counts of a run and the
// events kept for its Result.
//
// Invariants: len(denials) <= the cap (maxDenials, 0: 10000), and the
// text they hold (report.Event.ListedBytes) <= maxDenialBytes; every
// denial or audit past either cap is counted in dropped instead; counts
// are exact whatever the caps.
type recorder struct {
	counts  report.Counts
	denials []report.Event
	dropped int
	// maxDenials caps denials (Config.MaxDenials; 0: 10000).
	maxDenials int
	// listed is the ListedBytes of denials.
	listed int
	// onEvent is Config.OnEvent: called for every recorded event.
	onEvent func(*report.Event)
}

// add counts ev, keeps it if it is a denial or an audit and the cap
// allows, and hands it to onEvent.
func (r *recorder) add(ev *report.Event) {
	switch ev.Decision {
	case report.Deny:
		r.counts.Denied++
	case report.Audit:
		r.counts.Audited++
	}
	if ev.Decision != report.Allow {
		max := r.maxDenials
		if max == 0 {
			max = 10000
		}
		if n := ev.ListedBytes(); len(r.denials) < max && r.listed+n <= maxDenialBytes {
			r.denials = append(r.denials, *ev)
			r.listed += n
		} else {
			r.dropped++
		}
	}
	if r.onEvent != nil {
		r.onEvent(ev)
	}
}

// taskBorn counts a new task of the tree: a thread, and a process when it
// leads its group.
func (r *recorder) taskBorn(tk *task) {
	if tk.tid == tk.tgid {
		r.counts.Processes++
	}
	r.counts.Threads++
}
