package procmap

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkLookup measures Lookup on both paths in this process with about
// 500 mappings (240 one-page PROT_READ regions between PROT_NONE gaps of a
// reservation, plus the Go test binary's own), for the address of the
// first, the middle and the last line of the maps text; and, for
// comparison, what the tracer does today per check (tracer.readMaps: read
// the whole text with os.ReadFile and parse every line).
func BenchmarkLookup(b *testing.B) {
	const regions = 240
	pg := os.Getpagesize()
	r, err := unix.Mmap(-1, 0, 2*regions*pg, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(r)
	for i := 0; i < regions; i++ {
		if err := unix.Mprotect(r[2*i*pg:(2*i+1)*pg], unix.PROT_READ); err != nil {
			b.Fatal(err)
		}
	}
	text, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		b.Fatal(err)
	}
	var lines []Mapping
	for _, l := range bytes.Split(bytes.TrimSuffix(text, []byte("\n")), []byte("\n")) {
		m, name, err := parseLine(l)
		if err != nil {
			b.Fatal(err)
		}
		if string(name) != gateName {
			lines = append(lines, m)
		}
	}
	b.Logf("%d mappings, %d bytes of maps text", len(lines), len(text))
	where := []struct {
		name string
		addr uint64
	}{
		{"first", lines[0].Start},
		{"middle", lines[len(lines)/2].Start},
		{"last", lines[len(lines)-1].Start},
	}
	for _, path := range []struct {
		name  string
		query queryFunc
	}{{"query", ioctlQuery}, {"text", noQuery}} {
		m, err := open(os.Getpid(), path.query)
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		if path.name == "query" && !m.UsesQuery() {
			continue // no PROCMAP_QUERY on this kernel
		}
		for _, w := range where {
			b.Run(path.name+"/"+w.name, func(b *testing.B) {
				for b.Loop() {
					if _, ok, err := m.Lookup(w.addr); err != nil || !ok {
						b.Fatalf("Lookup(%#x) = %v %v", w.addr, ok, err)
					}
				}
			})
		}
		b.Run(path.name+"/named", func(b *testing.B) {
			for b.Loop() {
				if _, ok, err := m.LookupNamed(funcPC()); err != nil || !ok {
					b.Fatalf("LookupNamed = %v %v", ok, err)
				}
			}
		})
	}
	b.Run("readall", func(b *testing.B) {
		for b.Loop() {
			t, err := os.ReadFile("/proc/self/maps")
			if err != nil {
				b.Fatal(err)
			}
			for _, l := range bytes.Split(bytes.TrimSuffix(t, []byte("\n")), []byte("\n")) {
				if _, _, err := parseLine(l); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
