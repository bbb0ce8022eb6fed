package procfs

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// ReadMax bounds a read of /proc/<pid>/stat or status: status is about
// 1.5 kB (Linux 6.x, 4.18 likewise), stat under 1 kB.
const ReadMax = 4096

// Read reads the /proc file path into buf with raw open, read and close on
// the calling thread and returns the bytes read. os.ReadFile would also
// register the fd with Go's netpoller (fcntl, epoll_ctl: two more system
// calls a read, and a runtime thread woken; measured in
// bench/results/2026-11-26-breakdown.md); a /proc file never blocks. A file
// longer than buf is cut at len(buf).
func Read(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return ReadFD(fd, buf)
}

// ReadFD reads the blocking fd into buf until buf is full or the end of the
// file, retrying on EINTR, with plain read(2) (no netpoller), and returns
// what it read. On an error the bytes read so far are dropped.
func ReadFD(fd int, buf []byte) ([]byte, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return buf[:n], nil
}

// Tgid is the Tgid of /proc/<tid>/status, tid itself when it cannot be read
// (gone). The kernel formats the file on every read (7 µs raw, 16–18 µs
// through os.ReadFile on the 2-vCPU bench VM): callers that can learn the
// group otherwise should.
func Tgid(tid int) int {
	var buf [ReadMax]byte
	b, err := Read("/proc/"+strconv.Itoa(tid)+"/status", buf[:])
	if err != nil {
		return tid
	}
	return StatusInt(b, "Tgid:", tid)
}
