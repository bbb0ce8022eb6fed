package procmap

import (
	"strings"
	"testing"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Mapping
		path string
	}{
		{"file, private, exec", "555fc5eb7000-555fc5ebc000 r-xp 00002000 fe:00 247026                     /usr/bin/cat",
			Mapping{Start: 0x555fc5eb7000, End: 0x555fc5ebc000, Read: true, Exec: true, Offset: 0x2000, DevMajor: 0xfe, Inode: 247026}, "/usr/bin/cat"},
		{"path with spaces", "7f0000000000-7f0000001000 rw-s 00000000 08:01 42                         /tmp/a b  c",
			Mapping{Start: 0x7f0000000000, End: 0x7f0000001000, Read: true, Write: true, Shared: true, DevMajor: 8, DevMinor: 1, Inode: 42}, "/tmp/a b  c"},
		{"deleted file", "7f0000000000-7f0000002000 r--s 00001000 00:1a 7 /dev/shm/sem.mp-x (deleted)",
			Mapping{Start: 0x7f0000000000, End: 0x7f0000002000, Read: true, Shared: true, Offset: 0x1000, DevMinor: 0x1a, Inode: 7}, "/dev/shm/sem.mp-x (deleted)"},
		{"shared anonymous", "7f0000000000-7f0000001000 rw-s 00000000 00:01 1034                       /dev/zero (deleted)",
			Mapping{Start: 0x7f0000000000, End: 0x7f0000001000, Read: true, Write: true, Shared: true, DevMinor: 1, Inode: 1034}, "/dev/zero (deleted)"},
		{"newline escaped", `7f0000000000-7f0000001000 r--p 00000000 fe:00 9 /tmp/a\012b`,
			Mapping{Start: 0x7f0000000000, End: 0x7f0000001000, Read: true, DevMajor: 0xfe, Inode: 9}, `/tmp/a\012b`},
		{"trailing space kept", "7f0000000000-7f0000001000 r--p 00000000 fe:00 9 /tmp/a ",
			Mapping{Start: 0x7f0000000000, End: 0x7f0000001000, Read: true, DevMajor: 0xfe, Inode: 9}, "/tmp/a "},
		{"heap", "555fe7b1e000-555fe7b3f000 rw-p 00000000 00:00 0                          [heap]",
			Mapping{Start: 0x555fe7b1e000, End: 0x555fe7b3f000, Read: true, Write: true}, "[heap]"},
		{"stack", "7ffd5e0b4000-7ffd5e0d5000 rw-p 00000000 00:00 0                          [stack]",
			Mapping{Start: 0x7ffd5e0b4000, End: 0x7ffd5e0d5000, Read: true, Write: true}, "[stack]"},
		{"vdso", "7fa4d437d000-7fa4d437f000 r-xp 00000000 00:00 0                          [vdso]",
			Mapping{Start: 0x7fa4d437d000, End: 0x7fa4d437f000, Read: true, Exec: true}, "[vdso]"},
		{"anonymous name", "7fa4d437d000-7fa4d437f000 rw-p 00000000 00:00 0                          [anon:glibc malloc]",
			Mapping{Start: 0x7fa4d437d000, End: 0x7fa4d437f000, Read: true, Write: true}, "[anon:glibc malloc]"},
		{"unnamed anonymous", "7fa4d4105000-7fa4d4127000 rw-p 00000000 00:00 0 ",
			Mapping{Start: 0x7fa4d4105000, End: 0x7fa4d4127000, Read: true, Write: true}, ""},
		{"unnamed, no trailing space", "7fa4d4105000-7fa4d4127000 ---p 00000000 00:00 0",
			Mapping{Start: 0x7fa4d4105000, End: 0x7fa4d4127000}, ""},
		{"vsyscall", "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]",
			Mapping{Start: 0xffffffffff600000, End: 0xffffffffff601000, Exec: true}, "[vsyscall]"},
		{"large device", "00400000-00401000 r--p 00000000 103:02 5 /x",
			Mapping{Start: 0x400000, End: 0x401000, Read: true, DevMajor: 0x103, DevMinor: 2, Inode: 5}, "/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, path, err := parseLine([]byte(tt.line))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || string(path) != tt.path {
				t.Errorf("parseLine(%q)\n = %+v %q\nwant %+v %q", tt.line, got, path, tt.want, tt.path)
			}
		})
	}
}

func TestParseLineBad(t *testing.T) {
	for _, line := range []string{
		"",
		"garbage",
		"7f0000000000 rw-p 00000000 00:00 0", // no end
		"7f0000000000-7f0000001000 rw-p",     // no offset
		"7f0000000000-7f0000001000 rw 00000000 00:00 0",             // perms too short
		"7f0000000000-7f0000001000 rw-pp 00000000 00:00 0",          // perms too long
		"7f0000000000-7f000000100g rw-p 00000000 00:00 0",           // not hex
		"7F0000000000-7f0000001000 rw-p 00000000 00:00 0",           // the kernel prints lower case
		"7f0000000000-7f0000001000 rw-p 00000000 0000 0",            // no ':' in the device
		"7f0000000000-7f0000001000 rw-p 00000000 00:00 1a /x",       // inode not decimal
		"7f0000000000-7f0000001000 rw-p 00000000 00:00 -1",          // inode not a number
		"7f0000000000-7f0000001000 rw-p 00000000 100000000:00 0 /x", // major over 32 bits
		"7f0000000000-1ffffffffffffffff rw-p 00000000 00:00 0",      // over 64 bits
		"7f0000000000-7f0000001000 rw-p 00000000 00:00 99999999999999999999 /x",
	} {
		t.Run(strings.ReplaceAll(line, " ", "_"), func(t *testing.T) {
			if m, path, err := parseLine([]byte(line)); err == nil {
				t.Errorf("parseLine(%q) = %+v %q, want an error", line, m, path)
			}
		})
	}
}

func TestEscapeName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/tmp/a b", "/tmp/a b"},
		{"/tmp/a\nb", `/tmp/a\012b`},
		{"/tmp/\n\n (deleted)", `/tmp/\012\012 (deleted)`},
		{`/tmp/a\012b`, `/tmp/a\012b`}, // a backslash is not escaped (mangle_path escapes only "\n")
		{"[heap]", "[heap]"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			if got := escapeName([]byte(tt.in)); got != tt.want {
				t.Errorf("escapeName(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
