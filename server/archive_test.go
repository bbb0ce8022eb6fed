package server

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func (e *testEnv) raw(method, path string, body []byte) (int, http.Header, []byte) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.hs.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

type tarEntry struct {
	name, body, link string
	typ              byte
}

func makeTar(t *testing.T, ents []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.link, ModTime: time.Now()}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	return buf.Bytes()
}

// TestArchiveRoundTrip: a session's files outlive it: its sandbox as a tar
// archive, unpacked into a new session (here on another server: another
// cell), with the same files; symlinks are left out and said so.
func TestArchiveRoundTrip(t *testing.T) {
	a := newEnv(t, func(o *Options) { o.CellID = "ca" })
	a.create("src")
	sbx := a.sandboxOf("src")
	os.MkdirAll(filepath.Join(sbx, "data", "deep"), 0o755)
	os.WriteFile(filepath.Join(sbx, "data", "deep", "x.csv"), []byte("a,b\n1,2\n"), 0o644)
	os.WriteFile(filepath.Join(sbx, "notes.txt"), []byte("hello"), 0o600)
	os.Symlink(a.outside, filepath.Join(sbx, "out"))
	st, h, tarball := a.raw("GET", "/v1/sessions/src/archive", nil)
	if st != 200 || h.Get("Content-Type") != "application/x-tar" || h.Get("X-Tracecell-Skipped") != "1" {
		t.Fatalf("archive: %d %v %s", st, h, tarball)
	}
	var names []string
	tr := tar.NewReader(bytes.NewReader(tarball))
	for {
		hd, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, hd.Name)
	}
	if strings.Join(names, " ") != "data/ data/deep/ data/deep/x.csv notes.txt" {
		t.Fatalf("archive entries %v (the symlink out, and nothing outside, must be absent)", names)
	}

	b := newEnv(t, func(o *Options) { o.CellID = "cb" })
	b.create("dst")
	st, _, body := b.raw("POST", "/v1/sessions/dst/archive", tarball)
	var rep archiveReport
	json.Unmarshal(body, &rep)
	if st != 200 || rep.Files != 2 || rep.Directories != 2 || rep.Bytes != 13 {
		t.Fatalf("unpack: %d %s", st, body)
	}
	got, _ := os.ReadFile(filepath.Join(b.sandboxOf("dst"), "data", "deep", "x.csv"))
	if string(got) != "a,b\n1,2\n" {
		t.Fatalf("unpacked file: %q", got)
	}
	if fi, err := os.Stat(filepath.Join(b.sandboxOf("dst"), "notes.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("notes.txt: %v %v", fi, err)
	}
}

// TestUnpackStaysInside: a hostile archive writes nothing outside the
// sandbox — not through "..", an absolute path, a symlink or hard link
// entry, nor a symlink the session's code made in the sandbox — checked by
// looking at the directory outside.
func TestUnpackStaysInside(t *testing.T) {
	e := newEnv(t, nil)
	e.create("s")
	sbx := e.sandboxOf("s")
	if err := os.Symlink(e.outside, filepath.Join(sbx, "made-by-code")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		ents   []tarEntry
		status int
		code   string
	}{
		{"dotdot", []tarEntry{{name: "../../outside/pwn.txt", body: "x", typ: tar.TypeReg}}, 200, ""},
		{"absolute", []tarEntry{{name: filepath.Join(e.outside, "pwn.txt"), body: "x", typ: tar.TypeReg}}, 200, ""},
		{"symlink then through it", []tarEntry{{name: "ln", link: e.outside, typ: tar.TypeSymlink}, {name: "ln/pwn.txt", body: "x", typ: tar.TypeReg}}, 200, ""},
		{"hard link", []tarEntry{{name: "hl", link: filepath.Join(e.outside, "canary.txt"), typ: tar.TypeLink}}, 200, ""},
		{"through the code's symlink", []tarEntry{{name: "made-by-code/pwn.txt", body: "x", typ: tar.TypeReg}}, 403, "symlink_refused"},
		{"replace the code's symlink", []tarEntry{{name: "made-by-code", body: "replaced", typ: tar.TypeReg}}, 200, ""},
		{"not a tar", nil, 400, "invalid_archive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := makeTar(t, c.ents)
			if c.ents == nil {
				body = bytes.Repeat([]byte("not a tar archive "), 64)
			}
			st, _, b := e.raw("POST", "/v1/sessions/s/archive", body)
			if st != c.status {
				t.Fatalf("%d %s, want %d", st, b, c.status)
			}
			if c.code != "" {
				if code, _ := errCode(t, b); code != c.code {
					t.Fatalf("code %s, want %s: %s", code, c.code, b)
				}
			} else {
				var rep archiveReport
				json.Unmarshal(b, &rep)
				if c.name != "replace the code's symlink" && len(rep.Skipped) == 0 {
					t.Fatalf("nothing reported skipped: %s", b)
				}
			}
			e.checkCanary() // nothing outside changed
		})
	}
	// The code's symlink was replaced by a file, not written through.
	if fi, err := os.Lstat(filepath.Join(sbx, "made-by-code")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("made-by-code: %v %v", fi, err)
	}
	// ln/pwn.txt landed in a directory ln inside the sandbox, not through a symlink.
	if fi, err := os.Lstat(filepath.Join(sbx, "ln")); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("a symlink entry was unpacked: %v %v", fi, err)
	}
}

func TestUnpackCapped(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxCopySize = 1000 })
	e.create("s")
	big := makeTar(t, []tarEntry{{name: "a", body: strings.Repeat("x", 600), typ: tar.TypeReg}, {name: "b", body: strings.Repeat("y", 600), typ: tar.TypeReg}})
	st, _, b := e.raw("POST", "/v1/sessions/s/archive", big)
	if code, msg := errCode(t, b); st != 413 || code != "archive_too_large" || !strings.Contains(msg, "1 files") {
		t.Fatalf("%d %s", st, b)
	}
	if _, err := os.Stat(filepath.Join(e.sandboxOf("s"), "b")); !os.IsNotExist(err) {
		t.Fatal("the entry past the cap was written")
	}
	os.WriteFile(filepath.Join(e.sandboxOf("s"), "c"), bytes.Repeat([]byte("z"), 600), 0o644)
	if st, _, b := e.raw("GET", "/v1/sessions/s/archive", nil); st != 413 || !strings.Contains(string(b), "archive_too_large") {
		t.Fatalf("archive over the cap: %d %s", st, b)
	}
}
