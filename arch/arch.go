// Package arch is the only place that knows register layouts. It decodes the
// general-purpose register set of a thread stopped at a seccomp stop (as
// PTRACE_GETREGSET with NT_PRSTATUS returns it) and plans the register writes
// that make the kernel skip a system call and return an error.
//
// Both layouts are plain Go that compiles on either supported GOARCH, so the
// arm64 denial path (which cannot be exercised on an x86_64 host) is
// unit-tested on both; native_*.go files pick the layout of the running
// binary, and unsupported.go stops the build on any other GOOS/GOARCH with
// a message naming the supported ones.
package arch

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// ELF note types for PTRACE_GETREGSET / PTRACE_SETREGSET (include/uapi/linux/elf.h).
const (
	NTPrstatus      = unix.NT_PRSTATUS        // struct user_regs_struct / user_pt_regs
	NTArmSystemCall = unix.NT_ARM_SYSTEM_CALL // the syscall number as an int32 (arm64, since 3.18)
)

// Layout describes one architecture's NT_PRSTATUS register set.
type Layout struct {
	// Name is the audit/uname name ("x86_64", "aarch64"), matching the
	// syscalls table names.
	Name string
	// Words is the number of 64-bit words in the NT_PRSTATUS register set.
	Words int
	// NrWord is the word holding the syscall number at a seccomp stop.
	NrWord int
	// ArgWords are the words holding the six syscall arguments.
	ArgWords [6]int
	// RetWord is the word the kernel returns to user space.
	RetWord int
	// PCWord is the instruction pointer (Restart moves it back onto the
	// syscall instruction).
	PCWord int
	// skipNote, when non-zero, is a regset that must be written with int32(-1)
	// to skip the call (arm64); zero means writing NrWord = -1 skips it (x86_64).
	skipNote int
	// pokeUser: PTRACE_POKEUSER writes one word of this register set at
	// offset 8*word of struct user (x86_64, whose struct user begins with
	// user_regs_struct). arm64 has no PTRACE_POKEUSR: its arch_ptrace
	// leaves it to ptrace_request, which answers EIO.
	pokeUser bool
}

// X86_64 is struct user_regs_struct (arch/x86/include/asm/user_64.h):
// r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs
// eflags rsp ss fs_base gs_base ds es fs gs.
var X86_64 = &Layout{
	Name:     "x86_64",
	Words:    27,
	NrWord:   15,                          // orig_rax
	ArgWords: [6]int{14, 13, 12, 7, 9, 8}, // rdi rsi rdx r10 r8 r9
	RetWord:  10,                          // rax
	PCWord:   16,                          // rip
	pokeUser: true,
}

// AArch64 is struct user_pt_regs (arch/arm64/include/uapi/asm/ptrace.h):
// x0..x30 sp pc pstate. x0 is both the first argument and the return value,
// so arguments must be read before a denial is written.
var AArch64 = &Layout{
	Name:     "aarch64",
	Words:    34,
	NrWord:   8, // x8 holds the number, but writing it does not change the call
	ArgWords: [6]int{0, 1, 2, 3, 4, 5},
	RetWord:  0,
	PCWord:   32,
	skipNote: NTArmSystemCall,
}

// Regs is a decoded register set of one stopped thread.
type Regs struct {
	L *Layout
	W []uint64
}

// NewRegs returns a zeroed register set of layout l.
func (l *Layout) NewRegs() *Regs { return &Regs{L: l, W: make([]uint64, l.Words)} }

// Size is the byte size of the NT_PRSTATUS register set.
func (l *Layout) Size() int { return l.Words * 8 }

// Decode fills r from the bytes PTRACE_GETREGSET wrote. Both supported
// architectures are little-endian.
func (r *Regs) Decode(b []byte) error {
	if len(b) != r.L.Size() {
		return fmt.Errorf("%s register set is %d bytes, kernel gave %d", r.L.Name, r.L.Size(), len(b))
	}
	for i := range r.W {
		r.W[i] = binary.LittleEndian.Uint64(b[i*8:])
	}
	return nil
}

// Encode writes r into b (len(b) must be L.Size()).
func (r *Regs) Encode(b []byte) {
	for i, w := range r.W {
		binary.LittleEndian.PutUint64(b[i*8:], w)
	}
}

// Nr is the syscall number at a seccomp stop.
func (r *Regs) Nr() int { return int(int32(r.W[r.L.NrWord])) }

// Arg returns syscall argument i (0..5) as the raw 64-bit register.
func (r *Regs) Arg(i int) uint64 { return r.W[r.L.ArgWords[i]] }

// Int32Arg returns argument i as the kernel sees an int argument (dirfd,
// flags): only the low 32 bits count.
func (r *Regs) Int32Arg(i int) int32 { return int32(uint32(r.Arg(i))) }

// Write is one PTRACE_SETREGSET call: a note type and its bytes.
type Write struct {
	Note int
	Data []byte
}

