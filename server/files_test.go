package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestListDepthCapped: a chain of directories deeper than maxListDepth is
// listed down to the cap (one descriptor per level), and the listing says
// it was truncated.
func TestListDepthCapped(t *testing.T) {
	sbx := t.TempDir()
	p := sbx
	for i := 0; i < maxListDepth+20; i++ {
		p = filepath.Join(p, "d")
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sbx, "top.txt"), []byte("x"), 0o644)
	l, err := listSandbox(sbx)
	if err != nil {
		t.Fatal(err)
	}
	deepest := 0
	for _, f := range l.Files {
		if n := strings.Count(f.Path, "/") + 1; n > deepest {
			deepest = n
		}
	}
	if !l.Truncated || deepest != maxListDepth || len(l.Files) != maxListDepth+1 {
		t.Fatalf("truncated %v, deepest entry %d levels, %d entries; want true, %d, %d", l.Truncated, deepest, len(l.Files), maxListDepth, maxListDepth+1)
	}

	shallow := t.TempDir()
	os.MkdirAll(filepath.Join(shallow, "a", "b"), 0o755)
	if l, err := listSandbox(shallow); err != nil || l.Truncated || len(l.Files) != 2 {
		t.Fatalf("shallow tree: %+v %v", l, err)
	}
}
