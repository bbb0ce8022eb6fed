package procfs

import (
	"encoding/binary"
	"os"
	"strconv"
)

// AnonPage reports whether the page at addr of tid is an anonymous page
// (present or swapped, not a file page): /proc/<pid>/pagemap bits 63
// (present), 62 (swapped) and 61 (file-page or shared-anon), 2.6.25 and
// 3.5. Unreadable: false (the caller denies).
func AnonPage(tid int, addr uint64) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(tid) + "/pagemap")
	if err != nil {
		return false
	}
	defer f.Close()
	var b [8]byte
	if _, err := f.ReadAt(b[:], int64(addr/uint64(os.Getpagesize())*8)); err != nil {
		return false
	}
	e := binary.LittleEndian.Uint64(b[:])
	return e&(1<<63|1<<62) != 0 && e&(1<<61) == 0
}
