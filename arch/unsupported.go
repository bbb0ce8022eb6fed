//go:build !linux || (!amd64 && !arm64)

package arch

// tracecell traces with the register layouts of arch.go and the syscall
// tables of package syscalls, which exist for linux/amd64 and linux/arm64
// only. On any other GOOS or GOARCH this file stops the build with a
// message naming them, before packages that need Native (tracer) fail
// with "undefined: arch.Native".
var _ int = "tracecell builds only for GOOS=linux with GOARCH=amd64 or GOARCH=arm64"
