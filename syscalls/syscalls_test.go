package syscalls

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestTableKnownNumbers(t *testing.T) {
	cases := []struct {
		tbl  *Table
		name string
		nr   int
	}{
		{AMD64, "read", 0},
		{AMD64, "open", 2},
		{AMD64, "clone", 56},
		{AMD64, "fork", 57},
		{AMD64, "execve", 59},
		{AMD64, "openat", 257},
		{AMD64, "newfstatat", 262},
		{AMD64, "clone3", 435},
		{AMD64, "openat2", 437},
		{AMD64, "fchmodat2", 452},
		{ARM64, "io_setup", 0},
		{ARM64, "openat", 56},
		{ARM64, "newfstatat", 79},
		{ARM64, "clone", 220},
		{ARM64, "execve", 221},
		{ARM64, "clone3", 435},
		{ARM64, "openat2", 437},
	}
	for _, c := range cases {
		t.Run(c.tbl.ABI+"/"+c.name, func(t *testing.T) {
			nr, ok := c.tbl.Nr(c.name)
			if !ok || nr != c.nr {
				t.Fatalf("Nr(%q) = %d, %v; want %d, true", c.name, nr, ok, c.nr)
			}
			if got := c.tbl.Name(c.nr); got != c.name {
				t.Fatalf("Name(%d) = %q, want %q", c.nr, got, c.name)
			}
		})
	}
}

func TestTableShape(t *testing.T) {
	cases := []struct {
		tbl       *Table
		abi       string
		audit     uint32
		x32       uint32
		absent    []string // calls the ABI does not have
		unknownNr int      // a gap in the numbering
	}{
		{AMD64, "x86_64", 0xc000003e, 0x40000000, []string{"umount", "stat64", "fstatat64"}, 400},
		{ARM64, "aarch64", 0xc00000b7, 0, []string{"open", "creat", "fork", "vfork", "mkdir", "rename", "link", "symlink", "unlink", "rmdir", "chmod", "chown", "utime", "utimes", "futimesat", "stat"}, 250},
	}
	for _, c := range cases {
		t.Run(c.abi, func(t *testing.T) {
			tb := c.tbl
			if tb.ABI != c.abi || tb.AuditArch != c.audit || tb.X32Bit != c.x32 {
				t.Fatalf("ABI/AuditArch/X32Bit = %q/%#x/%#x, want %q/%#x/%#x", tb.ABI, tb.AuditArch, tb.X32Bit, c.abi, c.audit, c.x32)
			}
			if tb.Max < 435 {
				t.Fatalf("Max = %d: table older than clone3", tb.Max)
			}
			if tb.Name(tb.Max) == "syscall_"+strconv.Itoa(tb.Max) {
				t.Fatalf("Max %d has no name", tb.Max)
			}
			for _, nr := range []int{tb.Max + 1, -1, c.unknownNr} {
				if got, want := tb.Name(nr), "syscall_"+strconv.Itoa(nr); got != want {
					t.Errorf("Name(%d) = %q, want %q", nr, got, want)
				}
			}
			for _, n := range c.absent {
				if nr, ok := tb.Nr(n); ok {
					t.Errorf("Nr(%q) = %d, want absent", n, nr)
				}
			}
			seen := map[string]bool{}
			for _, n := range tb.Names() {
				if seen[n] {
					t.Errorf("name %q twice", n)
				}
				seen[n] = true
				if n != strings.ToLower(n) || strings.HasPrefix(n, "sys_") {
					t.Errorf("name %q is not a lower-case call name", n)
				}
				nr, ok := tb.Nr(n)
				if !ok || tb.Name(nr) != n {
					t.Errorf("round trip of %q: Nr = %d, %v; Name = %q", n, nr, ok, tb.Name(nr))
				}
			}
		})
	}
}

// xsysDir locates golang.org/x/sys as the go command resolves it for this
// module, the source mksysnum.go reads.
func xsysDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not available")
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/sys").Output()
	if err != nil {
		t.Skipf("go list golang.org/x/sys: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// constants parses "NAME = value" lines of an x/sys generated file.
func constants(t *testing.T, path string) map[string]uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	re := regexp.MustCompile(`^\s*([A-Z][A-Z0-9_]*)\s*=\s*(0x[0-9a-f]+|[0-9]+)\s*$`)
	m := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if s := re.FindStringSubmatch(sc.Text()); s != nil {
			v, err := strconv.ParseUint(s[2], 0, 64)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			m[s[1]] = v
		}
	}
	return m
}

// TestTablesMatchXSys fails when the generated tables are stale against the
// golang.org/x/sys version in go.mod: run go generate ./syscalls/.
func TestTablesMatchXSys(t *testing.T) {
	dir := xsysDir(t)
	for _, c := range []struct {
		tbl    *Table
		goarch string
	}{{AMD64, "amd64"}, {ARM64, "arm64"}} {
		t.Run(c.tbl.ABI, func(t *testing.T) {
			want := map[string]int{}
			for k, v := range constants(t, filepath.Join(dir, "unix", "zsysnum_linux_"+c.goarch+".go")) {
				if strings.HasPrefix(k, "SYS_") && k != "SYS_ARCH_SPECIFIC_SYSCALL" {
					want[strings.ToLower(strings.TrimPrefix(k, "SYS_"))] = int(v)
				}
			}
			got := c.tbl.Names()
			if len(got) != len(want) {
				t.Errorf("%d names, x/sys has %d", len(got), len(want))
			}
			for n, nr := range want {
				if g, ok := c.tbl.Nr(n); !ok || g != nr {
					t.Errorf("Nr(%q) = %d, %v; x/sys says %d", n, g, ok, nr)
				}
			}
		})
	}
}

// TestOpenFlagBitsMatchXSys checks the per-ABI open flags against x/sys's
// constants of each ABI, whatever the host.
func TestOpenFlagBitsMatchXSys(t *testing.T) {
	dir := xsysDir(t)
	for _, c := range []struct {
		tbl    *Table
		goarch string
	}{{AMD64, "amd64"}, {ARM64, "arm64"}} {
		t.Run(c.tbl.ABI, func(t *testing.T) {
			k := constants(t, filepath.Join(dir, "unix", "zerrors_linux_"+c.goarch+".go"))
			checks := []struct {
				name string
				got  uint64
			}{
				{"O_DIRECTORY", c.tbl.Open.Directory},
				{"O_NOFOLLOW", c.tbl.Open.NoFollow},
				{"O_DIRECT", c.tbl.Open.Direct},
				{"O_TMPFILE", OTmpBit | c.tbl.Open.Directory},
			}
			for _, ch := range checks {
				if k[ch.name] != ch.got {
					t.Errorf("%s = %#x, x/sys says %#x", ch.name, ch.got, k[ch.name])
				}
			}
		})
	}
}

