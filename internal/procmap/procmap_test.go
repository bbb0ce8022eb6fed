package procmap

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tracecell/tracecell/internal/procfs"
	"golang.org/x/sys/unix"
)

// noQuery is a kernel without PROCMAP_QUERY (before 6.11): the ioctl on a
// /proc/<pid>/maps fd fails with ENOTTY (vfs_ioctl: no unlocked_ioctl).
func noQuery(int, *procmapQuery, []byte) error { return unix.ENOTTY }

// pair is one process's Maps opened both ways.
type pair struct {
	query, text *Maps
}

// openPair opens pid's maps with the kernel's ioctl and with the text
// forced; query is nil when this kernel has no PROCMAP_QUERY.
func openPair(t *testing.T, pid int) pair {
	t.Helper()
	var p pair
	q, err := Open(pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	if q.UsesQuery() {
		p.query = q
	} else {
		t.Logf("this kernel has no PROCMAP_QUERY (before 6.11): only the text path is tested")
	}
	if p.text, err = open(pid, noQuery); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.text.Close() })
	if p.text.UsesQuery() {
		t.Fatal("the fake kernel without the ioctl chose the ioctl")
	}
	return p
}

// lookupBoth looks addr up both ways, named and not, checks that every
// answer is the same but for the Path of Lookup, and returns the named one.
func (p pair) lookupBoth(t *testing.T, addr uint64) (Mapping, bool) {
	t.Helper()
	want, wantOK, err := p.text.LookupNamed(addr)
	if err != nil {
		t.Fatalf("text LookupNamed(%#x): %v", addr, err)
	}
	unnamed := want
	unnamed.Path = ""
	type answer struct {
		how   string
		m     *Maps
		named bool
		want  Mapping
	}
	answers := []answer{{"text Lookup", p.text, false, unnamed}}
	if p.query != nil {
		answers = append(answers, answer{"ioctl Lookup", p.query, false, unnamed}, answer{"ioctl LookupNamed", p.query, true, want})
	}
	for _, a := range answers {
		look := a.m.Lookup
		if a.named {
			look = a.m.LookupNamed
		}
		got, ok, err := look(addr)
		if err != nil {
			t.Fatalf("%s(%#x): %v", a.how, addr, err)
		}
		if got != a.want || ok != wantOK {
			t.Errorf("%s(%#x) = %+v %v\n   text LookupNamed: %+v %v", a.how, addr, got, ok, a.want, wantOK)
		}
	}
	return want, wantOK
}

