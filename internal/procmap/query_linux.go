package procmap

// PROCMAP_QUERY (Linux 6.11, fs/proc/task_mmu.c do_procmap_query): an
// ioctl on an fd of /proc/<pid>/maps that returns the one VMA covering an address. x/sys
// v0.49 does not define it; the layout below is include/uapi/linux/fs.h's,
// the same on amd64 and arm64 (only __u64 and __u32 fields, naturally
// aligned: no padding, 104 bytes; ioctl_unsafe_linux.go checks the size at
// compile time).

// procmapQuery is struct procmap_query (include/uapi/linux/fs.h, 6.11).
// The kernel reads it with copy_struct_from_user: size tells which version
// of the struct the caller has, so a later kernel with more fields accepts
// this one, and fields it does not know must be zero.
type procmapQuery struct {
	size        uint64 // in: sizeof(struct procmap_query), 104
	queryFlags  uint64 // in: PROCMAP_QUERY_* below
	queryAddr   uint64 // in: the address to look up
	vmaStart    uint64 // out: vm_start
	vmaEnd      uint64 // out: vm_end (exclusive)
	vmaFlags    uint64 // out: PROCMAP_QUERY_VMA_* of the VMA
	vmaPageSize uint64 // out: the VMA's page size (huge pages)
	vmaOffset   uint64 // out: vm_pgoff << PAGE_SHIFT for a file VMA, 0 otherwise
	inode       uint64 // out: the file's inode number, 0 for anonymous memory
	devMajor    uint32 // out: MAJOR(i_sb->s_dev) of the file, 0 for anonymous memory
	devMinor    uint32 // out: MINOR(i_sb->s_dev)
	vmaNameSize uint32 // in: size of the name buffer, 0 for no name; out: length of the name with its NUL, 0 when the VMA has none
	buildIDSize uint32 // in/out: build ID buffer size; always 0 here
	vmaNameAddr uint64 // in: user address of the name buffer
	buildIDAddr uint64 // in: user address of the build ID buffer; always 0 here
}

// sizeofProcmapQuery is sizeof(struct procmap_query) of 6.11.
const sizeofProcmapQuery = 104

// procmapQueryIoctl is PROCMAP_QUERY, _IOWR(PROCFS_IOCTL_MAGIC = 'f', 17,
// struct procmap_query), in the generic ioctl encoding that amd64 and arm64
// use (include/uapi/asm-generic/ioctl.h: dir<<30 | size<<16 | type<<8 | nr,
// _IOC_READ|_IOC_WRITE = 3): 0xc0686611.
const procmapQueryIoctl = 3<<30 | sizeofProcmapQuery<<16 | 'f'<<8 | 17

// Flags of procmapQuery (enum procmap_query_flags). As query flags the
// VMA_* bits are filters (the VMA must have them), which Lookup does not
// use; as vma_flags they describe the VMA found, from vm_flags exactly as
// the maps text's "rwxs" column does (show_map_vma: VM_READ, VM_WRITE,
// VM_EXEC, and VM_MAYSHARE for 's').
const (
	procmapQueryVMAReadable   = 0x01 // PROCMAP_QUERY_VMA_READABLE: VM_READ
	procmapQueryVMAWritable   = 0x02 // PROCMAP_QUERY_VMA_WRITABLE: VM_WRITE
	procmapQueryVMAExecutable = 0x04 // PROCMAP_QUERY_VMA_EXECUTABLE: VM_EXEC
	procmapQueryVMAShared     = 0x08 // PROCMAP_QUERY_VMA_SHARED: VM_MAYSHARE

	// PROCMAP_QUERY_COVERING_OR_NEXT_VMA (0x10) would return the next VMA
	// when none covers the address; Lookup asks for an exact cover and
	// gets ENOENT for a hole. PROCMAP_QUERY_FILE_BACKED_VMA (0x20) is not
	// used either.
)