func TestConstantsMatchXSys(t *testing.T) {
	dir := xsysDir(t)
	checks := []struct {
		name string
		got  uint64
	}{
		{"O_CREAT", OCreat}, {"O_EXCL", OExcl}, {"O_TRUNC", OTrunc}, {"O_APPEND", OAppend},
		{"O_CLOEXEC", OCloexec}, {"O_PATH", OPath}, {"O_NOATIME", ONoAtime},
		{"AT_SYMLINK_NOFOLLOW", AtSymlinkNofollow}, {"AT_REMOVEDIR", AtRemoveDir},
		{"AT_SYMLINK_FOLLOW", AtSymlinkFollow}, {"AT_EMPTY_PATH", AtEmptyPath},
		{"RENAME_NOREPLACE", RenameNoReplace}, {"RENAME_EXCHANGE", RenameExchange}, {"RENAME_WHITEOUT", RenameWhiteout},
		{"CLONE_UNTRACED", CloneUntraced}, {"CLONE_NEWNS", CloneNewNS}, {"CLONE_NEWCGROUP", CloneNewCgroup},
		{"CLONE_NEWUTS", CloneNewUTS}, {"CLONE_NEWIPC", CloneNewIPC}, {"CLONE_NEWUSER", CloneNewUser},
		{"CLONE_NEWPID", CloneNewPID}, {"CLONE_NEWNET", CloneNewNet}, {"CLONE_THREAD", CloneThread},
		{"CLONE_VFORK", CloneVfork}, {"CLONE_VM", CloneVM}, {"CLONE_PIDFD", ClonePidfd},
		{"F_SETOWN", FcntlSetOwn}, {"F_SETOWN_EX", FcntlSetOwnEx},
		{"F_SETLEASE", FcntlSetLease}, {"F_UNLCK", FcntlUnlck}, {"F_SETFL", FcntlSetFl},
		{"SECCOMP_FILTER_FLAG_NEW_LISTENER", SeccompFilterFlagNewListener},
		{"PR_SET_MM", PrSetMM},
		{"MAP_FIXED", MapFixed}, {"MREMAP_FIXED", MremapFixed},
	}
	// These values must be the same on both ABIs: check each ABI's files.
	for _, goarch := range []string{"amd64", "arm64"} {
		k := map[string]uint64{}
		for _, f := range []string{"zerrors_linux.go", "ztypes_linux.go", "zerrors_linux_" + goarch + ".go"} {
			for n, v := range constants(t, filepath.Join(dir, "unix", f)) {
				k[n] = v
			}
		}
		for _, c := range checks {
			t.Run(goarch+"/"+c.name, func(t *testing.T) {
				want, ok := k[c.name]
				if !ok {
					t.Fatalf("%s not in x/sys", c.name)
				}
				if want != c.got {
					t.Fatalf("%s = %#x, x/sys says %#x", c.name, c.got, want)
				}
			})
		}
	}
	if OpenWriteMask != 0x400643 {
		t.Fatalf("OpenWriteMask = %#x, want 0x400643", OpenWriteMask)
	}
	if CloneForbiddenMask != 0x7e820000 {
		t.Fatalf("CloneForbiddenMask = %#x, want 0x7e820000", CloneForbiddenMask)
	}
}

// ioc is the asm-generic _IOC encoding (include/uapi/asm-generic/ioctl.h).
func ioc(dir, typ, nr, size uint32) uint32 { return dir<<30 | size<<16 | typ<<8 | nr }

