package tracer

import (
	"bytes"
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxPath is PATH_MAX including the terminating NUL.
const maxPath = 4096

var pageSize = os.Getpagesize()

// memReader reads tracee memory. process_vm_readv (3.2) is one call per
// chunk; chunks never cross a page so an unmapped next page does not fail a
// string that ends before it. PTRACE_PEEKDATA is the fallback where
// process_vm_readv is not permitted (some seccomp profiles, old containers).
type memReader struct {
	buf      []byte
	noVMRead bool
}

// read fills p from addr in tid's address space.
//
// Precondition: tid is stopped in a ptrace stop of this tracer.
func (m *memReader) read(tid int, addr uintptr, p []byte) error {
	if !m.noVMRead {
		n, err := processVMReadv(tid, addr, p)
		if err == nil && n == len(p) {
			return nil
		}
		if err == nil || errors.Is(err, syscall.EFAULT) {
			// process_vm_readv honours the page protection; the
			// kernel's own copy_from_user of the call's arguments
			// reads what the CPU can: on x86_64 a PROT_WRITE-only
			// page too. PTRACE_PEEKDATA reads through FOLL_FORCE
			// (ptrace_access_vm), as the kernel would; memory it
			// cannot read is not mapped at all. (A PROT_NONE page it
			// reads too: the call is then decided on bytes the kernel
			// will fail with EFAULT, never on bytes it reads
			// otherwise.) Red-team pass 6: a source route in
			// write-only control data went unchecked.
			return m.peek(tid, addr, p)
		}
		if !errors.Is(err, syscall.ENOSYS) && !errors.Is(err, syscall.EPERM) {
			return os.NewSyscallError("process_vm_readv", err)
		}
		m.noVMRead = true
	}
	return m.peek(tid, addr, p)
}

// peek fills p from addr in tid's address space with PTRACE_PEEKDATA.
//
// Precondition: tid is stopped in a ptrace stop of this tracer.
func (m *memReader) peek(tid int, addr uintptr, p []byte) error {
	n, err := unix.PtracePeekData(tid, addr, p)
	if err != nil {
		if errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EFAULT) {
			return syscall.EFAULT
		}
		return os.NewSyscallError("ptrace(PTRACE_PEEKDATA)", err)
	}
	if n != len(p) {
		return syscall.EFAULT
	}
	return nil
}

// readString reads a NUL-terminated string of at most maxPath bytes
// including the NUL. The bytes it returns are the reader's buffer, valid
// until its next readString (a copy a call would be an allocation on every
// checked call), with the NUL after them in the buffer. It returns EFAULT for unreadable memory and
// ENAMETOOLONG when no NUL comes within maxPath bytes: the kernel would fail
// the call the same way, so the tracer denies with that errno.
func (m *memReader) readString(tid int, addr uintptr) ([]byte, error) {
	if addr == 0 {
		return nil, syscall.EFAULT
	}
	if m.buf == nil {
		m.buf = make([]byte, maxPath)
	}
	out := m.buf[:0]
	for len(out) < maxPath {
		n := pageSize - int(addr%uintptr(pageSize))
		if n > maxPath-len(out) {
			n = maxPath - len(out)
		}
		chunk := out[len(out) : len(out)+n]
		if err := m.read(tid, addr, chunk); err != nil {
			return nil, err
		}
		if i := bytes.IndexByte(chunk, 0); i >= 0 {
			// The string's NUL stays right after it (withNUL).
			return out[:len(out)+i], nil
		}
		out = out[:len(out)+n]
		addr += uintptr(n)
	}
	return nil, syscall.ENAMETOOLONG
}

// readBytes reads exactly n bytes (n small: sockaddrs, msghdrs).
func (m *memReader) readBytes(tid int, addr uintptr, n int) ([]byte, error) {
	if addr == 0 {
		return nil, syscall.EFAULT
	}
	p := make([]byte, n)
	// Split at page boundaries for the same reason as readString.
	for off := 0; off < n; {
		c := pageSize - int((addr+uintptr(off))%uintptr(pageSize))
		if c > n-off {
			c = n - off
		}
		if err := m.read(tid, addr+uintptr(off), p[off:off+c]); err != nil {
			return nil, err
		}
		off += c
	}
	return p, nil
}

// withNUL returns s with its NUL terminator: readString's bytes, the NUL
// already after them, without a copy; a copy for any other slice.
func withNUL(s []byte) []byte {
	if n := len(s); cap(s) > n && s[:n+1][n] == 0 {
		return s[:n+1]
	}
	return append(append(make([]byte, 0, len(s)+1), s...), 0)
}
