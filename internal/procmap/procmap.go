// Package procmap answers "which mapping covers address A" in a process's
// memory (its mm), the question of the tracer's shared-futex check: one
// PROCMAP_QUERY ioctl (Linux 6.11, ~0.5 µs from Go) where the kernel has
// it, the /proc/<pid>/maps text (read from the start up to the covering
// line) where it does not (4.18 to 6.10). Both give the same answer.
//
// # The fd holds the mm it was opened on
//
// A Maps is an open fd of /proc/<pid>/maps. The open (proc_maps_open →
// proc_mem_open → mm_access, fs/proc/task_mmu.c and fs/proc/base.c; so on
// 4.18 as on 6.x) pins the mm the task has at that moment, and both the
// ioctl and a read answer for that mm (priv->mm, taken with
// mmget_not_zero), not for the task's current one. So the holder must
// Close and Open again after every exec of the process (PTRACE_EVENT_EXEC:
// exec_mmap replaced the mm). Without that:
//   - when nothing else uses the old mm it is gone: every Lookup fails with
//     ESRCH (the ioctl's mmget_not_zero; the text reads empty), which is
//     safe but useless;
//   - when the old mm lives on — a vfork child, or a clone(CLONE_VM)
//     child, that execs leaves its parent's mm — the fd keeps answering,
//     silently, for the parent's memory.
//
// One Maps serves every thread of a process (threads share the mm). Open
// it through the process's tgid: a read of the text looks the task of the
// fd up again (m_start: get_proc_task), and fails with ESRCH once that
// task is reaped, which a thread is at its exit, while a group leader stays
// (a zombie) until the last thread has exited. But a zombie leader has no
// mm (exit_mm ran when it left with pthread_exit): an fd opened through its
// tgid after that pins no mm, and answers ESRCH (the ioctl; the text reads
// empty, which Lookup reports as ESRCH too), while one opened before keeps
// working. The holder then opens the fd through a live thread of the
// process instead (its tid), whose text reads fail with ESRCH once that
// thread is reaped: open again, through a thread still alive. A task
// created with CLONE_VM but without CLONE_THREAD shares the mm too until
// its exec.
//
// An answer describes the mm at the moment of the query only: the caller
// must hold every task sharing the mm still (the tracer's frozen tree, or a
// task alone in its mm in a ptrace stop) from the query until the kernel
// has used the address, as it does for the text read today.
package procmap

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// Mapping is one VMA: the facts a line of /proc/<pid>/maps shows
// ("start-end perms offset dev inode path", show_map_vma in
// fs/proc/task_mmu.c), and PROCMAP_QUERY returns.
type Mapping struct {
	Start, End uint64 // the VMA is [Start, End)
	Read       bool   // VM_READ ('r')
	Write      bool   // VM_WRITE ('w')
	Exec       bool   // VM_EXEC ('x')
	// Shared is VM_MAYSHARE ('s' rather than 'p'): a MAP_SHARED mapping,
	// writable or not (a read-only one keeps VM_MAYSHARE).
	Shared bool
	// Offset is the file offset of Start (vm_pgoff << PAGE_SHIFT) for a
	// file mapping, 0 for anonymous memory.
	Offset uint64
	// DevMajor and DevMinor are the device of the file's file system
	// (i_sb->s_dev), 0 for anonymous memory.
	DevMajor, DevMinor uint32
	// Inode is the file's inode number; 0 for memory without a file
	// (private anonymous memory, the heap, the stack, [vdso]). Shared
	// anonymous memory has a file (shmem, "/dev/zero (deleted)") and so an
	// inode.
	Inode uint64
	// Path is the name as the maps text shows it — a file path (with
	// " (deleted)" when it was unlinked; a newline in it written "\012"),
	// "[heap]", "[stack]", "[vdso]", "[anon:NAME]", or "" for unnamed
	// anonymous memory. Only LookupNamed fills it.
	Path string
}

// queryFunc is the kernel's PROCMAP_QUERY (ioctlQuery); tests replace it
// with a kernel that does not have it.
type queryFunc func(fd int, q *procmapQuery, name []byte) error