func TestIoctlEncodings(t *testing.T) {
	const n, w, r, rw = 0, 1, 2, 3 // _IOC_NONE, _IOC_WRITE, _IOC_READ, both
	type enc struct {
		cmd  uint32
		lit  uint32 // the number as red-team notes and strace print it
		kind Kind
	}
	want := map[string]enc{
		"FS_IOC_SETFLAGS":              {ioc(w, 'f', 2, 8), 0x40086602, KindChmod},
		"FS_IOC32_SETFLAGS":            {ioc(w, 'f', 2, 4), 0x40046602, KindChmod},
		"FS_IOC_FSSETXATTR":            {ioc(w, 'X', 32, 28), 0x401c5820, KindChmod}, // struct fsxattr
		"FS_IOC_SETVERSION":            {ioc(w, 'v', 2, 8), 0x40087602, KindChmod},
		"FS_IOC32_SETVERSION":          {ioc(w, 'v', 2, 4), 0x40047602, KindChmod},
		"EXT4_IOC_SETVERSION":          {ioc(w, 'f', 4, 8), 0x40086604, KindChmod},
		"EXT4_IOC32_SETVERSION":        {ioc(w, 'f', 4, 4), 0x40046604, KindChmod},
		"EXT4_IOC_MIGRATE":             {ioc(n, 'f', 9, 0), 0x6609, KindChmod},
		"FS_IOC_ENABLE_VERITY":         {ioc(w, 'f', 133, 128), 0x40806685, KindChmod}, // struct fsverity_enable_arg
		"FS_IOC_SET_ENCRYPTION_POLICY": {ioc(r, 'f', 19, 12), 0x800c6613, KindChmod},   // struct fscrypt_policy_v1
		"FIFREEZE":                     {ioc(rw, 'X', 119, 4), 0xc0045877, KindForbidden},
		"FITHAW":                       {ioc(rw, 'X', 120, 4), 0xc0045878, KindForbidden},
		"FS_IOC_SETFSLABEL":            {ioc(w, 0x94, 50, 256), 0x41009432, KindForbidden},
		"EXT4_IOC_SHUTDOWN":            {ioc(r, 'X', 125, 4), 0x8004587d, KindForbidden}, // = XFS_IOC_GOINGDOWN, F2FS_IOC_SHUTDOWN
		"EXT4_IOC_GROUP_EXTEND":        {ioc(w, 'f', 7, 8), 0x40086607, KindForbidden},
		"EXT4_IOC_GROUP_ADD":           {ioc(w, 'f', 8, 40), 0x40286608, KindForbidden}, // struct ext4_new_group_input: u32, 3 u64, u32, 2 u16
		"EXT4_IOC_RESIZE_FS":           {ioc(w, 'f', 16, 8), 0x40086610, KindForbidden},
		"EXT4_IOC_SETFSUUID":           {ioc(w, 'f', 44, 8), 0x4008662c, KindForbidden},   // struct fsuuid: 2 u32 and a flexible array
		"EXT4_IOC_SET_TUNE_SB_PARAM":   {ioc(w, 'f', 46, 232), 0x40e8662e, KindForbidden}, // struct ext4_tune_sb_params (228 or 232 bytes, padded to 232)
		"EXT4_IOC_SWAP_BOOT":           {ioc(n, 'f', 17, 0), 0x6611, KindForbidden},
		"USERFAULTFD_IOC_NEW":          {ioc(n, 0xAA, 0, 0), 0xaa00, KindForbidden},
		"TIOCSTI":                      {0x5412, 0x5412, KindForbidden},
		"TIOCLINUX":                    {0x541c, 0x541c, KindForbidden},
		"TIOCGPTN":                     {ioc(r, 'T', 0x30, 4), 0x80045430, KindNone}, // unsigned int
		"TCSETS":                       {0x5402, 0x5402, KindWrite},
		"TCSETSW":                      {0x5403, 0x5403, KindWrite},
		"TCSETSF":                      {0x5404, 0x5404, KindWrite},
		"TCSETA":                       {0x5406, 0x5406, KindWrite},
		"TCSETAW":                      {0x5407, 0x5407, KindWrite},
		"TCSETAF":                      {0x5408, 0x5408, KindWrite},
		"TCSBRK":                       {0x5409, 0x5409, KindWrite},
		"TCXONC":                       {0x540a, 0x540a, KindWrite},
		"TCFLSH":                       {0x540b, 0x540b, KindWrite},
		"TIOCEXCL":                     {0x540c, 0x540c, KindWrite},
		"TIOCNXCL":                     {0x540d, 0x540d, KindWrite},
		"TIOCSCTTY":                    {0x540e, 0x540e, KindWrite},
		"TIOCSPGRP":                    {0x5410, 0x5410, KindWrite},
		"TIOCSWINSZ":                   {0x5414, 0x5414, KindWrite},
		"TIOCMBIS":                     {0x5416, 0x5416, KindWrite},
		"TIOCMBIC":                     {0x5417, 0x5417, KindWrite},
		"TIOCMSET":                     {0x5418, 0x5418, KindWrite},
		"TIOCSSOFTCAR":                 {0x541a, 0x541a, KindWrite},
		"TIOCCONS":                     {0x541d, 0x541d, KindWrite},
		"TIOCSSERIAL":                  {0x541f, 0x541f, KindWrite},
		"TIOCSETD":                     {0x5423, 0x5423, KindWrite},
		"TCSBRKP":                      {0x5425, 0x5425, KindWrite},
		"TIOCSBRK":                     {0x5427, 0x5427, KindWrite},
		"TIOCCBRK":                     {0x5428, 0x5428, KindWrite},
		"TIOCSRS485":                   {0x542f, 0x542f, KindWrite},
		"TCSETX":                       {0x5433, 0x5433, KindWrite},
		"TCSETXF":                      {0x5434, 0x5434, KindWrite},
		"TCSETXW":                      {0x5435, 0x5435, KindWrite},
		"TIOCVHANGUP":                  {0x5437, 0x5437, KindWrite},
		"TIOCSLCKTRMIOS":               {0x5457, 0x5457, KindWrite},
		"TCSETS2":                      {ioc(w, 'T', 0x2b, 44), 0x402c542b, KindWrite}, // struct termios2
		"TCSETSW2":                     {ioc(w, 'T', 0x2c, 44), 0x402c542c, KindWrite},
		"TCSETSF2":                     {ioc(w, 'T', 0x2d, 44), 0x402c542d, KindWrite},
		"FIOSETOWN":                    {0x8901, 0x8901, KindSignal},
		"FIOASYNC":                     {0x5452, 0x5452, KindSignal},
		"SIOCSPGRP":                    {0x8902, 0x8902, KindSignal},
	}
	// Issue 16: the rest of the whole-file-system class, the btrfs
	// subvolume commands, the host entropy pool, console switching and
	// TIOCSIG.
	added := map[string]enc{
		"FITRIM":                                 {ioc(rw, 'X', 121, 24), 0xc0185879, KindForbidden}, // struct fstrim_range
		"EXT4_IOC_CHECKPOINT":                    {ioc(w, 'f', 43, 4), 0x4004662b, KindForbidden},
		"FS_IOC_GET_ENCRYPTION_PWSALT":           {ioc(w, 'f', 20, 16), 0x40106614, KindForbidden},
		"FS_IOC_ADD_ENCRYPTION_KEY":              {ioc(rw, 'f', 23, 80), 0xc0506617, KindForbidden}, // struct fscrypt_add_key_arg
		"FS_IOC_REMOVE_ENCRYPTION_KEY":           {ioc(rw, 'f', 24, 64), 0xc0406618, KindForbidden}, // struct fscrypt_remove_key_arg
		"FS_IOC_REMOVE_ENCRYPTION_KEY_ALL_USERS": {ioc(rw, 'f', 25, 64), 0xc0406619, KindForbidden},
		"OCFS2_IOC_REFLINK":                      {ioc(w, 'o', 4, 24), 0x40186f04, KindForbidden}, // struct reflink_arguments: 3 u64
		"BTRFS_IOC_SNAP_CREATE":                  {ioc(w, 0x94, 1, 4096), 0x50009401, KindCreate},
		"BTRFS_IOC_SUBVOL_CREATE":                {ioc(w, 0x94, 14, 4096), 0x5000940e, KindCreate},
		"BTRFS_IOC_SNAP_CREATE_V2":               {ioc(w, 0x94, 23, 4096), 0x50009417, KindCreate},
		"BTRFS_IOC_SUBVOL_CREATE_V2":             {ioc(w, 0x94, 24, 4096), 0x50009418, KindCreate},
		"BTRFS_IOC_SUBVOL_SETFLAGS":              {ioc(w, 0x94, 26, 8), 0x4008941a, KindChmod},
		"RNDADDTOENTCNT":                         {ioc(w, 'R', 1, 4), 0x40045201, KindForbidden},
		"RNDADDENTROPY":                          {ioc(w, 'R', 3, 8), 0x40085203, KindForbidden},
		"RNDZAPENTCNT":                           {ioc(n, 'R', 4, 0), 0x5204, KindForbidden},
		"RNDCLEARPOOL":                           {ioc(n, 'R', 6, 0), 0x5206, KindForbidden},
		"RNDRESEEDCRNG":                          {ioc(n, 'R', 7, 0), 0x5207, KindForbidden},
		"VT_SETMODE":                             {0x5602, 0x5602, KindForbidden},
		"VT_RELDISP":                             {0x5605, 0x5605, KindForbidden},
		"VT_ACTIVATE":                            {0x5606, 0x5606, KindForbidden},
		"VT_WAITACTIVE":                          {0x5607, 0x5607, KindForbidden},
		"VT_DISALLOCATE":                         {0x5608, 0x5608, KindForbidden},
		"VT_RESIZE":                              {0x5609, 0x5609, KindForbidden},
		"VT_RESIZEX":                             {0x560a, 0x560a, KindForbidden},
		"VT_LOCKSWITCH":                          {0x560b, 0x560b, KindForbidden},
		"VT_UNLOCKSWITCH":                        {0x560c, 0x560c, KindForbidden},
		"VT_SETACTIVATE":                         {0x560f, 0x560f, KindForbidden},
		"TIOCSIG":                                {ioc(w, 'T', 0x36, 4), 0x40045436, KindWrite},
	}
	for k, v := range added {
		want[k] = v
	}
	if len(Ioctls) != len(want) {
		t.Fatalf("%d trapped ioctls, test knows %d", len(Ioctls), len(want))
	}
	seen := map[uint32]string{}
	for _, s := range Ioctls {
		t.Run(s.Name, func(t *testing.T) {
			e, ok := want[s.Name]
			if !ok || e.cmd != s.Cmd || e.lit != s.Cmd {
				t.Fatalf("%s = %#x, want %#x (literal %#x)", s.Name, s.Cmd, e.cmd, e.lit)
			}
			if s.Kind != e.kind {
				t.Fatalf("%s kind %v, want %v", s.Name, s.Kind, e.kind)
			}
			if prev, dup := seen[s.Cmd]; dup {
				t.Fatalf("%s and %s share %#x", prev, s.Name, s.Cmd)
			}
			seen[s.Cmd] = s.Name
			got, ok := LookupIoctl(s.Cmd)
			if !ok || got.Name != s.Name {
				t.Fatalf("LookupIoctl(%#x) = %v, %v", s.Cmd, got, ok)
			}
		})
	}
	if _, ok := LookupIoctl(0x5401); ok { // TCGETS
		t.Fatal("TCGETS must not be trapped")
	}
}

