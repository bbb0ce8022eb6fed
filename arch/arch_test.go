package arch

import (
	"encoding/binary"
	"syscall"
	"testing"
)

func TestLayouts(t *testing.T) {
	for _, tc := range []struct {
		l    *Layout
		size int
	}{
		{X86_64, 216},  // sizeof(struct user_regs_struct)
		{AArch64, 272}, // sizeof(struct user_pt_regs)
	} {
		t.Run(tc.l.Name, func(t *testing.T) {
			if tc.l.Size() != tc.size {
				t.Fatalf("size %d, want %d", tc.l.Size(), tc.size)
			}
			seen := map[int]bool{}
			for _, w := range tc.l.ArgWords {
				if w < 0 || w >= tc.l.Words || seen[w] {
					t.Fatalf("bad argument word %d", w)
				}
				seen[w] = true
			}
		})
	}
}

func TestDecodeArgs(t *testing.T) {
	for _, l := range []*Layout{X86_64, AArch64} {
		t.Run(l.Name, func(t *testing.T) {
			b := make([]byte, l.Size())
			for i := 0; i < l.Words; i++ {
				binary.LittleEndian.PutUint64(b[i*8:], uint64(1000+i))
			}
			r := l.NewRegs()
			if err := r.Decode(b); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 6; i++ {
				if got, want := r.Arg(i), uint64(1000+l.ArgWords[i]); got != want {
					t.Errorf("arg %d = %d, want %d", i, got, want)
				}
			}
			if r.Nr() != 1000+l.NrWord {
				t.Errorf("nr = %d", r.Nr())
			}
			if err := r.Decode(b[:8]); err == nil {
				t.Error("short register set accepted")
			}
		})
	}
}

func TestInt32Arg(t *testing.T) {
	r := X86_64.NewRegs()
	r.W[X86_64.ArgWords[0]] = 0xdeadbeef_ffffff9c // garbage high half, AT_FDCWD low half
	if got := r.Int32Arg(0); got != -100 {
		t.Fatalf("Int32Arg = %d, want -100", got)
	}
}

func TestDenyX86_64(t *testing.T) {
	r := X86_64.NewRegs()
	r.W[15] = 257 // orig_rax = openat
	r.W[14] = 0xfeed
	w := r.Deny(syscall.EACCES)
	if len(w) != 1 || w[0].Note != NTPrstatus {
		t.Fatalf("writes = %+v, want one NT_PRSTATUS", w)
	}
	back := X86_64.NewRegs()
	if err := back.Decode(w[0].Data); err != nil {
		t.Fatal(err)
	}
	if int64(back.W[15]) != -1 {
		t.Errorf("orig_rax = %#x, want -1", back.W[15])
	}
	if int64(back.W[10]) != -int64(syscall.EACCES) {
		t.Errorf("rax = %d, want -EACCES", int64(back.W[10]))
	}
	if back.W[14] != 0xfeed {
		t.Errorf("rdi changed: %#x", back.W[14])
	}
}

func TestDenyAArch64(t *testing.T) {
	r := AArch64.NewRegs()
	r.W[8] = 56 // openat
	r.W[0] = 0xffffff9c
	r.W[1] = 0x4000
	arg0 := r.Arg(0)
	w := r.Deny(syscall.EPERM)
	if len(w) != 2 {
		t.Fatalf("writes = %d, want 2", len(w))
	}
	if w[0].Note != NTPrstatus || w[1].Note != NTArmSystemCall {
		t.Fatalf("notes = %#x, %#x; want NT_PRSTATUS then NT_ARM_SYSTEM_CALL", w[0].Note, w[1].Note)
	}
	back := AArch64.NewRegs()
	if err := back.Decode(w[0].Data); err != nil {
		t.Fatal(err)
	}
	if int64(back.W[0]) != -int64(syscall.EPERM) {
		t.Errorf("x0 = %d, want -EPERM", int64(back.W[0]))
	}
	if back.W[8] != 56 {
		t.Errorf("x8 rewritten to %d: writing x8 does not skip a call on arm64, it must stay", back.W[8])
	}
	if back.W[1] != 0x4000 {
		t.Errorf("x1 changed")
	}
	if len(w[1].Data) != 4 || int32(binary.LittleEndian.Uint32(w[1].Data)) != -1 {
		t.Errorf("NT_ARM_SYSTEM_CALL data = %x, want int32(-1)", w[1].Data)
	}
	if arg0 != 0xffffff9c {
		t.Errorf("argument read before Deny changed: %#x", arg0)
	}
}

// word decodes word i of a NT_PRSTATUS write.
func word(w Write, i int) uint64 { return binary.LittleEndian.Uint64(w.Data[i*8:]) }

