package audit

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHTMLInBrowser renders the HTML report of the recorded shell tree in a
// real headless browser (Debian's chromium; skipped when it is not
// installed: it is too large for scripts/deps.sh). The browser's DOM must
// hold the two SVG pictures with every process of the tree, and its
// screenshot must show the tree (pixels that are not background in the
// tree's area).
func TestHTMLInBrowser(t *testing.T) {
	var bin string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("no chromium in PATH (apt-get install chromium to run this check)")
	}
	dir := t.TempDir()
	s := summarise(t, []string{"tree.trace.jsonl"})
	var b bytes.Buffer
	if err := Render(&b, s, "html", Options{}); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"--headless", "--no-sandbox", "--disable-gpu",
			"--user-data-dir=" + filepath.Join(dir, "profile")}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %v: %v\n%s", bin, args, err, stderr.Bytes())
		}
		return stdout.Bytes()
	}
	dom := string(run("--dump-dom", "file://"+page))
	if n := strings.Count(dom, "<svg"); n != 2 {
		t.Errorf("the browser's DOM has %d svg elements, want 2 (process tree, timeline)", n)
	}
	for _, p := range s.Processes {
		if !strings.Contains(dom, ">"+itoa(p.Pid)+" ") {
			t.Errorf("process %d is not drawn", p.Pid)
		}
	}
	shot := filepath.Join(dir, "shot.png")
	run("--screenshot="+shot, "--window-size=1200,1400", "file://"+page)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// The tree is drawn below the summary table: count the pixels of its
	// boxes' colours (light blue fill, red fill) in the upper half.
	boxes := 0
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y/2; y++ {
		for x := bnd.Min.X; x < bnd.Max.X/2; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if (r == 0xee && g == 0xf3 && bl == 0xf9) || (r == 0xfd && g == 0xec && bl == 0xea) {
				boxes++
			}
		}
	}
	if boxes < 1000 {
		t.Errorf("the screenshot shows %d pixels of process boxes, want a drawn tree", boxes)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
