package server

// Cells: one `tracecell serve` (or `tracecell mcp`) process is a cell. Its
// sessions are Python processes in this host's memory and cannot move, so
// when several cells stand behind a proxy (HAProxy, nginx, Envoy, a
// Kubernetes Service with session affinity) every answer must say which
// cell gave it, and a request that finds no session must say why instead
// of quietly starting an empty one:
//
//   - the cell id (--cell-id, default the short host name: a StatefulSet
//     pod's name) is in the X-Tracecell-Cell header of every response and in
//     every session description; the boot id (random per process start) is
//     in X-Tracecell-Boot;
//   - ids the server mints are "<cell>.s-<16 hex>", so a proxy can route by
//     the part before the first dot; an id of that form naming another
//     cell is refused (421 wrong_cell, counted as misrouted);
//   - the ids created in each boot are appended to a per-boot file under
//     <state-dir>/cells/<cell>/, so that after a crash or a restart under
//     the same name the cell answers "lost in boot B" (410 session_lost)
//     rather than "never here" (404 session_not_found); within a boot it
//     remembers which ids were deleted (404 session_deleted) and which
//     expired (410 session_expired).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Response headers naming the cell and its boot.
const (
	HeaderCell = "X-Tracecell-Cell"
	HeaderBoot = "X-Tracecell-Boot"
)

// maxBoots is how many boots' id files a cell keeps, this one included
// (older ones are removed at start): ids lost longer ago are answered as
// never seen.
const maxBoots = 16

// maxEnded bounds the ended ids a cell remembers (about 100 bytes each);
// the oldest are forgotten first and then answered as never seen.
// maxBootFile bounds one boot's record; past it, sessions are not recorded
// (a restart then answers them as never seen), which the log says once.
var (
	maxEnded          = 200_000
	maxBootFile int64 = 64 << 20
)

// validCellID: 1 to 63 of A-Z a-z 0-9 _ - (no dot: the dot separates the
// cell from the rest of a minted session id; 63 is a DNS label's limit, so
// a Kubernetes pod name fits).
func validCellID(id string) bool {
	if len(id) == 0 || len(id) > 63 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// defaultCellID is the host name up to its first dot (a StatefulSet pod's
// host name is its pod name, e.g. tracecell-0).
func defaultCellID() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("--cell-id not given and the host name is unreadable: %w; pass --cell-id NAME", err)
	}
	h, _, _ = strings.Cut(h, ".")
	if !validCellID(h) {
		return "", fmt.Errorf("--cell-id not given and the host name %q is not a valid cell id; pass --cell-id with 1 to 63 of A-Z a-z 0-9 _ -", h)
	}
	return h, nil
}

// checkCellID explains a bad --cell-id.
func checkCellID(id string) error {
	if !validCellID(id) {
		return fmt.Errorf("--cell-id %q is invalid: use 1 to 63 of A-Z a-z 0-9 _ - (no dot: it separates the cell in session ids)", id)
	}
	return nil
}

// mintedCell returns the cell of an id in the minted form
// "<cell>.s-<16 lowercase hex>", and whether id has that form.
func mintedCell(id string) (string, bool) {
	cell, rest, ok := strings.Cut(id, ".")
	if !ok || !validCellID(cell) || len(rest) != 18 || !strings.HasPrefix(rest, "s-") {
		return "", false
	}
	for _, c := range rest[2:] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", false
		}
	}
	return cell, true
}

// mintID is a fresh session id carrying this cell.
func (s *Server) mintID() string { return randomID(s.opts.CellID + ".s-") }

// fate is what became of a session id that is not here.
type fate struct {
	kind   string // "deleted", "expired", "lost"
	boot   string // the boot it lived in
	at     time.Time
	reason string // expired: the idle time; lost: how the boot ended
}

