package filter

//go:generate go run mkprograms.go

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/net/bpf"

	"github.com/tracecell/tracecell/syscalls"
)

// Precomputed programs.
//
// Assembling the program takes 60 µs warm and 170–350 µs at the first
// call of a process (the rules, the sort, the search tree, and the page
// faults of touching that code and the tables for the first time): a
// cost every `tracecell run` paid at start-up for a result that depends
// only on the ABI and the four switches of Options. So mkprograms.go
// (go generate ./filter/) assembles the 16 programs of each ABI into
// programs_<abi>.bin, the build embeds the native ABI's file
// (programs_embed_<goarch>.go), and Raw slices the one it needs out of it
// (about 10 µs). TestProgramsCurrent fails when a file no longer matches
// what Assemble builds (a change to the rules, the tables or the code
// generation): run go generate ./filter/ then.

// programsMagic starts a programs file; the byte after it is the format
// version.
const programsMagic = "tcsf"

const programsVersion = 1

// numKeys is the number of Options switch combinations (programKey).
const numKeys = 16

// programKey numbers o's switches; Table is not part of it (one file per
// ABI).
func programKey(o Options) int {
	k := 0
	if o.TrapReadOpens {
		k |= 1
	}
	if o.TrapAllClones {
		k |= 2
	}
	if o.TrapNet {
		k |= 4
	}
	if o.PathPage {
		k |= 8
	}
	return k
}

// keyOptions is the inverse of programKey for table t.
func keyOptions(t *syscalls.Table, k int) Options {
	return Options{Table: t, TrapReadOpens: k&1 != 0, TrapAllClones: k&2 != 0, TrapNet: k&4 != 0, PathPage: k&8 != 0}
}

// EncodePrograms assembles the program of every switch combination for t
// and returns them in the programs file format: the magic, the version,
// then for each key in order a little-endian uint16 count of instructions
// and the instructions (Op uint16, Jt, Jf uint8, K uint32, little-endian).
func EncodePrograms(t *syscalls.Table) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(programsMagic)
	b.WriteByte(programsVersion)
	for k := 0; k < numKeys; k++ {
		raw, err := Assemble(keyOptions(t, k))
		if err != nil {
			return nil, err
		}
		var n [2]byte
		binary.LittleEndian.PutUint16(n[:], uint16(len(raw)))
		b.Write(n[:])
		for _, ins := range raw {
			var w [8]byte
			binary.LittleEndian.PutUint16(w[0:], ins.Op)
			w[2], w[3] = ins.Jt, ins.Jf
			binary.LittleEndian.PutUint32(w[4:], ins.K)
			b.Write(w[:])
		}
	}
	return b.Bytes(), nil
}

var errPrograms = errors.New("malformed programs file")

// decodeProgram returns program k of a programs file.
func decodeProgram(file []byte, k int) ([]bpf.RawInstruction, error) {
	if len(file) < len(programsMagic)+1 || string(file[:len(programsMagic)]) != programsMagic {
		return nil, errPrograms
	}
	if v := file[len(programsMagic)]; v != programsVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", errPrograms, v, programsVersion)
	}
	rest := file[len(programsMagic)+1:]
	for i := 0; ; i++ {
		if len(rest) < 2 {
			return nil, errPrograms
		}
		n := int(binary.LittleEndian.Uint16(rest))
		rest = rest[2:]
		if len(rest) < 8*n {
			return nil, errPrograms
		}
		if i < k {
			rest = rest[8*n:]
			continue
		}
		out := make([]bpf.RawInstruction, n)
		for j := range out {
			w := rest[8*j:]
			out[j] = bpf.RawInstruction{Op: binary.LittleEndian.Uint16(w), Jt: w[2], Jf: w[3], K: binary.LittleEndian.Uint32(w[4:])}
		}
		return out, nil
	}
}

// precomputed returns the embedded program for o, or nil when there is
// none: another ABI than the build's (a test's table), or no file for it.
func precomputed(o Options) []bpf.RawInstruction {
	if o.Table == nil || o.Table != nativePrograms.table || len(nativePrograms.file) == 0 {
		return nil
	}
	raw, err := decodeProgram(nativePrograms.file, programKey(o))
	if err != nil {
		return nil
	}
	return raw
}

// nativePrograms is the embedded programs file of the build's ABI
// (programs_embed_<goarch>.go), empty on an architecture without one.
var nativePrograms struct {
	table *syscalls.Table
	file  []byte
}