// pathMax is PATH_MAX: do_procmap_query writes at most that much of a name
// (and fails with ENAMETOOLONG beyond it).
const pathMax = 4096

// textBufSize is the first size of the text path's read buffer: a few
// hundred lines a read (4 KiB reads were no faster for the first line, 64
// KiB ones slower for the last: BenchmarkLookup); it grows for a line
// longer than itself.
const textBufSize = 16 << 10

// Maps answers which mapping covers an address in the mm of the process it
// was opened on. It is not safe for concurrent use (it reuses buffers).
type Maps struct {
	pid   int          // the task whose /proc/<pid>/maps fd is open, for errors
	fd    int          // the fd; -1 once closed
	query queryFunc    // the ioctl; nil: the kernel has none, read the text
	q     procmapQuery // the ioctl's argument, kept here: a local one would escape to the heap (m.query is a func value)
	name  []byte       // LookupNamed's name buffer for the ioctl (pathMax), made on first use
	buf   []byte       // the text path's read buffer, made on first use
}

// Open opens /proc/<pid>/maps and chooses, once, how to ask it: a probe
// PROCMAP_QUERY that fails with ENOTTY (no such ioctl: before 6.11) or
// EINVAL (a kernel that refuses this struct) selects the text. Open again
// after the process execs (see the package comment). Where the kernel has
// the ioctl, Open fails (wrapping ESRCH) if pid's mm is already gone; on
// the text path the first Lookup does.
func Open(pid int) (*Maps, error) { return open(pid, ioctlQuery) }

// open is Open with the kernel's ioctl given.
func open(pid int, query queryFunc) (*Maps, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/maps"
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	m := &Maps{pid: pid, fd: fd}
	// Address 0 lies below mmap_min_addr on any ordinary system: the probe
	// answers ENOENT; a mapping there would be an answer just as good.
	var q procmapQuery
	switch err := query(fd, &q, nil); {
	case err == nil, errors.Is(err, unix.ENOENT):
		m.query = query
	case errors.Is(err, unix.ENOTTY), errors.Is(err, unix.EINVAL):
		// The text path.
	default:
		unix.Close(fd)
		return nil, fmt.Errorf("ioctl PROCMAP_QUERY on %s (pid %d): %w", path, pid, err)
	}
	return m, nil
}

// UsesQuery reports whether m asks the kernel with PROCMAP_QUERY (false:
// it reads the maps text).
func (m *Maps) UsesQuery() bool { return m.query != nil }

// Close closes the fd. Closing twice is harmless.
func (m *Maps) Close() error {
	if m.fd < 0 {
		return nil
	}
	err := unix.Close(m.fd)
	m.fd = -1
	if err != nil {
		return fmt.Errorf("close /proc/%d/maps: %w", m.pid, err)
	}
	return nil
}

// Lookup returns the mapping that covers addr, without its Path; false
// when addr lies in no mapping (a hole: the kernel would fault on it). An
// error wraps ESRCH when the mm is gone (the process exited or execed
// since Open).
//
// Precondition: every task sharing the mm is stopped (package comment).
func (m *Maps) Lookup(addr uint64) (Mapping, bool, error) { return m.lookup(addr, false) }

// LookupNamed is Lookup with Mapping.Path filled, for a report: the ioctl
// then also copies the name out (a d_path), so ask only when the name is
// needed.
//
// Precondition: every task sharing the mm is stopped (package comment).
func (m *Maps) LookupNamed(addr uint64) (Mapping, bool, error) { return m.lookup(addr, true) }