// history is the per-boot record of session ids (see the file comment).
type history struct {
	dir  string // <state-dir>/cells/<cell>
	boot string

	mu      sync.Mutex
	f       *os.File // this boot's file, append-only
	written int64    // bytes in f
	full    bool     // f reached maxBootFile
	ended   map[string]fate
	order   []string        // ended ids, oldest first (may repeat: see remember)
	count   map[string]int  // occurrences in order
	open    map[string]bool // ids whose "+" line this boot wrote
	oldest  time.Time       // start of the oldest boot on record
	boots   int             // boots on record, this one included
	// lostLastBoot: sessions the previous boot left open (it was killed).
	lostLastBoot int
}

// openHistory reads the earlier boots' files of the cell and starts this
// boot's. Every id created in an earlier boot and not ended there is lost.
func openHistory(stateDir, cell, boot string, now time.Time) (*history, error) {
	// Walked like the state directory itself (openStateDir): a cells or
	// cell entry a tree left as a link (a state directory it could write
	// on an earlier run) would put the boot records where the link leads.
	dir, fd, err := openStateDir(filepath.Join(stateDir, "cells", cell))
	if err != nil {
		return nil, fmt.Errorf("the cell's directory: %w", err)
	}
	unix.Close(fd)
	h := &history{dir: dir, boot: boot, ended: map[string]fate{}, oldest: now, boots: 1}
	names, err := filepath.Glob(filepath.Join(dir, "boot-*.ids"))
	if err != nil {
		return nil, err
	}
	type bootFile struct {
		path  string
		start time.Time
	}
	var files []bootFile
	for _, p := range names {
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue // a link or other object is no record of ours
		}
		if live(p) {
			// Another server with this cell id and state directory runs
			// now (it holds its record locked): not an earlier boot.
			continue
		}
		start, ok := readBootStart(p)
		if !ok {
			start = st.ModTime()
		}
		files = append(files, bootFile{p, start})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].start.Before(files[j].start) })
	for len(files) >= maxBoots {
		os.Remove(files[0].path)
		files = files[1:]
	}
	for _, bf := range files {
		n, err := h.replay(bf.path)
		if err != nil {
			return nil, err
		}
		h.lostLastBoot = n
		if bf.start.Before(h.oldest) {
			h.oldest = bf.start
		}
		h.boots++
	}
	p := filepath.Join(dir, "boot-"+boot+".ids")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create the boot record %s: %w", p, err)
	}
	// Locked while this boot lives: flock(2) locks go with the last
	// descriptor, so a SIGKILL releases it and the next start reads the file.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock the boot record %s: %w", p, err)
	}
	h.f = f
	h.write("boot %s %d", boot, now.UnixNano())
	return h, nil
}

// live reports whether a boot record is locked by a running server.
func live(p string) bool {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

func readBootStart(p string) (time.Time, bool) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	var boot string
	var ns int64
	if _, err := fmt.Fscanf(f, "boot %s %d\n", &boot, &ns); err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// replay reads one earlier boot's file. Lines:
//
//	boot BOOT UNIXNANO          the boot started
//	+ ID UNIXNANO               a session was created
//	- ID KIND UNIXNANO REASON   it ended (deleted, expired, lost)
//	end UNIXNANO REASON         the boot ended cleanly (every session closed)
//
// An id still open at the end of the file was lost when the boot ended
// without closing it (SIGKILL, a crash, the machine's power).
func (h *history) replay(p string) (int, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return 0, nil // unreadable: as if absent (its ids answer as never seen)
	}
	defer f.Close()
	boot := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "boot-"), ".ids")
	open := map[string]bool{}
	var last time.Time
	endReason := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), 1<<16)
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), " ", 5)
		at := func(i int) time.Time {
			if i < len(fields) {
				if ns, err := strconv.ParseInt(fields[i], 10, 64); err == nil {
					return time.Unix(0, ns)
				}
			}
			return last
		}
		switch {
		case fields[0] == "+" && len(fields) >= 3:
			open[fields[1]] = true
			delete(h.ended, fields[1])
			last = at(2)
		case fields[0] == "-" && len(fields) >= 4:
			delete(open, fields[1])
			fa := fate{kind: fields[2], boot: boot, at: at(3)}
			if len(fields) == 5 {
				fa.reason = fields[4]
			}
			h.remember(fields[1], fa)
			last = fa.at
		case fields[0] == "end" && len(fields) >= 2:
			last = at(1)
			if len(fields) >= 3 {
				endReason = strings.Join(fields[2:], " ")
			}
		case fields[0] == "boot":
			last = at(2)
		}
	}
	// A line too long to be ours, or a read error: what was read stands;
	// the rest of this boot's record is not known (answered as never seen).
	why := "the cell stopped without closing it (killed, crashed, or the machine went down)"
	if endReason != "" {
		why = endReason
	}
	for id := range open {
		h.remember(id, fate{kind: "lost", boot: boot, at: last, reason: why})
	}
	return len(open), nil
}