// TestIoctlAllowed: the allow-list holds each number once, shares none with
// the commands decided by the tracer (which the filter must trap), and
// spells the numbers the headers give.
func TestIoctlAllowed(t *testing.T) {
	const w, r, rw = 1, 2, 3
	enc := map[string]uint32{
		"TCGETS2":                          ioc(r, 'T', 0x2a, 44),
		"TIOCGPTLCK":                       ioc(r, 'T', 0x39, 4),
		"TIOCSPTLCK":                       ioc(w, 'T', 0x31, 4),
		"TIOCGDEV":                         ioc(r, 'T', 0x32, 4),
		"SIOCGSTAMP_NEW":                   ioc(r, 0x89, 6, 16),
		"FS_IOC_GETFLAGS":                  ioc(r, 'f', 1, 8),
		"FS_IOC_FSGETXATTR":                ioc(r, 'X', 31, 28),
		"FS_IOC_FIEMAP":                    ioc(rw, 'f', 11, 32),
		"FS_IOC_GETFSMAP":                  ioc(rw, 'X', 59, 192),
		"FS_IOC_GETFSLABEL":                ioc(r, 0x94, 49, 256),
		"FS_IOC_GET_ENCRYPTION_POLICY":     ioc(w, 'f', 21, 12),
		"FS_IOC_GET_ENCRYPTION_POLICY_EX":  ioc(rw, 'f', 22, 9),
		"FS_IOC_GET_ENCRYPTION_KEY_STATUS": ioc(rw, 'f', 26, 128),
		"BTRFS_IOC_SUBVOL_GETFLAGS":        ioc(r, 0x94, 25, 8),
		"FICLONE":                          ioc(w, 0x94, 9, 4),
		"FICLONERANGE":                     ioc(w, 0x94, 13, 32),
		"BLKGETSIZE64":                     ioc(r, 0x12, 114, 8),
	}
	seen := map[uint32]string{}
	for _, a := range IoctlAllowed {
		if prev, dup := seen[a.Cmd]; dup {
			t.Errorf("%s and %s share %#x", prev, a.Name, a.Cmd)
		}
		seen[a.Cmd] = a.Name
		if s, ok := LookupIoctl(a.Cmd); ok {
			t.Errorf("%s (%#x) is allowed and decided as %s", a.Name, a.Cmd, s.Name)
		}
		if !IoctlPasses(a.Cmd) {
			t.Errorf("IoctlPasses(%s) = false", a.Name)
		}
		if got := FormatIoctl(a.Cmd); got != a.Name {
			t.Errorf("FormatIoctl(%#x) = %q, want %q", a.Cmd, got, a.Name)
		}
		if e, ok := enc[a.Name]; ok && e != a.Cmd {
			t.Errorf("%s = %#x, the header's encoding is %#x", a.Name, a.Cmd, e)
		}
	}
	for name := range enc {
		if !slices.ContainsFunc(IoctlAllowed, func(a IoctlName) bool { return a.Name == name }) {
			t.Errorf("%s is not allowed", name)
		}
	}
	cmds := IoctlAllowedCmds()
	if !slices.IsSorted(cmds) || len(cmds) != len(IoctlAllowed) {
		t.Errorf("IoctlAllowedCmds not sorted or short: %d of %d", len(cmds), len(IoctlAllowed))
	}
	for _, c := range []struct {
		cmd  uint32
		want string
	}{
		{0x5412, "TIOCSTI"}, {0x4c01, "LOOP_CLR_FD"}, {0x12345678, "0x12345678"}, {0x5000940e, "BTRFS_IOC_SUBVOL_CREATE"},
	} {
		if got := FormatIoctl(c.cmd); got != c.want {
			t.Errorf("FormatIoctl(%#x) = %q, want %q", c.cmd, got, c.want)
		}
	}
	for _, c := range []struct {
		cmd uint32
		fam bool
	}{
		{0x5000943f, true},  // BTRFS_IOC_SNAP_DESTROY_V2
		{0xc0189436, false}, // FIDEDUPERANGE: decided on its fd
		{0xc018586a, true},  // XFS_IOC_OPEN_BY_HANDLE: _IOWR('X', 107, struct xfs_fsop_handlereq)
		{0xf509, true},      // f2fs
		{0x4b3a, true},      // KDSETMODE
		{0x5422, false},     // TIOCNOTTY
		{0x4c01, false},     // LOOP_CLR_FD: decided on its fd
	} {
		if _, got := IoctlFamily(c.cmd); got != c.fam {
			t.Errorf("IoctlFamily(%#x) = %v, want %v", c.cmd, got, c.fam)
		}
	}
}

