package tracer

import (
	"fmt"
	"os"
	"testing"
)

// BenchmarkReadBase prices reading a dirfd's directory, which every *at call
// with a real dirfd pays (a cwd is remembered while the walk cache is used).
func BenchmarkReadBase(b *testing.B) {
	dir, err := os.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer dir.Close()
	link := fmt.Sprintf("/proc/self/fd/%d", dir.Fd())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readBase(link); err != nil {
			b.Fatal(err)
		}
	}
}
