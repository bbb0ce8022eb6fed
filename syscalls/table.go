package syscalls

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// Audit architecture values of seccomp_data.arch (include/uapi/linux/audit.h).
const (
	AuditArchX86_64  = 0xc000003e // EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
	AuditArchAARCH64 = 0xc00000b7 // EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
	AuditArchI386    = 0x40000003 // EM_386 | __AUDIT_ARCH_LE: int 0x80 on x86_64
	AuditArchARM     = 0x40000028 // EM_ARM | __AUDIT_ARCH_LE: AArch32 on arm64
)

// X32SyscallBit is __X32_SYSCALL_BIT: x86_64 tasks reach the x32 ABI by
// setting it in the syscall number; the audit arch stays AUDIT_ARCH_X86_64.
const X32SyscallBit = 0x40000000

// OpenFlagBits are the open(2) flags whose values differ between ABIs.
// arch/arm64/include/uapi/asm/fcntl.h swaps them against asm-generic (which
// x86_64 uses): the other flags, and so OpenWriteMask, are the same on both.
type OpenFlagBits struct {
	Directory uint64 // O_DIRECTORY
	NoFollow  uint64 // O_NOFOLLOW
	Direct    uint64 // O_DIRECT
	LargeFile uint64 // O_LARGEFILE
}

// Table is the system call table of one ABI.
type Table struct {
	// ABI is "x86_64" or "aarch64", as in reports. (The field cannot be
	// called Name: Name(nr) is the number-to-name method.)
	ABI       string
	AuditArch uint32 // seccomp_data.arch of this ABI
	// CompatAuditArch is seccomp_data.arch of the one other ABI a task of
	// this architecture can make calls in (i386, AArch32): the filter traps
	// every call whose arch is not AuditArch, and only this one can come.
	CompatAuditArch uint32
	Max             int    // highest known system call number
	X32Bit          uint32 // X32SyscallBit on x86_64, 0 elsewhere
	Open            OpenFlagBits

	names  []string // by number; "" for gaps
	byName []uint16 // numbers in the order of their names (generated)
}

func newTable(name string, audit, compat uint32, x32 uint32, open OpenFlagBits, names []string, byName []uint16) *Table {
	t := &Table{ABI: name, AuditArch: audit, CompatAuditArch: compat, X32Bit: x32, Open: open, names: names, byName: byName}
	for nr := len(names) - 1; nr >= 0; nr-- {
		if names[nr] != "" {
			t.Max = nr
			break
		}
	}
	return t
}

var (
	// AMD64 is the x86_64 (64-bit) ABI. The x32 and i386 ABIs are not
	// supported: the filter kills a task that uses them.
	AMD64 = newTable("x86_64", AuditArchX86_64, AuditArchI386, X32SyscallBit,
		OpenFlagBits{Directory: 0o200000, NoFollow: 0o400000, Direct: 0o40000, LargeFile: 0o100000},
		x86_64Names[:], x86_64ByName[:])
	// ARM64 is the aarch64 ABI. AArch32 (compat) tasks are killed by the
	// filter.
	ARM64 = newTable("aarch64", AuditArchAARCH64, AuditArchARM, 0,
		OpenFlagBits{Directory: 0o40000, NoFollow: 0o100000, Direct: 0o200000, LargeFile: 0o400000},
		aarch64Names[:], aarch64ByName[:])
)

// Native returns the table of the ABI this binary runs in, nil when
// tracecell does not support the architecture.
func Native() *Table {
	return ForGOARCH(runtime.GOARCH)
}

// ForGOARCH returns the table for a GOARCH value ("amd64", "arm64"), nil
// when unsupported.
func ForGOARCH(goarch string) *Table {
	switch goarch {
	case "amd64":
		return AMD64
	case "arm64":
		return ARM64
	}
	return nil
}

// Nr returns the number of a system call on this ABI.
func (t *Table) Nr(name string) (int, bool) {
	// A binary search of the generated index: no map to build at start-up.
	i, found := slices.BinarySearchFunc(t.byName, name, func(nr uint16, name string) int {
		return strings.Compare(t.names[nr], name)
	})
	if !found {
		return 0, false
	}
	return int(t.byName[i]), true
}

// Name returns the name of a system call number, "syscall_N" when the
// number is unknown (a gap, a negative number, or newer than the table).
func (t *Table) Name(nr int) string {
	if nr >= 0 && nr < len(t.names) && t.names[nr] != "" {
		return t.names[nr]
	}
	return "syscall_" + strconv.Itoa(nr)
}

// Names returns every known system call name of the ABI in number order.
func (t *Table) Names() []string {
	out := make([]string, 0, len(t.byName))
	for _, n := range t.names {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}
