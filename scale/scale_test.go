// Package scale is `make scale`: three tracecell cells, each in its own
// network namespace (ip netns, a veth pair, addresses 10.77.N.0/24 made
// here) and running as nobody, behind HAProxy and behind nginx from
// Debian's packages with the configurations of deploy/proxy, driven by a
// bounded load: sessions that each set a variable and then check it. One
// fault per run: SIGKILL a cell, cut its link, SIGTERM it (drain), restart
// it under the same name after a SIGKILL.
//
// Pass: no session silently reset (each keeps its state, or gets an answer
// from a cell naming itself and what was lost); zero misroutes and zero
// losses before a fault and on the cells the fault did not touch; a drain
// loses nothing. p50/p99 of the executions are logged with and without a
// proxy. Not in `make test`: it needs root (for the namespaces), haproxy
// and nginx, and minutes of CPU.
package scale

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const cells = 3

type cluster struct {
	t     *testing.T
	dir   string
	bin   string
	token string
	cmds  [cells]*exec.Cmd
	proxy *exec.Cmd
	front string // "direct", "haproxy", "nginx"
	hc    *http.Client
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func ns(i int) string       { return fmt.Sprintf("tc-scale-%d", i) }
func hostVeth(i int) string { return fmt.Sprintf("tcs%dh", i) }
func cellAddr(i int) string { return fmt.Sprintf("10.77.%d.2:8080", i+1) }
func cellName(i int) string { return fmt.Sprintf("cell-%d", i) }

func setup(t *testing.T) *cluster {
	if os.Getenv("TRACECELL_SCALE") == "" {
		t.Skip("run by make scale (root, ip netns, haproxy, nginx)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("make scale needs root for the network namespaces (the cells run as nobody)")
	}
	for _, p := range []string{"ip", "haproxy", "nginx", "setpriv"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s not found: apt-get install iproute2 haproxy nginx util-linux", p)
		}
	}
	src := os.Getenv("TRACECELL_BIN")
	if src == "" {
		t.Fatal("TRACECELL_BIN is not set (make scale sets it)")
	}
	dir, err := os.MkdirTemp("", "tc-scale-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	c := &cluster{t: t, dir: dir, bin: filepath.Join(dir, "tracecell"), token: "scale-token-" + strconv.Itoa(os.Getpid())}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(c.bin, b, 0o755)
	os.WriteFile(filepath.Join(dir, "token"), []byte(c.token+"\n"), 0o600)
	os.Chown(filepath.Join(dir, "token"), 65534, 65534)
	for i := 0; i < cells; i++ {
		exec.Command("ip", "netns", "del", ns(i)).Run() // a previous run's
		run(t, "ip", "netns", "add", ns(i))
		run(t, "ip", "link", "add", hostVeth(i), "type", "veth", "peer", "name", "eth0", "netns", ns(i))
		run(t, "ip", "addr", "add", fmt.Sprintf("10.77.%d.1/24", i+1), "dev", hostVeth(i))
		run(t, "ip", "link", "set", hostVeth(i), "up")
		run(t, "ip", "-n", ns(i), "addr", "add", fmt.Sprintf("10.77.%d.2/24", i+1), "dev", "eth0")
		run(t, "ip", "-n", ns(i), "link", "set", "eth0", "up")
		run(t, "ip", "-n", ns(i), "link", "set", "lo", "up")
	}
	t.Cleanup(func() {
		c.stopAll()
		for i := 0; i < cells; i++ {
			exec.Command("ip", "netns", "del", ns(i)).Run()
		}
		os.RemoveAll(dir)
	})
	c.hc = &http.Client{Timeout: 40 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	return c
}

// startCell starts cell i as nobody in its namespace on stateDir.
func (c *cluster) startCell(i int, state string) {
	t := c.t
	os.MkdirAll(filepath.Dir(state), 0o755) // nobody must reach it
	os.MkdirAll(state, 0o700)
	os.Chown(state, 65534, 65534)
	cmd := exec.Command("ip", "netns", "exec", ns(i), "setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
		c.bin, "serve", "--listen", cellAddr(i), "--allow-remote", "--token-file", filepath.Join(c.dir, "token"),
		"--cell-id", cellName(i), "--state-dir", state, "--pool-size", "4", "--max-sessions", "500",
		"--drain-timeout", "30s", "--exec-timeout", "20s", "--log-level", "warn")
	logf, _ := os.Create(filepath.Join(c.dir, cellName(i)+".log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.cmds[i] = cmd
	c.waitReady("http://"+cellAddr(i)+"/readyz", 30*time.Second)
}

func (c *cluster) waitReady(url string, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if resp, err := c.hc.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("%s not ready within %v (logs in %s)", url, d, c.dir)
}

func (c *cluster) stopCell(i int, sig syscall.Signal) {
	cmd := c.cmds[i]
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	c.cmds[i] = nil
}

func (c *cluster) stopAll() {
	for i := 0; i < cells; i++ {
		c.stopCell(i, syscall.SIGKILL)
	}
	c.stopProxy()
}

func (c *cluster) stopProxy() {
	if c.proxy != nil {
		c.proxy.Process.Signal(syscall.SIGTERM)
		c.proxy.Wait()
		c.proxy = nil
	}
}

// startProxy runs HAProxy or nginx with deploy/proxy's configuration,
// listening on 127.0.0.1 instead of every address.
func (c *cluster) startProxy(front string) {
	t := c.t
	c.front = front
	if front == "direct" {
		return
	}
	var cmd *exec.Cmd
	switch front {
	case "haproxy":
		b, err := os.ReadFile("../deploy/proxy/haproxy.cfg")
		if err != nil {
			t.Fatal(err)
		}
		cfg := strings.Replace(string(b), "bind 0.0.0.0:8080", "bind 127.0.0.1:18080", 1)
		f := filepath.Join(c.dir, "haproxy.cfg")
		os.WriteFile(f, []byte(cfg), 0o644)
		cmd = exec.Command("haproxy", "-db", "-f", f)
	case "nginx":
		b, err := os.ReadFile("../deploy/proxy/nginx.conf")
		if err != nil {
			t.Fatal(err)
		}
		cfg := strings.Replace(string(b), "listen 8080;", "listen 127.0.0.1:18081;", 1)
		cfg = strings.ReplaceAll(cfg, "/tmp/tracecell-nginx", filepath.Join(c.dir, "nginx"))
		f := filepath.Join(c.dir, "nginx.conf")
		os.WriteFile(f, []byte(cfg), 0o644)
		cmd = exec.Command("nginx", "-c", f, "-g", "daemon off;")
	}
	logf, _ := os.Create(filepath.Join(c.dir, front+".log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.proxy = cmd
	c.waitReady(c.base("")+"/healthz", 10*time.Second)
}

// base is the URL a request for session name goes to.
func (c *cluster) base(name string) string {
	switch c.front {
	case "haproxy":
		return "http://127.0.0.1:18080"
	case "nginx":
		return "http://127.0.0.1:18081"
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return "http://" + cellAddr(int(h.Sum32()%cells))
}

type answer struct {
	status int
	cell   string
	code   string
	msg    string
	result string
	err    error
	took   time.Duration
}

func (c *cluster) do(method, name, path, body string) answer {
	req, _ := http.NewRequestWithContext(context.Background(), method, c.base(name)+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("X-Tracecell-Session", name)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := c.hc.Do(req)
	a := answer{took: time.Since(start), err: err}
	if err != nil {
		return a
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a.took = time.Since(start)
	a.status, a.cell = resp.StatusCode, resp.Header.Get("X-Tracecell-Cell")
	var m struct {
		Result *string `json:"result"`
		Error  *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Name    string `json:"name"`
		} `json:"error"`
	}
	json.Unmarshal(b, &m)
	if m.Result != nil {
		a.result = *m.Result
	}
	if m.Error != nil {
		a.code, a.msg = m.Error.Code, m.Error.Message
		if m.Error.Name != "" { // a Python exception in a 200 result
			a.code = "python:" + m.Error.Name
		}
	}
	if a.status != 200 && a.status != 201 && a.code == "" {
		a.msg = strings.TrimSpace(string(b))
	}
	return a
}

// session is one client of the load.
type session struct {
	name, want string
	cell       string // where it was created
}

// verdict of one check.
const (
	vOK       = "ok"        // the variable is there
	vHonest   = "honest"    // an answer of a cell naming itself and what is missing
	vProxy    = "proxy"     // the proxy could not reach a cell (not a reset: nothing was answered as if fresh)
	vSilent   = "SILENT"    // a 200 without the state: a silent reset
	vTransErr = "transport" // the client's request failed
)

func classify(a answer, want string) string {
	switch {
	case a.err != nil:
		return vTransErr
	case a.status == 200 && a.code == "" && a.result == want:
		return vOK
	case a.status == 200:
		return vSilent
	case a.cell != "" && a.code != "" && strings.Contains(a.msg, `cell "`+a.cell+`"`):
		return vHonest
	case a.cell == "":
		return vProxy
	}
	return vSilent // an answer of a cell that does not say which cell, or what
}

type stats struct {
	mu    sync.Mutex
	lat   []time.Duration
	count map[string]int
	bad   []string
}

func (s *stats) add(v string, a answer, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count == nil {
		s.count = map[string]int{}
	}
	s.count[v]++
	if v == vOK {
		s.lat = append(s.lat, a.took)
	} else if len(s.bad) < 8 {
		s.bad = append(s.bad, fmt.Sprintf("%s: %s %d %s %s %s %v", what, v, a.status, a.cell, a.code, a.msg, a.err))
	}
}

func (s *stats) pct(p float64) time.Duration {
	if len(s.lat) == 0 {
		return 0
	}
	sort.Slice(s.lat, func(i, j int) bool { return s.lat[i] < s.lat[j] })
	return s.lat[int(p*float64(len(s.lat)-1))]
}

// parallel runs f over the sessions with a bounded concurrency.
func parallel(ss []*session, width int, f func(*session)) {
	ch := make(chan *session)
	var wg sync.WaitGroup
	for w := 0; w < width; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range ch {
				f(s)
			}
		}()
	}
	for _, s := range ss {
		ch <- s
	}
	close(ch)
	wg.Wait()
}

// setUp creates the sessions and sets their variables; every step must
// succeed (no fault yet: zero misroutes, zero losses).
func (c *cluster) setUp(run string, n, width int, st *stats) []*session {
	t := c.t
	ss := make([]*session, n)
	for i := range ss {
		ss[i] = &session{name: fmt.Sprintf("%s-%d", run, i), want: fmt.Sprintf("'v-%s-%d'", run, i)}
	}
	var mu sync.Mutex
	var fail []string
	parallel(ss, width, func(s *session) {
		a := c.do("POST", s.name, "/v1/sessions", fmt.Sprintf(`{"id":%q}`, s.name))
		if a.status != 201 {
			mu.Lock()
			fail = append(fail, fmt.Sprintf("create %s: %d %s %s %v", s.name, a.status, a.code, a.msg, a.err))
			mu.Unlock()
			return
		}
		s.cell = a.cell
		a = c.do("POST", s.name, "/v1/sessions/"+s.name+"/execute", fmt.Sprintf(`{"code":"x = %s"}`, s.want))
		if a.status != 200 || a.code != "" || a.cell != s.cell {
			mu.Lock()
			fail = append(fail, fmt.Sprintf("set %s: %d %s (created on %s) %s %s %v", s.name, a.status, a.cell, s.cell, a.code, a.msg, a.err))
			mu.Unlock()
			return
		}
		st.add(vOK, a, "set")
	})
	if len(fail) > 0 {
		t.Fatalf("%s: %d failures before any fault (misroutes or losses), first: %v", run, len(fail), fail[:min(len(fail), 5)])
	}
	return ss
}

// check asks every session for its variable.
func (c *cluster) check(ss []*session, width int, st *stats, perCell map[string]*stats) {
	parallel(ss, width, func(s *session) {
		a := c.do("POST", s.name, "/v1/sessions/"+s.name+"/execute", `{"code":"x"}`)
		v := classify(a, s.want)
		st.add(v, a, s.name)
		perCell[s.cell].add(v, a, s.name)
	})
}

func newPerCell() map[string]*stats {
	m := map[string]*stats{}
	for i := 0; i < cells; i++ {
		m[cellName(i)] = &stats{}
	}
	return m
}

func (c *cluster) metric(i int, name string) string {
	req, _ := http.NewRequest("GET", "http://"+cellAddr(i)+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, name) {
			return l
		}
	}
	return ""
}

func TestScale(t *testing.T) {
	c := setup(t)
	n, _ := strconv.Atoi(os.Getenv("TRACECELL_SCALE_SESSIONS"))
	if n <= 0 {
		n = 150
	}
	width := 12
	var report bytes.Buffer
	fmt.Fprintf(&report, "| front | fault | sessions | p50 | p99 | ok | honest | proxy | transport | silent |\n|---|---|---|---|---|---|---|---|---|---|\n")
	row := func(front, fault string, n int, st *stats) {
		fmt.Fprintf(&report, "| %s | %s | %d | %.1f ms | %.1f ms | %d | %d | %d | %d | %d |\n", front, fault, n,
			float64(st.pct(0.5).Microseconds())/1000, float64(st.pct(0.99).Microseconds())/1000,
			st.count[vOK], st.count[vHonest], st.count[vProxy], st.count[vTransErr], st.count[vSilent])
	}
	runNo := 0
	for _, front := range []string{"direct", "haproxy", "nginx"} {
		for _, fault := range []string{"none", "kill", "cut", "term", "restart"} {
			if front == "direct" && fault != "none" {
				continue
			}
			runNo++
			name := fmt.Sprintf("r%d-%s-%s", runNo, front, fault)
			t.Run(front+"/"+fault, func(t *testing.T) {
				c.t = t
				states := [cells]string{}
				for i := 0; i < cells; i++ {
					states[i] = filepath.Join(c.dir, name, cellName(i))
					c.startCell(i, states[i])
				}
				c.startProxy(front)
				defer func() {
					c.stopProxy()
					for i := 0; i < cells; i++ {
						c.stopCell(i, syscall.SIGKILL)
					}
					for i := 0; i < cells; i++ {
						exec.Command("ip", "link", "set", hostVeth(i), "up").Run()
					}
				}()
				st := &stats{}
				ss := c.setUp(name, n, width, st)
				for i := 0; i < cells; i++ {
					if m := c.metric(i, "tracecell_requests_misrouted_total"); !strings.HasSuffix(m, " 0") {
						t.Errorf("misroutes before the fault on %s: %q", cellName(i), m)
					}
				}
				victim := 1
				onVictim := 0
				for _, s := range ss {
					if s.cell == cellName(victim) {
						onVictim++
					}
				}
				per := newPerCell()
				switch fault {
				case "none":
					c.check(ss, width, st, per)
				case "kill":
					c.stopCell(victim, syscall.SIGKILL)
					c.check(ss, width, st, per)
				case "cut":
					run(t, "ip", "link", "set", hostVeth(victim), "down")
					c.check(ss, width, st, per)
					run(t, "ip", "link", "set", hostVeth(victim), "up")
					c.waitReady("http://"+cellAddr(victim)+"/readyz", 10*time.Second)
					if front == "haproxy" {
						time.Sleep(2 * time.Second) // rise 2 × inter 500ms
					} else {
						time.Sleep(2500 * time.Millisecond) // fail_timeout 2s
					}
					// The cell never died: its sessions are there again.
					again := &stats{}
					var back []*session
					for _, s := range ss {
						if s.cell == cellName(victim) {
							back = append(back, s)
						}
					}
					c.check(back, width, again, newPerCell())
					if again.count[vOK] != len(back) {
						t.Errorf("after the link came back, %d of the %d sessions of %s answered with their state: %v", again.count[vOK], len(back), cellName(victim), again.bad)
					}
				case "term":
					go c.stopCell(victim, syscall.SIGTERM)
					time.Sleep(300 * time.Millisecond) // the drain has begun
					// New sessions meanwhile land on the ready cells.
					extra := c.setUp(name+"-during-drain", n/5, width, st)
					for _, s := range extra {
						if s.cell == cellName(victim) {
							t.Errorf("session %s was created on the draining %s", s.name, s.cell)
						}
					}
					c.check(ss, width, st, per)
					// The clients end their sessions: the drain then ends early.
					parallel(ss, width, func(s *session) { c.do("DELETE", s.name, "/v1/sessions/"+s.name, "") })
				case "restart":
					c.stopCell(victim, syscall.SIGKILL)
					c.startCell(victim, states[victim])
					time.Sleep(2500 * time.Millisecond) // the proxy sees it up again
					c.check(ss, width, st, per)
					lost := 0
					for _, b := range per[cellName(victim)].bad {
						if strings.Contains(b, "session_lost") && strings.Contains(b, "earlier boot") {
							lost++
						}
					}
					if per[cellName(victim)].count[vHonest] != onVictim || lost == 0 {
						t.Errorf("after the restart, %d of the %d sessions of %s were answered session_lost: %v", per[cellName(victim)].count[vHonest], onVictim, cellName(victim), per[cellName(victim)].bad)
					}
				}
				t.Logf("%s: %d sessions (%d on %s), verdicts %v, p50 %v p99 %v", name, n, onVictim, cellName(victim), st.count, st.pct(0.5), st.pct(0.99))
				if st.count[vSilent] > 0 {
					t.Errorf("silent resets: %v", st.bad)
				}
				for cell, p := range per {
					total := p.count[vOK] + p.count[vHonest] + p.count[vProxy] + p.count[vTransErr] + p.count[vSilent]
					if (fault == "none" || fault == "term" || cell != cellName(victim)) && p.count[vOK] != total {
						t.Errorf("%s (untouched by the fault, or draining) lost %d of %d sessions: %v", cell, total-p.count[vOK], total, p.bad)
					}
				}
				row(front, fault, n, st)
			})
		}
	}
	t.Logf("results:\n%s", report.String())
	if out := os.Getenv("TRACECELL_SCALE_OUT"); out != "" {
		os.WriteFile(out, report.Bytes(), 0o644)
	}
}
