package filter

import (
	_ "embed"

	"github.com/tracecell/tracecell/syscalls"
)

//go:embed programs_aarch64.bin
var programsAarch64 []byte

func init() {
	nativePrograms.table, nativePrograms.file = syscalls.ARM64, programsAarch64
}
