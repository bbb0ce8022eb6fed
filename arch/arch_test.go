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
