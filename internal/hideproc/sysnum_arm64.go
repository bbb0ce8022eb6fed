package hideproc

import "syscall"

const (
	sysProcessVMReadv  = syscall.SYS_PROCESS_VM_READV
	sysProcessVMWritev = syscall.SYS_PROCESS_VM_WRITEV
)
