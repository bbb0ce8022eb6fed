package server

// Files outlive memory: a session's sandbox as a tar archive, and an
// archive unpacked into a session's sandbox (a new session made from an
// earlier one's files, on this cell or another: the Agents SDK's workspace
// persist/hydrate). Both walk the sandbox as files.go does: one component
// at a time from the sandbox's descriptor with O_NOFOLLOW, so no symlink
// the code made is ever followed, and entries are written under a
// temporary name and renamed into place. Only regular files and
// directories travel; symlinks, hard links and special files are listed
// as skipped (a symlink would be the code's to re-create).

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracecell/tracecell/internal/rmtree"
)

// archiveReport says what an unpack did (POST .../archive).
type archiveReport struct {
	Files       int       `json:"files"`
	Directories int       `json:"directories"`
	Bytes       int64     `json:"bytes"`
	Skipped     []skipped `json:"skipped"`
}

// writeArchive writes the sandbox as a tar stream to a temporary file
// (capped at MaxCopySize, so that a failure is still an HTTP error) and
// returns it rewound, with the entries it left out.
func (s *Server) writeArchive(sandbox string) (*os.File, []skipped, error) {
	tmp, err := os.CreateTemp(s.opts.StateDir, ".archive-")
	if err != nil {
		return nil, nil, errf(500, "file_error", "create a temporary archive: %v", err)
	}
	os.Remove(tmp.Name()) // unlinked: gone with its descriptor
	fail := func(err error) (*os.File, []skipped, error) {
		tmp.Close()
		return nil, nil, err
	}
	root, err := openRoot(sandbox)
	if err != nil {
		return fail(err)
	}
	defer unix.Close(root)
	tw := tar.NewWriter(tmp)
	var skip []skipped
	var total int64
	entries := 0
	held := 0 // names the walk's levels hold (maxHeldNames)
	tooLarge := func() error {
		return errf(413, "archive_too_large", "the sandbox has more than %d entries, the most an archive holds; delete some first", maxListEntries)
	}
	var walk func(dirfd int, prefix string, depth int) error
	walk = func(dirfd int, prefix string, depth int) error {
		// One name more than the archive can still hold: enough to see
		// that it would be too large, without holding every name the code
		// made (rmtree.FirstNames). Names held past maxHeldNames over the
		// walk's levels mean more entries than an archive holds (at most
		// maxListEntries of them are entries already taken).
		want := maxListEntries - entries + 1
		k := min(want, maxHeldNames-held)
		names, more, err := rmtree.FirstNames(dirfd, k)
		if err != nil {
			return errf(500, "file_error", "list %s in the sandbox: %v", orDot(prefix), err)
		}
		if more && k < want {
			return tooLarge()
		}
		held += len(names)
		defer func() { held -= len(names) }()
		for _, n := range names {
			rel := prefix + n
			if entries >= maxListEntries {
				return tooLarge()
			}
			var st unix.Stat_t
			if err := unix.Fstatat(dirfd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				continue // removed meanwhile
			}
			mtime := time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				if depth >= maxListDepth {
					skip = append(skip, skipped{rel, fmt.Sprintf("deeper than %d levels", maxListDepth)})
					continue
				}
				sub, err := unix.Openat(dirfd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					skip = append(skip, skipped{rel, "not readable, or swapped for a symbolic link: " + err.Error()})
					continue
				}
				entries++
				err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: int64(st.Mode & 0o777), ModTime: mtime, Format: tar.FormatPAX})
				if err == nil {
					err = walk(sub, rel+"/", depth+1)
				}
				unix.Close(sub)
				if err != nil {
					return err
				}
			case unix.S_IFREG:
				fd, err := unix.Openat(dirfd, n, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
				if err != nil {
					skip = append(skip, skipped{rel, "not readable: " + err.Error()})
					continue
				}
				f := os.NewFile(uintptr(fd), rel)
				fi, err := f.Stat()
				if err != nil || !fi.Mode().IsRegular() {
					f.Close()
					skip = append(skip, skipped{rel, "changed while archived"})
					continue
				}
				if of, denied := s.deniedServed(fi); denied {
					f.Close()
					skip = append(skip, skipped{rel, "the deny-read file " + of + " under another name (a hard link)"})
					continue
				}
				if total += fi.Size(); total > s.opts.MaxCopySize {
					f.Close()
					return errf(413, "archive_too_large", "the sandbox holds more than %d bytes (--max-copy-size); delete some files first", s.opts.MaxCopySize)
				}
				entries++
				err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: int64(fi.Mode().Perm()), Size: fi.Size(), ModTime: fi.ModTime(), Format: tar.FormatPAX})
				if err == nil {
					var k int64
					k, err = io.Copy(tw, io.LimitReader(f, fi.Size()))
					if err == nil && k < fi.Size() { // shrank meanwhile: pad, say so
						_, err = io.CopyN(tw, zeroReader{}, fi.Size()-k)
						skip = append(skip, skipped{rel, "shrank while archived: zero-padded"})
					}
				}
				f.Close()
				if err != nil {
					return errf(500, "file_error", "archive %s: %v", rel, err)
				}
			case unix.S_IFLNK:
				skip = append(skip, skipped{rel, "symbolic link: not archived"})
			default:
				skip = append(skip, skipped{rel, "not a regular file or a directory"})
			}
		}
		return nil
	}
	if err := walk(root, "", 1); err != nil {
		return fail(err)
	}
	if err := tw.Close(); err != nil {
		return fail(errf(500, "file_error", "finish the archive: %v", err))
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return fail(errf(500, "file_error", "rewind the archive: %v", err))
	}
	return tmp, skip, nil
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// handleArchiveGet is GET /v1/sessions/{id}/archive: the sandbox's regular
// files and directories as a tar archive; X-Tracecell-Skipped counts the
// entries left out (symbolic links, special files).
func (s *Server) handleArchiveGet(w http.ResponseWriter, _ *http.Request, ss *session) error {
	f, skip, err := s.writeArchive(ss.sandbox)
	if err != nil {
		ss.log.Warn().Err(err).Msg("archive failed")
		return err
	}
	defer f.Close()
	st, _ := f.Stat()
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", ss.id+".tar"))
	w.Header().Set("Content-Length", fmt.Sprint(st.Size()))
	w.Header().Set("X-Tracecell-Skipped", fmt.Sprint(len(skip)))
	ss.log.Info().Int64("bytes", st.Size()).Int("skipped", len(skip)).Msg("sandbox archived")
	io.Copy(w, f)
	return nil
}