// Deny plans the register writes that make the kernel skip the system call
// the thread is stopped in (at a seccomp stop) and return -errno. The writes
// must be applied in order.
//
// x86_64: orig_rax = -1 skips the call and rax = -errno is returned; one
// NT_PRSTATUS write. Since Linux 4.8 (commit 93e35efb8de4 "x86/ptrace: run
// seccomp after ptrace") the filter is re-run after a trace stop, and a
// skipped (-1) call is not re-checked.
//
// aarch64: the number lives in a separate slot (syscallno) that only
// NT_ARM_SYSTEM_CALL writes; changing x8 does not skip anything. So: x0 =
// -errno through NT_PRSTATUS, then int32(-1) through NT_ARM_SYSTEM_CALL. The
// kernel leaves x0 alone for a skipped call (NO_SYSCALL), so -errno is what
// user space sees.
func (r *Regs) Deny(errno syscall.Errno) []Write {
	r.W[r.L.RetWord] = uint64(-int64(errno))
	if r.L.skipNote == 0 {
		r.W[r.L.NrWord] = ^uint64(0) // -1
	}
	b := make([]byte, r.L.Size())
	r.Encode(b)
	w := []Write{{Note: NTPrstatus, Data: b}}
	if r.L.skipNote != 0 {
		nr := make([]byte, 4)
		binary.LittleEndian.PutUint32(nr, ^uint32(0)) // int32(-1)
		w = append(w, Write{Note: r.L.skipNote, Data: nr})
	}
	return w
}

// AtSyscallEntry tells a syscall-entry stop from a syscall-exit stop (used
// only by the start-up probe, where PTRACE_GET_SYSCALL_INFO (5.3) cannot be
// relied on). x86_64 sets rax to -ENOSYS before the entry stop; arm64 sets
// x7 to 0 at entry and 1 at exit (PTRACE_SYSCALL_ENTER/EXIT, since 3.7).
func (r *Regs) AtSyscallEntry() bool {
	switch r.L {
	case X86_64:
		return int64(r.W[10]) == -int64(syscall.ENOSYS)
	case AArch64:
		return r.W[7] == 0
	}
	return false
}

// Ret is the value the kernel returned, at a syscall-exit stop.
func (r *Regs) Ret() uint64 { return r.W[r.L.RetWord] }

// SetArg sets syscall argument i (0..5) to v in r; Writes applies it.
func (r *Regs) SetArg(i int, v uint64) { r.W[r.L.ArgWords[i]] = v }

// ArgIsRet reports whether argument i lives in the register the kernel
// returns in (x0 on aarch64): the call's end overwrites it, so it need not
// be, and must not be, set back at the syscall-exit stop.
func (l *Layout) ArgIsRet(i int) bool { return l.ArgWords[i] == l.RetWord }

// ArgUserOffset is the offset in struct user of the register holding
// argument i, for a PTRACE_POKEUSER that sets that one register in a single
// system call (instead of PTRACE_GETREGSET and PTRACE_SETREGSET of them
// all). ok is false where the architecture has no PTRACE_POKEUSER (arm64).
func (l *Layout) ArgUserOffset(i int) (off uintptr, ok bool) {
	if !l.pokeUser {
		return 0, false
	}
	return uintptr(l.ArgWords[i]) * 8, true
}

// Clone returns a copy of r.
func (r *Regs) Clone() *Regs {
	return &Regs{L: r.L, W: append([]uint64(nil), r.W...)}
}

// Writes plans the PTRACE_SETREGSET that stores r as it is.
func (r *Regs) Writes() []Write {
	b := make([]byte, r.L.Size())
	r.Encode(b)
	return []Write{{Note: NTPrstatus, Data: b}}
}

// Inject plans the writes that turn the call a thread is stopped in, at a
// seccomp stop, into call nr with args: the kernel runs that one instead
// (and, since Linux 4.8, runs the filter on it again, taking a second
// SECCOMP_RET_TRACE as an allow). On x86_64 the number is orig_rax; on
// aarch64 only NT_ARM_SYSTEM_CALL changes it (x8 is read once, before the
// stop).
func (r *Regs) Inject(nr int, args [6]uint64) []Write {
	for i, v := range args {
		r.SetArg(i, v)
	}
	if r.L.skipNote == 0 {
		r.W[r.L.NrWord] = uint64(nr)
	}
	w := r.Writes()
	if r.L.skipNote != 0 {
		b := make([]byte, 4)
		binary.LittleEndian.PutUint32(b, uint32(int32(nr)))
		w = append(w, Write{Note: r.L.skipNote, Data: b})
	}
	return w
}

// Restart plans the writes, at the syscall-exit stop of a call injected
// with Inject, that make the thread make its own call again: r must be
// the registers of the seccomp stop the injection started from. The
// registers are set back, the PC is put back on the syscall instruction
// (syscall, 0f 05, and svc #0 are 2 and 4 bytes long) and the number where
// that instruction takes it from (rax; x8, which r holds). The kernel is
// told that the stopped call is no call (orig_rax = -1; syscallno = -1
// through NT_ARM_SYSTEM_CALL), so a signal delivered before the thread
// goes on never takes the registers for an interrupted call to restart.
func (r *Regs) Restart() []Write {
	nr := r.W[r.L.NrWord]
	switch r.L {
	case X86_64:
		r.W[r.L.RetWord] = nr // rax: the number syscall reads
		r.W[r.L.NrWord] = ^uint64(0)
		r.W[r.L.PCWord] -= 2
	default:
		r.W[r.L.PCWord] -= 4
	}
	w := r.Writes()
	if r.L.skipNote != 0 {
		b := make([]byte, 4)
		binary.LittleEndian.PutUint32(b, ^uint32(0))
		w = append(w, Write{Note: r.L.skipNote, Data: b})
	}
	return w
}