// randomHex8 is 16 random hex digits (a boot id).
func randomHex8() string { return strings.TrimPrefix(randomID("x"), "x") }

// remember records what became of id, forgetting the oldest past
// maxEnded. order may hold an id more than once (ended, re-created, ended
// again): its fate is dropped only with its last occurrence.
func (h *history) remember(id string, fa fate) {
	if h.count == nil {
		h.count = map[string]int{}
	}
	h.ended[id] = fa
	h.order = append(h.order, id)
	h.count[id]++
	for len(h.ended) > maxEnded && len(h.order) > 0 {
		old := h.order[0]
		h.order = h.order[1:]
		if h.count[old]--; h.count[old] <= 0 {
			delete(h.count, old)
			delete(h.ended, old)
		}
	}
	if len(h.order) > 2*maxEnded+1024 {
		// One name ended and made again many times, or names made again
		// after they ended (created drops them from ended): keep each
		// remembered id once, at its last place.
		seen := make(map[string]bool, len(h.ended))
		keep := make([]string, 0, len(h.ended))
		for i := len(h.order) - 1; i >= 0; i-- {
			if id := h.order[i]; !seen[id] {
				if _, ok := h.ended[id]; ok {
					seen[id] = true
					keep = append(keep, id)
				}
			}
		}
		for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
			keep[i], keep[j] = keep[j], keep[i]
		}
		h.order = keep
		h.count = make(map[string]int, len(keep))
		for _, id := range keep {
			h.count[id] = 1
		}
	}
}

// write appends one line (a single write(2) on an O_APPEND file: a
// SIGKILL leaves whole lines; only the machine going down may lose the
// page cache's last lines, since there is no fsync per session).
func (h *history) write(format string, a ...any) bool {
	if h == nil || h.f == nil {
		return false
	}
	n, _ := h.f.Write([]byte(fmt.Sprintf(format, a...) + "\n"))
	h.written += int64(n)
	return n > 0
}

// created records a session created in this boot.
func (h *history) created(id string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.ended, id)
	// Past maxBootFile, new sessions go unrecorded (answered as never seen
	// after a restart); the ends of recorded ones are still written, so the
	// file holds at most maxBootFile plus one end line per open session.
	if h.written >= maxBootFile {
		if !h.full {
			h.full = true
			h.write("full %d", now.UnixNano())
		}
		return
	}
	if h.write("+ %s %d", id, now.UnixNano()) {
		if h.open == nil {
			h.open = map[string]bool{}
		}
		h.open[id] = true
	}
}

// ended records a session of this boot that ended.
func (h *history) end(id string, fa fate) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fa.boot = h.boot
	h.remember(id, fa)
	if h.open[id] {
		delete(h.open, id)
		h.write("- %s %s %d %s", id, fa.kind, fa.at.UnixNano(), strings.ReplaceAll(fa.reason, "\n", " "))
	}
}

// fateOf says what became of an id that is not here, if it is on record.
func (h *history) fateOf(id string) (fate, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fa, ok := h.ended[id]
	return fa, ok
}

// close marks this boot as ended cleanly and closes the file.
func (h *history) close(now time.Time, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f == nil {
		return
	}
	h.write("end %d %s", now.UnixNano(), reason)
	h.f.Close()
	h.f = nil
}