// Inject turns the stopped call into another: x86_64 through orig_rax in the
// one register write; aarch64 through x0..x5 and then NT_ARM_SYSTEM_CALL
// (x8 would change nothing). Restart, from the seccomp stop's registers,
// sets them back with the PC on the syscall instruction and the number
// where that instruction reads it, the stopped call marked as none (-1).
func TestInjectAndRestart(t *testing.T) {
	args := [6]uint64{2 << 32, 1 << 18, 1, 0x100022, ^uint64(0), 0}
	cases := []struct {
		l        *Layout
		nr       int // the original call
		mmap     int
		pcBack   uint64
		writes   int
		numberAt int // where the restarted instruction reads the number
	}{
		{X86_64, 257, 9, 2, 1, 10},  // rax
		{AArch64, 56, 222, 4, 2, 8}, // x8
	}
	for _, c := range cases {
		t.Run(c.l.Name, func(t *testing.T) {
			r := c.l.NewRegs()
			for i := range r.W {
				r.W[i] = uint64(100 + i)
			}
			r.W[c.l.NrWord] = uint64(c.nr)
			r.W[c.l.PCWord] = 0x401000
			orig := r.Clone()
			w := r.Inject(c.mmap, args)
			if len(w) != c.writes || w[0].Note != NTPrstatus {
				t.Fatalf("writes %+v", w)
			}
			for i, a := range args {
				if got := word(w[0], c.l.ArgWords[i]); got != a {
					t.Errorf("arg %d = %#x, want %#x", i, got, a)
				}
			}
			if c.l == X86_64 {
				if got := word(w[0], c.l.NrWord); got != uint64(c.mmap) {
					t.Errorf("orig_rax = %d, want %d", got, c.mmap)
				}
			} else if w[1].Note != NTArmSystemCall || int32(binary.LittleEndian.Uint32(w[1].Data)) != int32(c.mmap) {
				t.Errorf("NT_ARM_SYSTEM_CALL write %+v, want %d", w[1], c.mmap)
			}
			if orig.W[c.l.ArgWords[0]] != 100+uint64(c.l.ArgWords[0]) {
				t.Fatal("Clone shares its words")
			}
			w = orig.Restart()
			if len(w) != c.writes {
				t.Fatalf("restart writes %+v", w)
			}
			for i := 0; i < 6; i++ {
				aw := c.l.ArgWords[i]
				if got := word(w[0], aw); got != 100+uint64(aw) {
					t.Errorf("restart arg %d = %d, want %d", i, got, 100+aw)
				}
			}
			if got := word(w[0], c.l.PCWord); got != 0x401000-c.pcBack {
				t.Errorf("pc = %#x, want %#x", got, 0x401000-c.pcBack)
			}
			if got := word(w[0], c.numberAt); got != uint64(c.nr) {
				t.Errorf("number register = %d, want %d", got, c.nr)
			}
			if c.l == X86_64 {
				if got := word(w[0], c.l.NrWord); got != ^uint64(0) {
					t.Errorf("orig_rax = %#x, want -1", got)
				}
			} else if w[1].Note != NTArmSystemCall || int32(binary.LittleEndian.Uint32(w[1].Data)) != -1 {
				t.Errorf("NT_ARM_SYSTEM_CALL write %+v, want -1", w[1])
			}
		})
	}
}

func TestArgIsRetAndSetArg(t *testing.T) {
	if X86_64.ArgIsRet(0) || X86_64.ArgIsRet(1) {
		t.Error("x86_64: rdi and rsi are not rax")
	}
	if !AArch64.ArgIsRet(0) || AArch64.ArgIsRet(1) {
		t.Error("aarch64: x0 is the return register, x1 is not")
	}
	for _, l := range []*Layout{X86_64, AArch64} {
		r := l.NewRegs()
		r.SetArg(1, 0xdead)
		r.W[l.RetWord] = 7
		if r.Arg(1) != 0xdead || r.Ret() != 7 {
			t.Errorf("%s: arg 1 %#x ret %d", l.Name, r.Arg(1), r.Ret())
		}
	}
}

// TestArgUserOffset: struct user on x86_64 begins with user_regs_struct, so
// argument i's PTRACE_POKEUSER offset is its word's (offsetof(struct user,
// regs.rsi) is 104: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx come
// first); arm64 has no PTRACE_POKEUSR.
func TestArgUserOffset(t *testing.T) {
	want := [6]uintptr{112, 104, 96, 56, 72, 64} // rdi rsi rdx r10 r8 r9
	for i, w := range want {
		if off, ok := X86_64.ArgUserOffset(i); !ok || off != w {
			t.Errorf("x86_64 arg %d: offset %d (ok %v), want %d", i, off, ok, w)
		}
	}
	for i := 0; i < 6; i++ {
		if _, ok := AArch64.ArgUserOffset(i); ok {
			t.Errorf("aarch64 arg %d: has a POKEUSER offset", i)
		}
	}
}
