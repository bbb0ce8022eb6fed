// The protocol between the worker-host and worker.py: requests on the
// worker's fd 3, its messages on fd 4 (untrusted: the code runs in the
// worker), and the end-of-execution markers on its fds 1 and 2.

package worker

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// markerPrefix starts the end-of-execution marker the worker writes to fds
// 1 and 2 (worker.py MARKER_PREFIX); a 16-hex-digit token and \x1e follow.
var markerPrefix = []byte("\x1eTRACECELL-END-")

const tokenLen = 16

var markerLen = len(markerPrefix) + tokenLen + 1

// workerMsg is any message worker.py writes on fd 4.
type workerMsg struct {
	Hello   bool   `json:"hello"`
	Pid     int    `json:"pid"`
	Python  string `json:"python"`
	Version string `json:"version"`

	Preloaded     []string          `json:"preloaded"`
	PreloadErrors map[string]string `json:"errors"`

	Started    *int64     `json:"started"` // the user's code starts now: it may be interrupted
	ID         *int64     `json:"id"`
	Result     *string    `json:"result"`
	Error      *ExecError `json:"error"`
	Artifacts  []Artifact `json:"artifacts"`
	DurationMS float64    `json:"duration_ms"`
	Truncated  bool       `json:"truncated"`
	Notes      []string   `json:"notes"`
	Markers    []bool     `json:"markers"`
}

// workerRequest is a message to worker.py on fd 3.
type workerRequest struct {
	Op           string   `json:"op"`
	ID           int64    `json:"id,omitempty"`
	Code         string   `json:"code,omitempty"`
	Token        string   `json:"token"`
	MaxArtifacts int      `json:"max_artifacts,omitempty"`
	Modules      []string `json:"modules,omitempty"`
}

// readResponses reads the worker's messages on fd 4. Everything on it is
// untrusted input: the code runs in the worker and can write to fd 4. A
// message that is not the protocol's (too long, not JSON, unknown fields,
// wrong types, values out of range) ends the worker with the reason, never
// the host or the server.
func (h *host) readResponses(r *os.File) {
	defer close(h.resps)
	defer r.Close()
	err := readJSONLines(r, h.log, "the worker", maxWorkerLine, true, func(m *workerMsg) error {
		if err := checkWorkerMsg(m); err != nil {
			return err
		}
		h.resps <- m
		return nil
	})
	switch {
	case errors.Is(err, errLineTooLong):
		h.protoErr <- fmt.Sprintf("the worker wrote a message longer than %d bytes on its control pipe (fd %d): the code wrote to it; the worker was killed", maxWorkerLine, 4)
	case err != nil:
		h.protoErr <- fmt.Sprintf("the worker broke the protocol on its control pipe (fd %d): %v; the code wrote to it? The worker was killed", 4, err)
	}
}

// Compiled at the first hello, not at package init: every tracecell start
// (`run`, `--version`) links this package, and the compile was 1.2 % of
// `tracecell --version`'s CPU (bench/results/2026-11-27-gaps.md).
var versionRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}$`)
})

// checkWorkerMsg checks what one message of the worker may hold on its own
// (the host checks it against its state when it acts on it): exactly one of
// a hello, a started notice or a response, with values in range.
func checkWorkerMsg(m *workerMsg) error {
	resp := m.ID != nil || m.Result != nil || m.Error != nil || m.Artifacts != nil || m.DurationMS != 0 ||
		m.Truncated || m.Notes != nil || m.Markers != nil || m.Preloaded != nil || m.PreloadErrors != nil
	hello := m.Hello || m.Pid != 0 || m.Python != "" || m.Version != ""
	kinds := 0
	for _, k := range []bool{hello, m.Started != nil, resp} {
		if k {
			kinds++
		}
	}
	if kinds != 1 {
		return errors.New("a message that is not exactly one of a hello, a started notice and a response")
	}
	switch {
	case hello:
		if !m.Hello || m.Pid <= 0 || m.Python == "" || len(m.Python) > maxPathChars || !versionRE().MatchString(m.Version) {
			return fmt.Errorf("a malformed hello (pid %d, python %d bytes, version %q)", m.Pid, len(m.Python), trimForLog(m.Version))
		}
	case resp:
		if m.DurationMS < 0 {
			return fmt.Errorf("a response with a negative duration (%g ms)", m.DurationMS)
		}
		if len(m.Markers) > 2 {
			return fmt.Errorf("a response with %d markers, want at most 2", len(m.Markers))
		}
		for _, a := range m.Artifacts {
			if a.Path == "" || strings.HasPrefix(a.Path, "/") || slices.Contains(strings.Split(a.Path, "/"), "..") {
				return fmt.Errorf("an artifact path %q that is not inside the sandbox", trimForLog(a.Path))
			}
			if a.Size < 0 || (a.Change != "created" && a.Change != "modified") || (a.Kind != "file" && a.Kind != "figure") {
				return fmt.Errorf("a malformed artifact (size %d, change %q, kind %q)", a.Size, trimForLog(a.Change), trimForLog(a.Kind))
			}
		}
	}
	return nil
}

// trimForLog shortens a value of a rejected message for an error text.
func trimForLog(s string) string {
	if len(s) > 64 {
		return string(trimPartialRune([]byte(s[:64]), true)) + "\u2026"
	}
	return s
}

func (h *host) writeRequest(r *workerRequest) {
	b, _ := json.Marshal(r)
	b = append(b, '\n')
	// A large request must not block the loop if the worker is stuck: the
	// write finishes or fails (EPIPE) when the worker reads or dies.
	go func() {
		if _, err := h.reqW.Write(b); err != nil {
			h.log.Debug().Err(err).Msg("write a request to the worker")
		}
	}()
}

func (h *host) expectMarker(token string) {
	m := append(append(append([]byte{}, markerPrefix...), token...), 0x1e)
	h.stdout.expect(m)
	h.stderr.expect(m)
}

func newToken() string {
	var b [tokenLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}