func TestSpecs(t *testing.T) {
	all := All()
	if len(all) == 0 {
		t.Fatal("no specs")
	}
	for i, s := range all {
		if i > 0 && all[i-1].Name >= s.Name {
			t.Fatalf("All not sorted: %q before %q", all[i-1].Name, s.Name)
		}
		t.Run(s.Name, func(t *testing.T) {
			_, a := AMD64.Nr(s.Name)
			_, b := ARM64.Nr(s.Name)
			if !a && !b {
				t.Fatalf("%s exists on no ABI", s.Name)
			}
			if got, ok := Lookup(s.Name); !ok || got != s {
				t.Fatalf("Lookup(%q) = %v, %v", s.Name, got, ok)
			}
			idx := map[string]int{"FlagsArg": s.FlagsArg, "FdArg": s.FdArg, "PidArg": s.PidArg, "SigArg": s.SigArg,
				"ModeArg": s.ModeArg, "AddrArg": s.AddrArg, "AddrLenArg": s.AddrLenArg, "LinkTargetArg": s.LinkTargetArg}
			for _, pa := range s.Paths {
				idx["path"] = pa.Arg
				if pa.Dirfd >= 0 {
					idx["dirfd"] = pa.Dirfd
					if pa.Dirfd == pa.Arg {
						t.Errorf("path and dirfd are both argument %d", pa.Arg)
					}
				}
				if pa.Arg < 0 {
					t.Errorf("path argument %d", pa.Arg)
				}
				switch pa.Role {
				case "path", "source", "target", "program":
				default:
					t.Errorf("role %q", pa.Role)
				}
				if pa.Follow > FollowOpen {
					t.Errorf("follow %v", pa.Follow)
				}
			}
			for n, v := range idx {
				if v < -1 || v > 5 {
					t.Errorf("%s = %d, want -1..5", n, v)
				}
			}
			if s.Handler >= handlerCount {
				t.Errorf("handler %v", s.Handler)
			}
			switch s.Kind {
			case KindSignal, KindProcess, KindForbidden, KindMemory, KindFutex:
				if s.Errno != syscall.EPERM {
					t.Errorf("errno %v, want EPERM", s.Errno)
				}
			default:
				if s.Errno != syscall.EACCES {
					t.Errorf("errno %v, want EACCES", s.Errno)
				}
			}
			switch s.Handler {
			case HPath, HOpen, HExec:
				if len(s.Paths) == 0 {
					t.Errorf("%v handler without paths", s.Handler)
				}
			case HFdMeta, HIoctl, HSocket, HFcntl:
				if s.FdArg < 0 && s.Name != "socket" { // socket makes the fd
					t.Errorf("%v handler without FdArg", s.Handler)
				}
			case HSignal, HProcess, HProcMem:
				if s.PidArg < 0 && s.FdArg < 0 {
					t.Errorf("%v handler without PidArg or FdArg", s.Handler)
				}
			case HMem:
				checkMemSpec(t, s)
			}
			if (s.Handler == HMem) != (s.Kind == KindMemory) {
				t.Errorf("handler %v with kind %v: HMem and KindMemory go together", s.Handler, s.Kind)
			}
			if s.Handler != HMem && len(s.Mem) != 0 {
				t.Errorf("%v handler with address ranges %+v", s.Handler, s.Mem)
			}
			if s.Kind == KindRename || s.Kind == KindLink {
				if len(s.Paths) != 2 || s.Paths[0].Role != "source" || s.Paths[1].Role != "target" {
					t.Errorf("rename/link paths %+v, want source and target", s.Paths)
				}
			}
			if s.Kind.ModifiesFS() && s.Handler == HPath {
				for _, pa := range s.Paths {
					if pa.Follow == FollowOpen {
						t.Errorf("FollowOpen on a non-open call")
					}
				}
			}
		})
	}
}

// checkMemSpec checks an HMem spec: address ranges in registers, nothing
// else for the tracer to decode, and the flags argument of a range that
// depends on flags the one the spec names.
func checkMemSpec(t *testing.T, s *Spec) {
	t.Helper()
	if len(s.Mem) == 0 && s.Name != "process_madvise" {
		t.Error("memory call without an address range (only process_madvise, whose ranges are in memory, has none)")
	}
	if len(s.Paths) != 0 || s.FdArg >= 0 || s.PidArg >= 0 || s.SigArg >= 0 || s.ModeArg >= 0 ||
		s.AddrArg >= 0 || s.AddrLenArg >= 0 || s.LinkTargetArg >= 0 {
		t.Errorf("memory call with other arguments: %+v", s)
	}
	for i, r := range s.Mem {
		if r.Addr < 0 || r.Addr > 5 || r.Len < 0 || r.Len > 5 || r.Addr == r.Len {
			t.Errorf("range %d: Addr %d, Len %d, want two arguments in 0..5", i, r.Addr, r.Len)
		}
		switch {
		case r.FlagsArg == -1:
			if r.FlagsMask != 0 {
				t.Errorf("range %d: mask %#x without a flags argument", i, r.FlagsMask)
			}
		case r.FlagsArg < 0 || r.FlagsArg > 5:
			t.Errorf("range %d: FlagsArg %d, want -1..5", i, r.FlagsArg)
		default:
			if r.FlagsMask == 0 {
				t.Errorf("range %d: flags argument %d without a mask: never used", i, r.FlagsArg)
			}
			if r.FlagsArg != s.FlagsArg {
				t.Errorf("range %d: FlagsArg %d, the spec's is %d", i, r.FlagsArg, s.FlagsArg)
			}
			if r.FlagsArg == r.Addr || r.FlagsArg == r.Len {
				t.Errorf("range %d: flags in the address or length argument", i)
			}
		}
	}
	// The filter and the tracer take the range from registers: every
	// memory call must exist on both ABIs with these indexes.
	for _, tb := range []*Table{AMD64, ARM64} {
		if _, ok := tb.Nr(s.Name); !ok {
			t.Errorf("%s absent on %s", s.Name, tb.ABI)
		}
	}
}