// missError is the answer for an id with no session here: why it is not
// here, as precisely as the cell knows. While the cell drains, an id it
// does not hold is answered 503 + Retry-After (the proxy then sends the
// retry to a cell that is ready).
func (s *Server) missError(id string) error {
	cell := s.opts.CellID
	if other, ok := mintedCell(id); ok && other != cell {
		s.metrics.misrouted.Add(1)
		s.log.Warn().Str("session", id).Str("owner_cell", other).Msg("misrouted request: the session id names another cell")
		return errf(421, "wrong_cell", "session %q belongs to cell %q, and this is cell %q: route requests by the session id's prefix (the part before the first '.') to the cell it names", id, other, cell)
	}
	if s.isDraining() {
		s.metrics.missDraining.Add(1)
		return errf(503, "draining", "cell %q is draining (shutting down) and holds no session %q; retry: a ready cell will take it", cell, id)
	}
	fa, ok := s.hist.fateOf(id)
	if !ok {
		s.metrics.missNever.Add(1)
		return errf(404, "session_not_found", "no session %q on cell %q: none by that name was created here in the %d boot(s) on record since %s; create it with POST /v1/sessions (if it lived on another cell, that cell has it or lost it)",
			id, cell, s.hist.boots, s.hist.oldest.UTC().Format(time.RFC3339))
	}
	at := fa.at.UTC().Format(time.RFC3339)
	switch fa.kind {
	case "deleted":
		s.metrics.missDeleted.Add(1)
		return errf(404, "session_deleted", "session %q on cell %q was deleted by a client at %s (boot %s); create a new one", id, cell, at, fa.boot)
	case "expired":
		s.metrics.missExpired.Add(1)
		return errf(410, "session_expired", "session %q on cell %q expired at %s after %s unused (its idle timeout); its variables and files are gone. Create a new one; POST /v1/sessions/{id}/keepalive keeps an idle session", id, cell, at, fa.reason)
	}
	s.metrics.missLost.Add(1)
	if fa.boot == s.boot {
		return errf(410, "session_lost", "session %q on cell %q was lost at %s: %s; its variables and files are gone. Create a new one", id, cell, at, fa.reason)
	}
	return errf(410, "session_lost", "session %q on cell %q was lost in an earlier boot (%s, last record %s): %s; this boot is %s, and its variables and files are gone. Create a new one", id, cell, fa.boot, at, fa.reason, s.boot)
}

// Miss says why no session id is here: Kind is "never", "deleted",
// "expired", "lost", "other_cell" or "draining"; Message is the one-line
// explanation the HTTP API gives.
type Miss struct {
	Kind    string
	Message string
}

// missKinds maps the codes of missError onto Miss kinds.
var missKinds = map[ErrorCode]string{"session_not_found": "never", "session_deleted": "deleted", "session_expired": "expired",
	"session_lost": "lost", "wrong_cell": "other_cell", "draining": "draining"}

// asMiss is the Miss an error of lookupID describes, if it is one.
func asMiss(err error) (Miss, bool) {
	var ae *apiError
	if !errors.As(err, &ae) || missKinds[ae.code] == "" {
		return Miss{}, false
	}
	return Miss{Kind: missKinds[ae.code], Message: ae.msg}, true
}

// Opened says how Open found a session.
type Opened struct {
	// Created: the session was made by this call.
	Created bool
	// Previous, when Created, says why there was no session by that name
	// before: Kind "never" for a new name; "lost", "expired", "deleted"
	// when the name had a session on this cell whose state is gone.
	Previous Miss
}