// handleArchivePut is POST /v1/sessions/{id}/archive: a tar archive (as
// GET .../archive makes) unpacked into the sandbox; existing files of the
// same names are replaced.
func (s *Server) handleArchivePut(w http.ResponseWriter, r *http.Request, ss *session) error {
	body := http.MaxBytesReader(w, r.Body, s.opts.MaxCopySize+s.opts.MaxCopySize/8+1<<20) // headers and padding
	rep, err := s.unpack(ss.sandbox, body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			err = errf(413, "archive_too_large", "the archive is larger than the server accepts (--max-copy-size %d bytes of content)", s.opts.MaxCopySize)
		}
		ss.log.Warn().Err(err).Msg("unpack refused or failed")
		return err
	}
	ss.mu.Lock()
	ss.lastUsed = time.Now()
	ss.mu.Unlock()
	ss.log.Info().Int("files", rep.Files).Int64("bytes", rep.Bytes).Int("skipped", len(rep.Skipped)).Msg("archive unpacked into the sandbox")
	writeJSON(w, 200, rep)
	return nil
}

// unpack extracts a tar stream into the sandbox: regular files and
// directories only, each path checked as a copy's destination (no "..",
// nothing outside), never through a symlink.
func (s *Server) unpack(sandbox string, r io.Reader) (*archiveReport, error) {
	root, err := openRoot(sandbox)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	rep := &archiveReport{Skipped: []skipped{}}
	budget := s.opts.MaxCopySize
	tr := tar.NewReader(r)
	for entries := 0; ; entries++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, err
			}
			return nil, partialArchive(errf(400, "invalid_archive", "the body is not a tar archive, or is cut short: %v", err), rep)
		}
		if entries >= maxListEntries {
			return nil, partialArchive(errf(413, "archive_too_large", "the archive has more than %d entries", maxListEntries), rep)
		}
		name := strings.TrimSuffix(h.Name, "/")
		comps, err := sandboxRel(sandbox, name, "archive entry")
		if err != nil || len(comps) == 0 || strings.HasPrefix(name, "/") {
			rep.Skipped = append(rep.Skipped, skipped{h.Name, "outside the sandbox, or not a clean relative path: not unpacked"})
			continue
		}
		shown := "archive entry " + path.Join(comps...)
		switch h.Typeflag {
		case tar.TypeDir:
			fd, err := openDirs(root, comps, true, shown)
			if err != nil {
				return nil, partialArchive(err, rep)
			}
			unix.Fchmod(fd, uint32(h.Mode&0o755)|0o700)
			unix.Close(fd)
			rep.Directories++
		case tar.TypeReg:
			if h.Size > budget {
				return nil, partialArchive(errf(413, "archive_too_large", "entry %s makes the archive larger than %d bytes (--max-copy-size)", h.Name, s.opts.MaxCopySize), rep)
			}
			dir, err := openDirs(root, comps[:len(comps)-1], true, shown)
			if err != nil {
				return nil, partialArchive(err, rep)
			}
			n, err := writeInto(dir, comps[len(comps)-1], tr, os.FileMode(h.Mode), h.Size, path.Join(comps...))
			unix.Close(dir)
			if err != nil {
				return nil, partialArchive(err, rep)
			}
			budget -= n
			rep.Files++
			rep.Bytes += n
		default:
			rep.Skipped = append(rep.Skipped, skipped{h.Name, fmt.Sprintf("type %q is not a regular file or a directory: not unpacked", h.Typeflag)})
		}
	}
	return rep, nil
}

// writeInto writes size bytes of r to name in dirfd through a temporary
// file and a rename (an existing entry, even a symlink, is replaced, never
// written through).
func writeInto(dirfd int, name string, r io.Reader, mode os.FileMode, size int64, shown string) (int64, error) {
	return writeTemp(dirfd, ".tracecell-unpack-"+randomID(""), name, mode, shown,
		shown+" is a directory in the sandbox; not replaced by a file",
		func(out *os.File) (int64, error) { return io.CopyN(out, r, size) })
}

// partialArchive adds what was already unpacked to a failure.
func partialArchive(err error, rep *archiveReport) error {
	var ae *apiError
	if errors.As(err, &ae) && (rep.Files > 0 || rep.Directories > 0) {
		return errf(ae.status, ae.code, "%s (%d files and %d directories were unpacked before this)", ae.msg, rep.Files, rep.Directories)
	}
	return err
}
