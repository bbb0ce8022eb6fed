package hideproc

// The syscall package's frozen amd64 table stops before these (Linux 3.2).
const (
	sysProcessVMReadv  = 310
	sysProcessVMWritev = 311
)
