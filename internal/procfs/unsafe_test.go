package procfs

import "unsafe"

// addrOf is the address of b's first byte.
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