func TestMemSpecs(t *testing.T) {
	// mmap(addr, len, prot, flags, fd, off); mremap(old_address,
	// old_size, new_size, flags, new_address); the others (addr, len, ...).
	want := map[string][]MemRange{
		"mmap":             {{Addr: 0, Len: 1, FlagsArg: 3, FlagsMask: MapFixed}},
		"munmap":           {{Addr: 0, Len: 1, FlagsArg: -1}},
		"mprotect":         {{Addr: 0, Len: 1, FlagsArg: -1}},
		"pkey_mprotect":    {{Addr: 0, Len: 1, FlagsArg: -1}},
		"madvise":          {{Addr: 0, Len: 1, FlagsArg: -1}},
		"remap_file_pages": {{Addr: 0, Len: 1, FlagsArg: -1}},
		"mseal":            {{Addr: 0, Len: 1, FlagsArg: -1}},
		"mremap":           {{Addr: 0, Len: 1, FlagsArg: -1}, {Addr: 4, Len: 2, FlagsArg: 3, FlagsMask: MremapFixed}},
		"process_madvise":  nil, // an iovec in memory: always trapped with the page
	}
	n := 0
	for _, s := range All() {
		if s.Handler != HMem {
			continue
		}
		n++
		t.Run(s.Name, func(t *testing.T) {
			w, ok := want[s.Name]
			if !ok {
				t.Fatalf("memory call the test does not know")
			}
			if !reflect.DeepEqual(s.Mem, w) {
				t.Errorf("ranges %+v, want %+v", s.Mem, w)
			}
			if s.Kind != KindMemory || s.Errno != syscall.EPERM {
				t.Errorf("kind %v, errno %v; want memory, EPERM", s.Kind, s.Errno)
			}
			flags := -1
			if s.Name == "mmap" || s.Name == "mremap" {
				flags = 3
			}
			if s.FlagsArg != flags {
				t.Errorf("FlagsArg %d, want %d", s.FlagsArg, flags)
			}
		})
	}
	if n != len(want) {
		t.Errorf("%d memory calls, want %d", n, len(want))
	}
	// The filter's register test depends on these (filter:
	// appendMemCheck, which also fails to compile without them).
	if PathPageAddr != 2<<32 || PathPageSize == 0 || PathPageSize >= 1<<32 || PathPageSize != PathSlots*PathSlotSize {
		t.Errorf("path page %#x+%#x: the filter wants it at 8 GiB, below 4 GiB long", PathPageAddr, PathPageSize)
	}
	if PathSlotSize < 4096 {
		t.Errorf("slot of %d bytes: PATH_MAX is 4096", PathSlotSize)
	}
}

func TestKindAndHandlerNames(t *testing.T) {
	seen := map[string]bool{}
	for k := Kind(0); k < kindCount; k++ {
		name := k.String()
		if name == "" || strings.HasPrefix(name, "kind(") || seen[name] {
			t.Errorf("kind %d: name %q missing or repeated", k, name)
		}
		seen[name] = true
		b, err := k.MarshalText()
		if err != nil || string(b) != name {
			t.Errorf("kind %d: MarshalText = %q, %v", k, b, err)
		}
		var back Kind
		if err := back.UnmarshalText(b); err != nil || back != k {
			t.Errorf("kind %q: UnmarshalText = %v, %v", b, back, err)
		}
	}
	if got := kindCount.String(); got != "kind("+strconv.Itoa(int(kindCount))+")" {
		t.Errorf("kindCount.String() = %q", got)
	}
	var k Kind
	if err := k.UnmarshalText([]byte("kind(3)")); err == nil {
		t.Error("UnmarshalText accepted a numbered kind")
	}
	if KindMemory.String() != "memory" || KindMemory.ModifiesFS() {
		t.Errorf("KindMemory: %q, ModifiesFS %v", KindMemory, KindMemory.ModifiesFS())
	}
	seen = map[string]bool{}
	for h := Handler(0); h < handlerCount; h++ {
		name := h.String()
		if name == "" || strings.HasPrefix(name, "handler(") || seen[name] {
			t.Errorf("handler %d: name %q missing or repeated", h, name)
		}
		seen[name] = true
	}
	if HMem.String() != "memory" {
		t.Errorf("HMem.String() = %q", HMem)
	}
	if got := handlerCount.String(); got != "handler("+strconv.Itoa(int(handlerCount))+")" {
		t.Errorf("handlerCount.String() = %q", got)
	}
}

func TestSpecDetails(t *testing.T) {
	cases := []struct {
		name    string
		kind    Kind
		handler Handler
		paths   []PathArg
		flags   int
	}{
		{"openat", KindWrite, HOpen, []PathArg{{1, 0, FollowOpen, "path", false}}, 2},
		{"open", KindWrite, HOpen, []PathArg{{0, -1, FollowOpen, "path", false}}, 1},
		{"creat", KindWrite, HOpen, []PathArg{{0, -1, FollowOpen, "path", false}}, -1},
		{"unlinkat", KindDelete, HPath, []PathArg{{1, 0, FollowNever, "path", false}}, 2},
		{"renameat2", KindRename, HPath, []PathArg{{1, 0, FollowNever, "source", false}, {3, 2, FollowNever, "target", false}}, 4},
		{"linkat", KindLink, HPath, []PathArg{{1, 0, FollowIfAtFollow, "source", true}, {3, 2, FollowNever, "target", false}}, 4},
		{"symlinkat", KindCreate, HPath, []PathArg{{2, 1, FollowNever, "path", false}}, -1},
		{"fchownat", KindChown, HPath, []PathArg{{1, 0, FollowUnlessAtNoFollow, "path", true}}, 4},
		{"lchown", KindChown, HPath, []PathArg{{0, -1, FollowNever, "path", false}}, -1},
		{"utimensat", KindWrite, HPath, []PathArg{{1, 0, FollowUnlessAtNoFollow, "path", true}}, 3},
		{"lsetxattr", KindXattr, HPath, []PathArg{{0, -1, FollowNever, "path", false}}, -1},
		{"execveat", KindExec, HExec, []PathArg{{1, 0, FollowUnlessAtNoFollow, "program", true}}, 4},
		{"truncate", KindWrite, HPath, []PathArg{{0, -1, FollowAlways, "path", false}}, -1},
		{"fchmod", KindChmod, HFdMeta, nil, -1},
		{"clone", KindProcess, HClone, nil, 0},
		{"ptrace", KindForbidden, HForbidden, nil, -1},
		{"io_uring_setup", KindForbidden, HForbidden, nil, -1},
		{"userfaultfd", KindForbidden, HForbidden, nil, -1},
		{"mmap", KindMemory, HMem, nil, 3},
		{"mremap", KindMemory, HMem, nil, 3},
		{"munmap", KindMemory, HMem, nil, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, ok := Lookup(c.name)
			if !ok {
				t.Fatalf("no spec for %s", c.name)
			}
			if s.Kind != c.kind || s.Handler != c.handler || s.FlagsArg != c.flags {
				t.Errorf("kind/handler/flags = %v/%v/%d, want %v/%v/%d", s.Kind, s.Handler, s.FlagsArg, c.kind, c.handler, c.flags)
			}
			if len(s.Paths) != len(c.paths) {
				t.Fatalf("paths %+v, want %+v", s.Paths, c.paths)
			}
			for i := range c.paths {
				if s.Paths[i] != c.paths[i] {
					t.Errorf("path %d = %+v, want %+v", i, s.Paths[i], c.paths[i])
				}
			}
		})
	}
	if s, _ := Lookup("symlink"); s.LinkTargetArg != 0 || s.Paths[0].Arg != 1 {
		t.Errorf("symlink: link target arg %d, path arg %d; want 0 and 1", s.LinkTargetArg, s.Paths[0].Arg)
	}
	if s, _ := Lookup("mknodat"); s.ModeArg != 2 {
		t.Errorf("mknodat mode arg %d, want 2", s.ModeArg)
	}
	if _, ok := Lookup("clone3"); ok {
		t.Error("clone3 has a spec: the filter fails it with ENOSYS, the tracer never sees it")
	}
	if _, ok := Lookup("newfstatat"); ok {
		t.Error("stat calls must never be trapped")
	}
}