// mmap maps length bytes and unmaps them when the test ends.
func mmap(t *testing.T, fd, off, length, prot, flags int) []byte {
	t.Helper()
	b, err := unix.Mmap(fd, int64(off), length, prot, flags)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

// addrOf is the address of b[i].
func addrOf(b []byte, i int) uint64 { return uint64(reflect.ValueOf(b).Pointer()) + uint64(i) }

// funcPC is an address in this test binary's text.
func funcPC() uint64 { return uint64(reflect.ValueOf(TestSameAnswer).Pointer()) }

// inodeOf is the inode number of path.
func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestSameAnswer maps the kinds of memory the futex check tells apart in
// this process and checks both paths' answers against what was mapped.
func TestSameAnswer(t *testing.T) {
	pg := os.Getpagesize()
	dir := t.TempDir()
	// A name with spaces and a newline: the maps text shows it "\012".
	name := filepath.Join(dir, "shared sem\nfile")
	if err := os.WriteFile(name, make([]byte, 4*pg), 0o600); err != nil {
		t.Fatal(err)
	}
	ino := inodeOf(t, name)
	rw, err := unix.Open(name, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rw)
	ro, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ro)
	textName := strings.ReplaceAll(name, "\n", `\012`)

	// Anonymous memory between PROT_NONE guards of its own (so that it
	// merges with no VMA of the Go runtime), with a hole in the middle
	// made last (a mapping made later could fill it).
	anon := mmap(t, -1, 0, 5*pg, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err := unix.Mprotect(anon[pg:4*pg], unix.PROT_READ|unix.PROT_WRITE); err != nil {
		t.Fatal(err)
	}
	sharedRW := mmap(t, rw, 0, 2*pg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	sharedRO := mmap(t, ro, 0, pg, unix.PROT_READ, unix.MAP_SHARED)
	private := mmap(t, ro, 2*pg, 2*pg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	private[1] = 1 // copy one page on write: the VMA stays the file's
	shmAnon := mmap(t, -1, 0, pg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)

	// A file unlinked after its mapping: " (deleted)".
	gone := filepath.Join(dir, "gone")
	if err := os.WriteFile(gone, make([]byte, pg), 0o600); err != nil {
		t.Fatal(err)
	}
	goneIno := inodeOf(t, gone)
	gfd, err := unix.Open(gone, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	deleted := mmap(t, gfd, 0, pg, unix.PROT_READ, unix.MAP_SHARED)
	unix.Close(gfd)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}

	// The hole. unix.Munmap takes only whole slices it mapped.
	if _, _, e := unix.Syscall(unix.SYS_MUNMAP, uintptr(addrOf(anon, 2*pg)), uintptr(pg), 0); e != 0 {
		t.Fatal(e)
	}
	p := openPair(t, os.Getpid())
	tests := []struct {
		name  string
		addr  uint64
		check func(Mapping) bool
	}{
		{"anonymous private", addrOf(anon, pg+8), func(m Mapping) bool {
			return m.Start == addrOf(anon, pg) && m.End == addrOf(anon, 2*pg) && m.Read && m.Write && !m.Shared && m.Inode == 0 && m.Path == ""
		}},
		{"anonymous private, last byte", addrOf(anon, 4*pg-1), func(m Mapping) bool {
			return m.Start == addrOf(anon, 3*pg) && m.End == addrOf(anon, 4*pg) && m.Write && m.Inode == 0
		}},
		{"PROT_NONE guard", addrOf(anon, 0), func(m Mapping) bool {
			return !m.Read && !m.Write && !m.Exec && m.Inode == 0
		}},
		{"MAP_SHARED with PROT_WRITE", addrOf(sharedRW, pg+4), func(m Mapping) bool {
			return m.Start == addrOf(sharedRW, 0) && m.End == addrOf(sharedRW, 2*pg) && m.Read && m.Write && m.Shared && m.Inode == ino && m.Offset == 0 && m.Path == textName
		}},
		{"MAP_SHARED read-only", addrOf(sharedRO, 0), func(m Mapping) bool {
			return m.Read && !m.Write && m.Shared && m.Inode == ino && m.Path == textName
		}},
		{"private file mapping", addrOf(private, pg), func(m Mapping) bool {
			return m.Start == addrOf(private, 0) && m.Write && !m.Shared && m.Inode == ino && m.Offset == uint64(2*pg) && m.Path == textName
		}},
		{"shared anonymous", addrOf(shmAnon, 0), func(m Mapping) bool {
			return m.Write && m.Shared && m.Inode != 0 && m.Path == "/dev/zero (deleted)"
		}},
		{"deleted file", addrOf(deleted, 0), func(m Mapping) bool {
			return m.Shared && m.Inode == goneIno && m.Path == gone+" (deleted)"
		}},
		{"executable text", funcPC(), func(m Mapping) bool {
			return m.Read && m.Exec && !m.Write && m.Inode != 0 && m.Path != ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := p.lookupBoth(t, tt.addr)
			if !ok || !tt.check(m) {
				t.Errorf("LookupNamed(%#x) = %+v %v", tt.addr, m, ok)
			}
		})
	}
	for _, tt := range []struct {
		name string
		addr uint64
	}{
		{"hole", addrOf(anon, 2*pg+8)},
		{"page zero", 0},
		{"top of the address space", 1<<64 - 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if m, ok := p.lookupBoth(t, tt.addr); ok {
				t.Errorf("LookupNamed(%#x) = %+v, want no mapping", tt.addr, m)
			}
		})
	}
}

// startCmd starts cmd, which the test kills and reaps at its end.
func startCmd(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
}

// TestChildSweep compares both paths with the maps text of another process,
// a sleep, at the first and last byte of every mapping and in every hole.
// The [vsyscall] line (x86-64) is no VMA of the mm: neither path finds it.
func TestChildSweep(t *testing.T) {
	// Stopped (SIGSTOP), the sleep cannot change its map while it is
	// compared, even if the dynamic loader is still at work.
	cmd := exec.Command("sleep", "100")
	startCmd(t, cmd)
	pid := cmd.Process.Pid
	if err := cmd.Process.Signal(unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); procfs.State(pid) != "T"; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sleep not stopped: state %q", procfs.State(pid))
		}
	}
	text, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		t.Fatal(err)
	}
	p := openPair(t, pid)
	var prevEnd uint64
	for _, line := range bytes.Split(bytes.TrimSuffix(text, []byte("\n")), []byte("\n")) {
		want, name, err := parseLine(line)
		if err != nil {
			t.Fatal(err)
		}
		want.Path = string(name)
		if want.Start > prevEnd {
			if m, ok := p.lookupBoth(t, want.Start-1); ok {
				t.Errorf("hole below %q: found %+v", line, m)
			}
		}
		prevEnd = want.End
		for _, a := range []uint64{want.Start, want.End - 1} {
			m, ok := p.lookupBoth(t, a)
			switch {
			case want.Path == gateName:
				if ok {
					t.Errorf("%#x in %q: found %+v, want nothing (the gate VMA)", a, line, m)
				}
			case !ok || m != want:
				t.Errorf("%#x: got %+v %v, want the line %q", a, m, ok, line)
			}
		}
	}
}

