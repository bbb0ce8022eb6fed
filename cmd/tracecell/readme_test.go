package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestREADMECommands runs the command blocks of README.md and README.ko.md
// as written (issue 17 item 4: the first typical-use command did not work):
// every ```sh or ```bash block, unless the HTML comment just before it says
//
//	<!-- notest: REASON -->
//
// (a block that cannot run here: a vLLM server, root, minutes of make
// targets). A reason is required. A block runs as one bash script, in a
// fresh directory that is also $HOME, with tracecell on PATH through
// `make install PREFIX=<temp>`, and with the files of readmeFixtures there.
// Each command must exit 0, unless a comment before the block lists the
// statuses of its commands in order:
//
//	<!-- exit: 0 1 -->
//
// The binary is $TRACECELL_BIN (as the Makefile sets it), else built here.
func TestREADMECommands(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skipf("no make to install tracecell with: %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := os.Getenv("TRACECELL_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "tracecell")
		out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
		if err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	} else if bin, err = filepath.Abs(bin); err != nil {
		t.Fatal(err)
	}
	prefix := t.TempDir()
	mk := exec.Command("make", "-s", "-C", root, "install", "PREFIX="+prefix, "BIN="+bin)
	// Run from `make unit`: not a sub-make of it (no inherited jobserver
	// or flags).
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" && k != "MAKEOVERRIDES" {
			mk.Env = append(mk.Env, kv)
		}
	}
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make install PREFIX=%s: %v\n%s", prefix, err, out)
	}
	if _, err := os.Stat(filepath.Join(prefix, "bin", "tracecell")); err != nil {
		t.Fatalf("make install put no tracecell in %s/bin: %v", prefix, err)
	}

	ran := 0
	for _, doc := range []string{"README.md", "README.ko.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := readmeBlocks(string(b))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		for _, bl := range blocks {
			t.Run(fmt.Sprintf("%s:%d", doc, bl.line), func(t *testing.T) {
				if bl.notest != "" {
					t.Skipf("notest: %s", bl.notest)
				}
				ran++
				runREADMEBlock(t, bl, prefix)
			})
		}
	}
	if ran < 2 {
		t.Errorf("%d README blocks ran: the typical-use commands of both READMEs must", ran)
	}
}

// readmeFixtures are the files the README's commands expect in the current
// directory.
var readmeFixtures = map[string]string{
	// "Typical use": an analysis script that writes its result next to it
	// (relative: in the sandbox, the command's working directory).
	"analysis.py": "import csv\n" +
		"with open('squares.csv', 'w', newline='') as f:\n" +
		"    csv.writer(f).writerows([n, n * n] for n in range(10))\n" +
		"print('wrote squares.csv')\n",
}

type readmeBlock struct {
	line     int    // of the opening fence
	notest   string // the reason, when the block is not run
	statuses []int  // expected, per command; nil: all 0
	commands []string
}

var (
	notestRe = regexp.MustCompile(`^<!--\s*notest:(.*?)-->$`)
	exitRe   = regexp.MustCompile(`^<!--\s*exit:([0-9 ]*)-->$`)
	heredoc  = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_]+)['"]?`)
)

// readmeBlocks finds the sh/bash blocks of a Markdown document, with the
// HTML comments on the lines just before each (blank lines between are
// allowed), and splits each into commands: a line, with the lines it
// continues with a trailing '\' and the body of its here-document.
func readmeBlocks(doc string) ([]readmeBlock, error) {
	lines := strings.Split(doc, "\n")
	var blocks []readmeBlock
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l != "```sh" && l != "```bash" {
			continue
		}
		bl := readmeBlock{line: i + 1}
		for j := i - 1; j >= 0; j-- {
			c := strings.TrimSpace(lines[j])
			if c == "" {
				continue
			}
			if m := notestRe.FindStringSubmatch(c); m != nil {
				bl.notest = strings.TrimSpace(m[1])
				if bl.notest == "" {
					return nil, fmt.Errorf("line %d: <!-- notest: --> without a reason: say why the block cannot run here", j+1)
				}
				continue
			}
			if m := exitRe.FindStringSubmatch(c); m != nil {
				for _, f := range strings.Fields(m[1]) {
					n, _ := strconv.Atoi(f)
					bl.statuses = append(bl.statuses, n)
				}
				continue
			}
			break
		}
		i++
		var cur []string
		end := ""
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			l := lines[i]
			switch {
			case end != "":
				cur = append(cur, l)
				if strings.TrimSpace(l) == end {
					end = ""
				}
			case len(cur) == 0 && (strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#")):
				continue
			default:
				cur = append(cur, l)
				if m := heredoc.FindStringSubmatch(l); m != nil {
					end = m[1]
				}
			}
			if end == "" && !strings.HasSuffix(l, "\\") && len(cur) > 0 {
				bl.commands = append(bl.commands, strings.Join(cur, "\n"))
				cur = nil
			}
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: block not closed", bl.line)
		}
		if len(cur) > 0 {
			return nil, fmt.Errorf("line %d: the block ends inside a command", bl.line)
		}
		if bl.statuses != nil && len(bl.statuses) != len(bl.commands) {
			return nil, fmt.Errorf("line %d: <!-- exit: --> lists %d statuses for %d commands", bl.line, len(bl.statuses), len(bl.commands))
		}
		blocks = append(blocks, bl)
	}
	return blocks, nil
}

// runREADMEBlock runs bl's commands in one bash script (variables carry
// over), checking each status as it goes.
func runREADMEBlock(t *testing.T, bl readmeBlock, prefix string) {
	dir := t.TempDir()
	for name, body := range readmeFixtures {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var script strings.Builder
	for i, c := range bl.commands {
		want := 0
		if bl.statuses != nil {
			want = bl.statuses[i]
		}
		fmt.Fprintf(&script, "%s\n__s=$?; if [ $__s -ne %d ]; then echo \"README command %d exited $__s, want %d\" >&2; exit 99; fi\n", c, want, i+1, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=" + filepath.Join(prefix, "bin") + ":/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "TMPDIR=" + dir}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("bash: %v", err)
	}
	if err != nil {
		t.Errorf("block at line %d failed (%v):\n%s\noutput:\n%s", bl.line, err, strings.Join(bl.commands, "\n"), out.String())
	}
}

// TestReadmeBlocks checks the parser on a small document.
func TestReadmeBlocks(t *testing.T) {
	doc := "x\n<!-- exit: 0 0 1 -->\n\n```sh\n# comment\na --b \\\n  c\ncat > f <<'EOF'\nline\nEOF\nfalse\n```\n" +
		"<!-- notest: needs a GPU -->\n```bash\nvllm serve\n```\n```python\nnot shell\n```\n"
	bl, err := readmeBlocks(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(bl) != 2 || len(bl[0].commands) != 3 || bl[0].commands[0] != "a --b \\\n  c" ||
		bl[0].commands[1] != "cat > f <<'EOF'\nline\nEOF" || bl[0].commands[2] != "false" || fmt.Sprint(bl[0].statuses) != "[0 0 1]" {
		t.Fatalf("%+v", bl)
	}
	if bl[1].notest != "needs a GPU" || bl[1].line != 14 {
		t.Fatalf("%+v", bl[1])
	}
	for _, bad := range []string{
		"<!-- notest: -->\n```sh\nx\n```\n",    // no reason
		"<!-- exit: 1 -->\n```sh\nx\ny\n```\n", // statuses do not match
		"```sh\nx\n",                           // not closed
		"```sh\ncat <<EOF\nno end\n```\n",      // inside a here-document
	} {
		if _, err := readmeBlocks(bad); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}