func TestFormatOpenFlags(t *testing.T) {
	cases := []struct {
		tbl   *Table
		flags uint64
		want  string
	}{
		{AMD64, 0, "O_RDONLY"},
		{AMD64, 0o1 | 0o100 | 0o1000, "O_WRONLY|O_CREAT|O_TRUNC"},
		{AMD64, 0o2 | 0o2000 | 0o2000000, "O_RDWR|O_APPEND|O_CLOEXEC"},
		{AMD64, 0o1000, "O_RDONLY|O_TRUNC"},
		{AMD64, 3, "O_ACCMODE"},
		{AMD64, 0x410000 | 2, "O_RDWR|O_TMPFILE"},
		{ARM64, 0x404000 | 2, "O_RDWR|O_TMPFILE"},
		{AMD64, 0x10000 | 0x20000 | 0x80000, "O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC"},
		{ARM64, 0x4000 | 0x8000 | 0x80000, "O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC"},
		{AMD64, 0x4000, "O_RDONLY|O_DIRECT"},
		{ARM64, 0x4000, "O_RDONLY|O_DIRECTORY"},
		{AMD64, 0x101000 | 1, "O_WRONLY|O_SYNC"},
		{AMD64, 0x1000 | 1, "O_WRONLY|O_DSYNC"},
		{AMD64, 0x200000, "O_RDONLY|O_PATH"},
		{AMD64, 0o100 | 0o200, "O_RDONLY|O_CREAT|O_EXCL"},
		{AMD64, 0x80000000 | 1, "O_WRONLY|0x80000000"},
		{AMD64, 1<<40 | 1, "O_WRONLY"}, // high half ignored, like the kernel
	}
	for _, c := range cases {
		t.Run(c.tbl.ABI+"/"+c.want, func(t *testing.T) {
			if got := c.tbl.FormatOpenFlags(c.flags); got != c.want {
				t.Fatalf("FormatOpenFlags(%#x) = %q, want %q", c.flags, got, c.want)
			}
		})
	}
	if Native() != nil {
		if got, want := FormatOpenFlags(0o1101), Native().FormatOpenFlags(0o1101); got != want {
			t.Fatalf("FormatOpenFlags uses %q, native table %q", got, want)
		}
	}
}

func TestOpenWritesAndFollows(t *testing.T) {
	cases := []struct {
		name   string
		tbl    *Table
		flags  uint64
		writes bool
		follow bool
	}{
		{"rdonly", AMD64, 0, false, true},
		{"rdonly_cloexec_directory", AMD64, 0x80000 | 0x10000, false, true},
		{"wronly", AMD64, 1, true, true},
		{"rdwr", AMD64, 2, true, true},
		{"creat", AMD64, 0o100, true, true},
		{"rdonly_trunc", AMD64, 0o1000, true, true},
		{"append", AMD64, 0o2000, true, true},
		{"tmpfile", AMD64, 0x410000 | 2, true, true},
		{"creat_excl", AMD64, 0o300 | 1, true, false},
		{"excl_without_creat", AMD64, 0o200, false, true},
		{"nofollow_x86", AMD64, 0x20000, false, false},
		{"arm_nofollow_bit_on_x86_is_largefile", AMD64, 0x8000, false, true},
		{"nofollow_arm64", ARM64, 0x8000, false, false},
		{"x86_nofollow_bit_on_arm64_is_largefile", ARM64, 0x20000, false, true},
		{"high_half_ignored", AMD64, 0xffffffff00000000, false, true},
	}
	for _, c := range cases {
		t.Run(c.tbl.ABI+"/"+c.name, func(t *testing.T) {
			if got := OpenWrites(c.flags); got != c.writes {
				t.Errorf("OpenWrites(%#x) = %v, want %v", c.flags, got, c.writes)
			}
			if got := c.tbl.OpenFollows(c.flags); got != c.follow {
				t.Errorf("OpenFollows(%#x) = %v, want %v", c.flags, got, c.follow)
			}
		})
	}
}