// Open returns session id. When it is not here and create is true, it is
// made (within --max-sessions) and Opened.Previous says what became of an
// earlier session of that name; with create false the miss is the error
// (ErrNotFound, and MissOf's message). A session of another cell, or any
// miss while draining, is never created here.
func (s *Server) Open(ctx context.Context, id string, create bool) (SessionInfo, Opened, error) {
	for range 2 {
		ss, err := s.lookupID(id)
		if err == nil {
			return ss.describe(), Opened{}, nil
		}
		miss, ok := asMiss(err)
		if !ok || !create || miss.Kind == "other_cell" || miss.Kind == "draining" {
			return SessionInfo{}, Opened{}, err
		}
		ss, err = s.create(ctx, id)
		if err == nil {
			s.log.Info().Str("session", id).Str("previous", miss.Kind).Msg("session created on first use")
			return ss.describe(), Opened{Created: true, Previous: miss}, nil
		}
		var ae *apiError
		if !errors.As(err, &ae) || ae.code != "session_exists" {
			return SessionInfo{}, Opened{}, err
		}
	}
	return SessionInfo{}, Opened{}, errf(409, "session_busy", "session %q is being created and deleted concurrently; retry", id)
}

// Cell returns the cell id and this process's boot id.
func (s *Server) Cell() (cell, boot string) { return s.opts.CellID, s.boot }

// cellHeaders names the cell and the boot in every response.
func (s *Server) cellHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderCell, s.opts.CellID)
		w.Header().Set(HeaderBoot, s.boot)
		next.ServeHTTP(w, r)
	})
}

// writeCellMetrics writes the metrics with a cell label.
func (s *Server) writeCellMetrics(w io.Writer) {
	m := &s.metrics
	c := strconv.Quote(s.opts.CellID)
	fmt.Fprintf(w, "# HELP tracecell_cell_info The cell and its boot.\n# TYPE tracecell_cell_info gauge\ntracecell_cell_info{cell=%s,boot=%q} 1\n", c, s.boot)
	fmt.Fprintf(w, "# HELP tracecell_sessions_lost_total Sessions whose state was lost, by reason (expired: idle timeout; earlier_boot: open when an earlier boot of this cell stopped, counted at start; drain_timeout: still open when the drain ended; shutdown: closed by a stop without drain; worker: the worker died, namespace lost, files kept).\n# TYPE tracecell_sessions_lost_total counter\n")
	for _, r := range []struct {
		reason string
		v      int64
	}{{"expired", m.sessionsReaped.Load()}, {"earlier_boot", m.lostEarlierBoot.Load()}, {"drain_timeout", m.lostDrain.Load()},
		{"shutdown", m.lostShutdown.Load()}, {"worker", m.execLost.Load()}} {
		fmt.Fprintf(w, "tracecell_sessions_lost_total{cell=%s,reason=%q} %d\n", c, r.reason, r.v)
	}
	fmt.Fprintf(w, "# HELP tracecell_session_misses_total Requests naming a session this cell does not hold, by what the cell answered.\n# TYPE tracecell_session_misses_total counter\n")
	for _, r := range []struct {
		kind string
		v    int64
	}{{"never", m.missNever.Load()}, {"deleted", m.missDeleted.Load()}, {"expired", m.missExpired.Load()},
		{"lost", m.missLost.Load()}, {"other_cell", m.misrouted.Load()}, {"draining", m.missDraining.Load()}} {
		fmt.Fprintf(w, "tracecell_session_misses_total{cell=%s,kind=%q} %d\n", c, r.kind, r.v)
	}
	fmt.Fprintf(w, "# HELP tracecell_requests_misrouted_total Requests for a session id minted by another cell.\n# TYPE tracecell_requests_misrouted_total counter\ntracecell_requests_misrouted_total{cell=%s} %d\n", c, m.misrouted.Load())
	d := 0
	if s.isDraining() {
		d = 1
	}
	fmt.Fprintf(w, "# HELP tracecell_draining 1 while the cell drains (SIGTERM with --drain-timeout): it creates nothing and serves its open sessions.\n# TYPE tracecell_draining gauge\ntracecell_draining{cell=%s} %d\n", c, d)
}

// CheckCellID explains a --cell-id that cannot name a cell (nil if it can).
func CheckCellID(id string) error { return checkCellID(id) }