// TestProbe: the probe at Open chooses the ioctl or the text once, from
// what the kernel answers.
func TestProbe(t *testing.T) {
	for _, tt := range []struct {
		name      string
		errno     error
		wantQuery bool
		wantErr   bool
	}{
		{"answer", nil, true, false},
		{"no mapping at 0", unix.ENOENT, true, false},
		{"no ioctl (before 6.11)", unix.ENOTTY, false, false},
		{"struct refused", unix.EINVAL, false, false},
		{"mm gone", unix.ESRCH, false, true},
		{"other", unix.EPERM, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			probes := 0
			m, err := open(os.Getpid(), func(_ int, q *procmapQuery, name []byte) error {
				probes++
				if q.queryAddr != 0 || name != nil {
					t.Errorf("probe asked %+v with name %v", q, name != nil)
				}
				return tt.errno
			})
			if tt.wantErr {
				if err == nil || !errors.Is(err, tt.errno) {
					t.Fatalf("open = %v, want an error wrapping %v", err, tt.errno)
				}
				if !strings.Contains(err.Error(), "PROCMAP_QUERY") || !strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
					t.Errorf("error %q does not name the ioctl and the pid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.UsesQuery() != tt.wantQuery || probes != 1 {
				t.Errorf("UsesQuery = %v after %d probes, want %v after 1", m.UsesQuery(), probes, tt.wantQuery)
			}
		})
	}
}

// TestOpenMissing: no such process.
func TestOpenMissing(t *testing.T) {
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(cmd.Process.Pid); !errors.Is(err, unix.ENOENT) {
		t.Errorf("Open(reaped pid) = %v, want ENOENT", err)
	}
}

// TestGone: once the process is gone, both paths fail with ESRCH.
func TestGone(t *testing.T) {
	cmd := exec.Command("sleep", "100")
	startCmd(t, cmd)
	p := openPair(t, cmd.Process.Pid)
	cmd.Process.Kill()
	cmd.Wait()
	for _, m := range []*Maps{p.query, p.text} {
		if m == nil {
			continue
		}
		if got, ok, err := m.Lookup(0x10000); !errors.Is(err, unix.ESRCH) {
			t.Errorf("Lookup after exit (query %v) = %+v %v %v, want ESRCH", m.UsesQuery(), got, ok, err)
		}
	}
}

// TestExec: the fd holds the mm it was opened on. After the process execs,
// the old mm is gone (nothing else used it): both paths fail with ESRCH,
// and a Maps opened again answers for the new program.
func TestExec(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "read x; exec sleep 100")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	startCmd(t, cmd) // Start returns once the exec of /bin/sh is done
	pid := cmd.Process.Pid
	first := func() Mapping {
		t.Helper()
		text, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
		if err != nil {
			t.Fatal(err)
		}
		m, name, err := parseLine(text[:bytes.IndexByte(text, '\n')])
		if err != nil {
			t.Fatal(err)
		}
		m.Path = string(name)
		return m
	}
	shFirst := first()
	p := openPair(t, pid)
	if m, ok := p.lookupBoth(t, shFirst.Start); !ok || m != shFirst {
		t.Fatalf("sh: %+v %v, want %+v", m, ok, shFirst)
	}
	if _, err := in.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*Maps{p.query, p.text} {
		if m == nil {
			continue
		}
		// The exec drops the old mm (exec_mmap: mmput) right after it
		// installs the new one: wait for that.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
			got, ok, err := m.Lookup(shFirst.Start)
			if errors.Is(err, unix.ESRCH) {
				break
			}
			if err != nil || time.Now().After(deadline) {
				t.Fatalf("Lookup after the exec (query %v) = %+v %v %v, want ESRCH", m.UsesQuery(), got, ok, err)
			}
		}
	}
	sleepFirst := first()
	if filepath.Base(sleepFirst.Path) != "sleep" {
		t.Fatalf("first mapping after the exec: %+v", sleepFirst)
	}
	p = openPair(t, pid)
	if m, ok := p.lookupBoth(t, sleepFirst.Start); !ok || m != sleepFirst {
		t.Errorf("opened again: %+v %v, want %+v", m, ok, sleepFirst)
	}
}