func TestFormatOtherFlags(t *testing.T) {
	cases := []struct {
		name string
		f    func(uint64) string
		in   uint64
		want string
	}{
		{"at/zero", FormatAtFlags, 0, "0"},
		{"at/removedir", FormatAtFlags, 0x200, "AT_REMOVEDIR"},
		{"at/nofollow_empty", FormatAtFlags, 0x1100, "AT_SYMLINK_NOFOLLOW|AT_EMPTY_PATH"},
		{"at/follow_unknown", FormatAtFlags, 0x400 | 0x10000, "AT_SYMLINK_FOLLOW|0x10000"},
		{"rename/zero", FormatRenameFlags, 0, "0"},
		{"rename/noreplace", FormatRenameFlags, 1, "RENAME_NOREPLACE"},
		{"rename/exchange_whiteout", FormatRenameFlags, 6, "RENAME_EXCHANGE|RENAME_WHITEOUT"},
		{"rename/unknown", FormatRenameFlags, 8, "0x8"},
		{"clone/zero", FormatCloneFlags, 0, "0"},
		{"clone/fork", FormatCloneFlags, 0x01200011, "CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD"},
		{"clone/vfork", FormatCloneFlags, 0x4111, "CLONE_VM|CLONE_VFORK|SIGCHLD"},
		{"clone/thread", FormatCloneFlags, 0x3d0f00, "CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID"},
		{"clone/newuser", FormatCloneFlags, 0x10000000 | 17, "CLONE_NEWUSER|SIGCHLD"},
		{"clone/high", FormatCloneFlags, 1 << 33, "0x200000000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.f(c.in); got != c.want {
				t.Fatalf("format(%#x) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestSignalName(t *testing.T) {
	cases := []struct {
		sig  int
		want string
	}{
		{0, "0"}, {1, "SIGHUP"}, {6, "SIGABRT"}, {9, "SIGKILL"}, {10, "SIGUSR1"}, {15, "SIGTERM"},
		{17, "SIGCHLD"}, {19, "SIGSTOP"}, {29, "SIGIO"}, {31, "SIGSYS"},
		{32, "SIGRT_0"}, {34, "SIGRT_2"}, {64, "SIGRT_32"}, {65, "signal(65)"}, {-1, "signal(-1)"},
	}
	for _, c := range cases {
		t.Run(strconv.Itoa(c.sig), func(t *testing.T) {
			if got := SignalName(c.sig); got != c.want {
				t.Fatalf("SignalName(%d) = %q, want %q", c.sig, got, c.want)
			}
		})
	}
}

func TestNative(t *testing.T) {
	for _, c := range []struct {
		goarch string
		want   *Table
	}{{"amd64", AMD64}, {"arm64", ARM64}, {"riscv64", nil}, {"386", nil}} {
		t.Run(c.goarch, func(t *testing.T) {
			if got := ForGOARCH(c.goarch); got != c.want {
				t.Fatalf("ForGOARCH(%q) = %v", c.goarch, got)
			}
		})
	}
}

// Nr searches the generated name index: it must find every name of the
// number table, at its number, and nothing else; a Table not made by this
// package has no names.
func TestNrIndex(t *testing.T) {
	for _, tb := range []*Table{AMD64, ARM64} {
		n := 0
		for nr, name := range tb.names {
			if name == "" {
				continue
			}
			n++
			if got, ok := tb.Nr(name); !ok || got != nr {
				t.Errorf("%s: Nr(%q) = %d, %v; want %d", tb.ABI, name, got, ok, nr)
			}
		}
		if n != len(tb.byName) || n != len(tb.Names()) {
			t.Errorf("%s: %d names, %d in the index, Names has %d", tb.ABI, n, len(tb.byName), len(tb.Names()))
		}
		for _, name := range []string{"", "nosuchcall", "Read", "read ", "zzz", "_"} {
			if nr, ok := tb.Nr(name); ok {
				t.Errorf("%s: Nr(%q) = %d, found", tb.ABI, name, nr)
			}
		}
	}
	var z Table
	if _, ok := z.Nr("read"); ok {
		t.Fatal("zero Table knows read")
	}
	if n := z.Names(); len(n) != 0 {
		t.Fatalf("zero Table names %v", n)
	}
}

// TestSocketAllowed: the sockets whose traffic the trapped calls cover
// pass; SCTP, raw, packet and other families are decided (red team,
// session 25: SCTP connects through socket options).
func TestSocketAllowed(t *testing.T) {
	for _, tc := range []struct {
		name              string
		family, typ, prot int32
		ok                bool
		what              string
	}{
		{"unix stream", 1, 1, 0, true, ""},
		{"unix dgram cloexec", 1, 2 | 0o2000000, 0, true, ""},
		{"netlink route", 16, 3, 0, true, ""},
		{"tcp", 2, 1, 0, true, ""},
		{"tcp nonblock explicit", 10, 1 | 0o4000, 6, true, ""},
		{"mptcp", 2, 1, 262, true, ""},
		{"udp", 10, 2, 17, true, ""},
		{"udplite", 2, 2, 136, true, ""},
		{"ping v4", 2, 2, 1, true, ""},
		{"ping v6", 10, 2, 58, true, ""},
		{"icmpv6 on v4", 2, 2, 58, false, "AF_INET SOCK_DGRAM protocol 58"},
		{"sctp stream", 2, 1, 132, false, "AF_INET SOCK_STREAM protocol 132"},
		{"sctp seqpacket", 10, 5, 132, false, "AF_INET6 SOCK_SEQPACKET protocol 132"},
		{"raw", 2, 3, 1, false, "AF_INET SOCK_RAW protocol 1"},
		{"packet", 17, 3, 768, false, "AF_PACKET SOCK_RAW protocol 768"},
		{"vsock", 40, 1, 0, false, "AF_VSOCK SOCK_STREAM protocol 0"},
		{"unknown family", 99, 1, 0, false, "family 99 SOCK_STREAM protocol 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, what := SocketAllowed(tc.family, tc.typ, tc.prot)
			if ok != tc.ok || what != tc.what {
				t.Errorf("SocketAllowed(%d, %#x, %d) = %v, %q; want %v, %q", tc.family, tc.typ, tc.prot, ok, what, tc.ok, tc.what)
			}
		})
	}
}

// TestRouteOptionMembership: every multicast membership option at its own
// level is a membership report the kernel sends; the same numbers at
// other levels (TCP, SOL_SOCKET) are not.
func TestRouteOptionMembership(t *testing.T) {
	for _, tc := range []struct {
		level, name int32
		want        string
	}{
		{SolIP, 35, "IP_ADD_MEMBERSHIP"},
		{SolIP, 39, "IP_ADD_SOURCE_MEMBERSHIP"},
		{SolIP, 41, "IP_MSFILTER"},
		{SolIP, 42, "MCAST_JOIN_GROUP"},
		{SolIP, 46, "MCAST_JOIN_SOURCE_GROUP"},
		{SolIPv6, 20, "IPV6_ADD_MEMBERSHIP"},
		{SolIPv6, 21, "IPV6_DROP_MEMBERSHIP"},
		{SolIPv6, 27, "IPV6_JOIN_ANYCAST"},
		{SolIPv6, 48, "MCAST_MSFILTER"},
		{SolIPv6, 35, ""}, // IPV6_... 35 is not a membership option
		{SolIP, 20, ""},
		{6, 35, ""}, // TCP
		{SolSocket, 42, ""},
	} {
		fam, what := RouteOption(tc.level, tc.name, false)
		if tc.want == "" {
			if fam == RouteMembership {
				t.Errorf("RouteOption(%d, %d) = %s %q, want none", tc.level, tc.name, fam, what)
			}
			continue
		}
		if fam != RouteMembership || what != tc.want {
			t.Errorf("RouteOption(%d, %d) = %q %q, want %q %q", tc.level, tc.name, fam, what, RouteMembership, tc.want)
		}
		if f, _ := RouteOption(tc.level, tc.name, true); f == RouteMembership {
			t.Errorf("RouteOption(%d, %d, cmsg) is a membership", tc.level, tc.name)
		}
		found := false
		for _, v := range SetsockoptTrapped {
			found = found || v == uint32(tc.name)
		}
		if !found {
			t.Errorf("optname %d not in SetsockoptTrapped", tc.name)
		}
	}
}
