// Package ptytest makes pseudo-terminals for tests: a pty outside the
// traced tree stands for another session's terminal, and what its master
// has received is the ground truth of a write to it.
package ptytest

import (
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Open makes a pty in the calling process and returns its master,
// unlocked, and the slave's path. The master is closed when the test ends.
// The test is skipped where no pty can be made.
func Open(t testing.TB) (*os.File, string) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no ptys here: %v", err)
	}
	m := os.NewFile(uintptr(fd), "/dev/ptmx")
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
		t.Fatalf("ioctl(TIOCSPTLCK) on %s: %v", m.Name(), err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN) // ptsname
	if err != nil {
		t.Fatalf("ioctl(TIOCGPTN) on %s: %v", m.Name(), err)
	}
	return m, "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
}

// Output reads what has arrived at master m, waiting up to wait for more:
// non-blocking reads, since a pty master never says EOF while its slave is
// open.
func Output(m *os.File, wait time.Duration) (string, error) {
	if err := unix.SetNonblock(int(m.Fd()), true); err != nil {
		return "", err
	}
	var got []byte
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		b := make([]byte, 4096)
		n, err := unix.Read(int(m.Fd()), b)
		if n > 0 {
			got = append(got, b[:n]...)
			continue
		}
		if err != nil && err != unix.EAGAIN {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return string(got), nil
}