// TestClosed: Lookup after Close fails; Close twice is harmless.
func TestClosed(t *testing.T) {
	m, err := Open(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, _, err := m.Lookup(0); !errors.Is(err, unix.EBADF) {
		t.Errorf("Lookup after Close = %v, want EBADF", err)
	}
}

// TestTextSmallBuffer: the text path with a buffer smaller than a line
// grows it and carries lines across reads.
func TestTextSmallBuffer(t *testing.T) {
	p := openPair(t, os.Getpid())
	addr := funcPC()
	want, ok, err := p.text.LookupNamed(addr)
	if err != nil || !ok {
		t.Fatalf("LookupNamed(%#x) = %v %v", addr, ok, err)
	}
	p.text.buf = make([]byte, 7)
	got, ok, err := p.text.LookupNamed(addr)
	if err != nil || !ok || got != want {
		t.Errorf("with a 7-byte buffer: %+v %v %v, want %+v", got, ok, err, want)
	}
	if len(p.text.buf) <= 7 {
		t.Errorf("buffer not grown: %d bytes", len(p.text.buf))
	}
}

// TestNameTooLong: a name the ioctl cannot copy (ENAMETOOLONG, a path over
// PATH_MAX) is read from the text instead.
func TestNameTooLong(t *testing.T) {
	m, err := open(os.Getpid(), func(fd int, q *procmapQuery, name []byte) error {
		if len(name) > 0 {
			return unix.ENAMETOOLONG
		}
		return ioctlQuery(fd, q, name)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.UsesQuery() {
		t.Skip("no PROCMAP_QUERY on this kernel")
	}
	text, err := open(os.Getpid(), noQuery)
	if err != nil {
		t.Fatal(err)
	}
	defer text.Close()
	addr := funcPC()
	got, ok, err := m.LookupNamed(addr)
	want, wantOK, werr := text.LookupNamed(addr)
	if err != nil || werr != nil || ok != wantOK || got != want || got.Path == "" {
		t.Errorf("LookupNamed(%#x) = %+v %v %v, text %+v %v %v", addr, got, ok, err, want, wantOK, werr)
	}
	if _, _, err := m.Lookup(addr); err != nil {
		t.Errorf("Lookup without a name: %v", err)
	}
}

// TestThreadExit: opened through a thread that then exits, the ioctl still
// answers (it needs only the mm), the text fails with ESRCH (each read
// looks the task up): hence "open it through the tgid".
func TestThreadExit(t *testing.T) {
	type opened struct {
		p   pair
		err error
	}
	ch := make(chan opened)
	// work opens the pair through the calling thread, which it locks and
	// never unlocks: the runtime ends the thread with the goroutine.
	work := func() {
		runtime.LockOSThread()
		var o opened
		defer func() { ch <- o }()
		tid := unix.Gettid()
		q, err := Open(tid)
		if err != nil {
			o.err = err
			return
		}
		o.p.text, o.err = open(tid, noQuery)
		if q.UsesQuery() {
			o.p.query = q
		}
	}
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			work()
			return
		}
		// The main thread is never ended (the runtime parks it): work on
		// another, which it must be while this goroutine holds the main one.
		defer runtime.UnlockOSThread()
		done := make(chan struct{})
		go func() {
			defer close(done)
			work()
		}()
		<-done
	}()
	o := <-ch
	if o.err != nil {
		t.Fatal(o.err)
	}
	defer o.p.text.Close()
	addr := funcPC()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		_, _, err := o.p.text.Lookup(addr)
		if errors.Is(err, unix.ESRCH) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			_, serr := os.Stat("/proc/self/task/" + strconv.Itoa(o.p.text.pid))
			t.Fatalf("text Lookup through an exited thread = %v, want ESRCH (task dir: %v)", err, serr)
		}
	}
	if o.p.query != nil {
		defer o.p.query.Close()
		if _, ok, err := o.p.query.Lookup(addr); err != nil || !ok {
			t.Errorf("ioctl Lookup through an exited thread = %v %v, want the mapping", ok, err)
		}
	}
}