func (m *Maps) lookup(addr uint64, named bool) (Mapping, bool, error) {
	if m.fd < 0 {
		return Mapping{}, false, fmt.Errorf("lookup in /proc/%d/maps: %w", m.pid, unix.EBADF)
	}
	if m.query == nil {
		return m.scan(addr, named)
	}
	var name []byte
	if named {
		if m.name == nil {
			m.name = make([]byte, pathMax)
		}
		name = m.name
	}
	m.q = procmapQuery{queryAddr: addr}
	q := &m.q
	err := m.query(m.fd, q, name)
	switch {
	case errors.Is(err, unix.ENOENT):
		return Mapping{}, false, nil
	case named && errors.Is(err, unix.ENAMETOOLONG):
		// A path longer than PATH_MAX: the text shows it whole.
		return m.scan(addr, true)
	case err != nil:
		return Mapping{}, false, fmt.Errorf("ioctl PROCMAP_QUERY at %#x on /proc/%d/maps: %w", addr, m.pid, err)
	}
	mp := Mapping{
		Start: q.vmaStart, End: q.vmaEnd,
		Read:   q.vmaFlags&procmapQueryVMAReadable != 0,
		Write:  q.vmaFlags&procmapQueryVMAWritable != 0,
		Exec:   q.vmaFlags&procmapQueryVMAExecutable != 0,
		Shared: q.vmaFlags&procmapQueryVMAShared != 0,
		Offset: q.vmaOffset, DevMajor: q.devMajor, DevMinor: q.devMinor, Inode: q.inode,
	}
	if named && q.vmaNameSize > 0 {
		mp.Path = escapeName(name[:q.vmaNameSize-1]) // the size counts the NUL
	}
	return mp, true, nil
}

// escapeName writes a name from PROCMAP_QUERY as the maps text does: the
// text prints a file's path with seq_file_path(m, file, "\n"), which writes
// a newline as the octal escape "\012" (mangle_path) and nothing else
// escaped; names that are not paths ("[heap]", "[anon:x]") hold no newline.
func escapeName(b []byte) string {
	if bytes.IndexByte(b, '\n') < 0 {
		return string(b)
	}
	return string(bytes.ReplaceAll(b, []byte{'\n'}, []byte(`\012`)))
}

// gateName is the name of x86-64's vsyscall page (arch/x86/entry/vsyscall:
// gate_vma_name), which the maps text lists last (m_next adds
// get_gate_vma) but which is no VMA of the mm: PROCMAP_QUERY (find_vma)
// does not see it. The text path skips it to give the ioctl's answer; no
// other mapping is named so (files are paths, special mappings "[vdso]",
// "[vvar]", "[uprobes]", anonymous names "[anon:...]").
const gateName = "[vsyscall]"

// scan is the text path: it reads /proc/<pid>/maps from the start, parsing
// line by line, until the line covering addr or the first above it (the
// text lists the VMAs in address order). Raw pread, not os.File: an
// os.File registers the fd with the Go netpoller (fcntl, epoll_ctl).
func (m *Maps) scan(addr uint64, named bool) (Mapping, bool, error) {
	if m.buf == nil {
		m.buf = make([]byte, textBufSize)
	}
	var off int64 // file offset of the next read
	n := 0        // bytes at the front of m.buf not parsed yet
	for {
		if n == len(m.buf) {
			// One line fills the buffer: grow it.
			m.buf = append(m.buf, make([]byte, len(m.buf))...)
		}
		r, err := unix.Pread(m.fd, m.buf[n:], off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return Mapping{}, false, fmt.Errorf("pread /proc/%d/maps: %w", m.pid, err)
		}
		if r == 0 {
			if off == 0 {
				// m_start finds no mm (mmget_not_zero failed): it is gone,
				// as the ioctl reports with ESRCH. A live mm has a line.
				return Mapping{}, false, fmt.Errorf("read /proc/%d/maps: empty, the mm is gone: %w", m.pid, unix.ESRCH)
			}
			return Mapping{}, false, nil
		}
		off += int64(r)
		n += r
		data := m.buf[:n]
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			line := data[:i]
			data = data[i+1:]
			mp, name, err := parseLine(line)
			if err != nil {
				return Mapping{}, false, fmt.Errorf("read /proc/%d/maps: %w", m.pid, err)
			}
			if string(name) == gateName {
				continue
			}
			if addr < mp.Start {
				return Mapping{}, false, nil
			}
			if addr < mp.End {
				if named {
					mp.Path = string(name)
				}
				return mp, true, nil
			}
		}
		n = copy(m.buf, data)
	}
}
