package filter

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/tracecell/tracecell/syscalls"
)

// TestProgramsCurrent fails when a committed programs file differs from
// what Assemble builds now: run go generate ./filter/.
func TestProgramsCurrent(t *testing.T) {
	for _, tbl := range tables {
		t.Run(tbl.ABI, func(t *testing.T) {
			want, err := EncodePrograms(tbl)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile("programs_" + tbl.ABI + ".bin")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("programs_%s.bin is stale (%d bytes, Assemble gives %d): run go generate ./filter/", tbl.ABI, len(got), len(want))
			}
			for k := 0; k < numKeys; k++ {
				o := keyOptions(tbl, k)
				if programKey(o) != k {
					t.Fatalf("programKey(keyOptions(%d)) = %d", k, programKey(o))
				}
				raw, err := decodeProgram(got, k)
				if err != nil {
					t.Fatalf("key %d: %v", k, err)
				}
				ref, err := Assemble(o)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(raw, ref) {
					t.Fatalf("key %d (%+v): the file's program differs from Assemble's", k, o)
				}
			}
		})
	}
}

// TestRawUsesPrecomputed: the build's ABI gets the embedded program, equal
// to Assemble's for every switch combination; another ABI is assembled.
func TestRawUsesPrecomputed(t *testing.T) {
	native := syscalls.Native()
	if native == nil {
		t.Skip("no syscall table for this architecture")
	}
	if nativePrograms.table != native || len(nativePrograms.file) == 0 {
		t.Fatalf("no embedded programs for %s", native.ABI)
	}
	for k := 0; k < numKeys; k++ {
		o := keyOptions(native, k)
		if precomputed(o) == nil {
			t.Fatalf("key %d: no precomputed program", k)
		}
		got, err := Raw(o)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Assemble(o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("key %d: Raw differs from Assemble", k)
		}
	}
	for _, tbl := range tables {
		if tbl != native && precomputed(Options{Table: tbl}) != nil {
			t.Fatalf("%s: precomputed program offered for a table not embedded", tbl.ABI)
		}
	}
	if precomputed(Options{}) != nil {
		t.Fatal("precomputed program without a table")
	}
}

// TestOptionsKeyed: programKey must cover every switch of Options. A new
// field must be added to programKey and keyOptions (and the files
// regenerated) before this test is updated.
func TestOptionsKeyed(t *testing.T) {
	typ := reflect.TypeOf(Options{})
	var switches []string
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if f.Name == "Table" {
			continue
		}
		if f.Type.Kind() != reflect.Bool {
			t.Fatalf("Options.%s is not a bool: programKey cannot number it", f.Name)
		}
		switches = append(switches, f.Name)
	}
	if want := []string{"TrapReadOpens", "TrapAllClones", "TrapNet", "PathPage"}; !reflect.DeepEqual(switches, want) {
		t.Fatalf("Options switches %v, programKey numbers %v", switches, want)
	}
	if 1<<len(switches) != numKeys {
		t.Fatalf("numKeys %d for %d switches", numKeys, len(switches))
	}
	// Each switch moves the key by its own bit.
	for i, name := range switches {
		o := Options{}
		reflect.ValueOf(&o).Elem().FieldByName(name).SetBool(true)
		if programKey(o) != 1<<i {
			t.Fatalf("programKey with only %s = %d, want %d", name, programKey(o), 1<<i)
		}
	}
}

func TestDecodeProgramMalformed(t *testing.T) {
	good, err := EncodePrograms(syscalls.AMD64)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		file []byte
	}{
		{"empty", nil},
		{"bad magic", append([]byte("xxxx"), good[4:]...)},
		{"bad version", append(append([]byte(programsMagic), 9), good[5:]...)},
		{"truncated count", good[:6]},
		{"truncated program", good[:len(good)-3]},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := decodeProgram(c.file, numKeys-1); !errors.Is(err, errPrograms) {
				t.Fatalf("decodeProgram = %v, want errPrograms", err)
			}
		})
	}
}
