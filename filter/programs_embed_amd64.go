package filter

import (
	_ "embed"

	"github.com/tracecell/tracecell/syscalls"
)

//go:embed programs_x86_64.bin
var programsX86_64 []byte

func init() {
	nativePrograms.table, nativePrograms.file = syscalls.AMD64, programsX86_64
}
