package helmtest

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/tracecell/tracecell/deploy/k8scheck"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

// The value sets the chart is linted and rendered with besides its defaults.
var valueSets = []struct {
	name, release, values string
	check                 func(t *testing.T, o objects, notes string)
}{
	{
		name: "nginx, five cells, a policy", release: "sbx",
		values: `
cells: {replicas: 5, drainTimeout: 2m, terminationGracePeriodSeconds: 150, preload: [numpy, pandas], extraArgs: ["--exec-timeout=120s"]}
policy: {net: deny, deny_read: [/etc/ssl/private], max_procs: 64, env: {OMP_NUM_THREADS: "2"}}
proxy: {type: nginx}
image: {repository: registry.example/tracecell, tag: v1.2.3}
agentSandbox: {enabled: true, warmPoolReplicas: 1}
`,
		check: func(t *testing.T, o objects, notes string) {
			sts := get[*appsv1.StatefulSet](t, o, "StatefulSet", "sbx-tracecell")
			c := sts.Spec.Template.Spec.Containers[0]
			if *sts.Spec.Replicas != 5 || c.Image != "registry.example/tracecell:v1.2.3" {
				t.Errorf("replicas %d image %q", *sts.Spec.Replicas, c.Image)
			}
			for flag, want := range map[string]string{"drain-timeout": "2m", "policy": "/etc/tracecell/policy.yaml", "preload": "numpy,pandas", "exec-timeout": "120s"} {
				if v, _ := k8scheck.FlagValue(c.Args, flag); v != want {
					t.Errorf("--%s=%q, want %q (args %v)", flag, v, want, c.Args)
				}
			}
			// The policy reaches the pod as the file --policy names.
			cm := get[*corev1.ConfigMap](t, o, "ConfigMap", "sbx-tracecell-policy")
			var pol map[string]any
			if err := yaml.UnmarshalStrict([]byte(cm.Data["policy.yaml"]), &pol); err != nil || pol["net"] != "deny" || pol["max_procs"] != float64(64) {
				t.Errorf("policy.yaml %q: %v", cm.Data["policy.yaml"], err)
			}
			mounted := false
			for _, m := range c.VolumeMounts {
				for _, v := range sts.Spec.Template.Spec.Volumes {
					if v.Name == m.Name && v.ConfigMap != nil && v.ConfigMap.Name == cm.Name && m.MountPath == "/etc/tracecell" {
						mounted = true
					}
				}
			}
			if !mounted {
				t.Error("the policy ConfigMap is not mounted at /etc/tracecell")
			}
			// The Sandboxes' pods take the same image, drain and policy.
			sb := get[*k8scheck.SandboxWarmPool](t, o, "SandboxWarmPool", "sbx-tracecell")
			sc := sb.Spec.PodTemplate.Spec.Containers[0]
			if v, _ := k8scheck.FlagValue(sc.Args, "policy"); v != "/etc/tracecell/policy.yaml" || sc.Image != c.Image || sb.Spec.Replicas != 1 {
				t.Errorf("the warm pool's pod: %s %v (replicas %d)", sc.Image, sc.Args, sb.Spec.Replicas)
			}
			if _, ok := o[key("Deployment", "sbx-tracecell-haproxy")]; ok {
				t.Error("proxy.type nginx also renders HAProxy")
			}
			cfg := get[*corev1.ConfigMap](t, o, "ConfigMap", "sbx-tracecell-nginx").Data["nginx.conf"]
			for i := 0; i < 5; i++ {
				cell := fmt.Sprintf("sbx-tracecell-%d", i)
				for _, want := range []string{
					fmt.Sprintf(`"~^%s\.s-[0-9a-f]{16}$" cell_%d;`, cell, i),
					fmt.Sprintf("server %s.sbx-tracecell.tools.svc.cluster.local:8080 resolve max_fails=0;", cell),
					fmt.Sprintf("upstream cell_%d { zone cell_%d 64k; server %s.sbx-tracecell.tools.svc.cluster.local:8080 resolve; }", i, i, cell),
				} {
					if !strings.Contains(cfg, want) {
						t.Errorf("nginx.conf lacks %q", want)
					}
				}
			}
			if strings.Contains(cfg, "sbx-tracecell-5") {
				t.Error("nginx.conf names a sixth cell")
			}
			// The routing is deploy/proxy/nginx.conf's (what make scale runs).
			plainConf, err := os.ReadFile("../proxy/nginx.conf")
			if err != nil {
				t.Fatal(err)
			}
			for _, start := range []string{`map "$tc_path_id|`, "map $uri $tc_path_id", "location / {"} {
				if g, p := block(cfg, start), block(string(plainConf), start); g == "" || g != p {
					t.Errorf("nginx.conf's %q block differs from deploy/proxy/nginx.conf's:\n%s\n--- plain:\n%s", start, g, p)
				}
			}
			// Debian's nginx (1.22) predates `resolve` (1.27.3) and would
			// resolve the cluster's names at the check: the rest of the
			// configuration is checked with them replaced by 127.0.0.1.
			local := regexp.MustCompile(`sbx-tracecell-[0-9]\.[a-z.-]+:8080 resolve`).ReplaceAllString(cfg, "127.0.0.1:8080")
			local = strings.ReplaceAll(local, "kube-dns.kube-system.svc.cluster.local", "127.0.0.1")
			if !k8scheck.CheckProxy(t, "nginx", local, func(f string) []string { return []string{"-t", "-q", "-c", f} }) {
				t.Logf("%s is not installed (Debian: apt-get install %s): its syntax check is skipped", "nginx", "nginx")
			}
			if !strings.Contains(notes, "nginx proxy at http://sbx-tracecell-proxy.tools.svc:8080") {
				t.Errorf("NOTES.txt does not name the nginx proxy:\n%s", notes)
			}
		},
	},
	{
		name: "gateway route, vLLM sidecar, no proxy", release: "tracecell",
		values: `
cells: {replicas: 2}
proxy: {type: none}
gateway: {enabled: true, parentRefs: [{name: edge, namespace: gateway-system}], hostnames: [tracecell.example]}
vllm: {enabled: true, replicas: 3}
policy: {net: loopback}
`,
		check: func(t *testing.T, o objects, notes string) {
			for _, k := range o.kinds() {
				if strings.Contains(k, "haproxy") || strings.Contains(k, "nginx") {
					t.Errorf("proxy.type none renders %s", k)
				}
			}
			route := get[*gatewayv1.HTTPRoute](t, o, "HTTPRoute", "tracecell")
			checkRoute(t, o, route, 2)
			if len(route.Spec.ParentRefs) != 1 || route.Spec.ParentRefs[0].Name != "edge" || string(*route.Spec.ParentRefs[0].Namespace) != "gateway-system" {
				t.Errorf("parentRefs %+v", route.Spec.ParentRefs)
			}
			side := get[*appsv1.Deployment](t, o, "Deployment", "tracecell-vllm").Spec.Template.Spec.InitContainers[0]
			if v, _ := k8scheck.FlagValue(side.Args, "policy"); v != "/etc/tracecell/policy.yaml" {
				t.Errorf("the vLLM sidecar does not take the policy: %v", side.Args)
			}
			if !strings.Contains(notes, `The HTTPRoute "tracecell" attaches to edge`) {
				t.Errorf("NOTES.txt does not name the route:\n%s", notes)
			}
		},
	},
	{
		name: "no proxy, no route, no PDB", release: "cells",
		values: `
proxy: {type: none}
cells: {podDisruptionBudget: {enabled: false}, storage: {size: 5Gi, storageClassName: fast}}
`,
		check: func(t *testing.T, o objects, notes string) {
			if want := []string{"Service/cells-tracecell", "StatefulSet/cells-tracecell"}; fmt.Sprint(o.kinds()) != fmt.Sprint(want) {
				t.Errorf("rendered %v, want %v", o.kinds(), want)
			}
			sts := get[*appsv1.StatefulSet](t, o, "StatefulSet", "cells-tracecell")
			if sc := sts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName; sc == nil || *sc != "fast" {
				t.Errorf("storageClassName %v", sc)
			}
			if !strings.Contains(notes, "cells-tracecell-N.cells-tracecell.tools.svc:8080") {
				t.Errorf("NOTES.txt does not say how to reach the cells without a proxy:\n%s", notes)
			}
		},
	},
}

func TestValueSets(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			manifest, notes, err := render(t, vs.release, vs.values)
			if err != nil {
				t.Fatalf("rendering: %v", err)
			}
			o := decode(t, vs.name, manifest)
			checkPods(t, o)
			checkCells(t, o)
			vs.check(t, o, notes)
		})
	}
}

// checkCells: what every rendering's cells share with deploy/k8s/cells.yaml.
func checkCells(t *testing.T, o objects) {
	t.Helper()
	plain := get[*appsv1.StatefulSet](t, loadFile(t, "../k8s/cells.yaml"), "StatefulSet", "tracecell")
	pc := plain.Spec.Template.Spec.Containers[0]
	var sts *appsv1.StatefulSet
	for _, v := range o {
		if s, ok := v.(*appsv1.StatefulSet); ok {
			sts = s
		}
	}
	if sts == nil {
		t.Fatal("no StatefulSet")
	}
	c := sts.Spec.Template.Spec.Containers[0]
	if d := diff(c.SecurityContext, pc.SecurityContext); d != "" {
		t.Errorf("container securityContext: %s", d)
	}
	if d := diff(sts.Spec.Template.Spec.SecurityContext, plain.Spec.Template.Spec.SecurityContext); d != "" {
		t.Errorf("pod securityContext: %s", d)
	}
	if d := diff(c.ReadinessProbe, pc.ReadinessProbe); d != "" {
		t.Errorf("readiness probe: %s", d)
	}
	if d := diff(c.LivenessProbe, pc.LivenessProbe); d != "" {
		t.Errorf("liveness probe: %s", d)
	}
	if d := diff(c.Ports, pc.Ports); d != "" {
		t.Errorf("ports: %s", d)
	}
	// The plain manifest's flags are all there (values may differ).
	for _, a := range pc.Args {
		name, _, _ := strings.Cut(a, "=")
		if _, ok := k8scheck.FlagValue(c.Args, strings.TrimPrefix(name, "--")); !ok && name != "serve" && name != "--allow-remote" {
			t.Errorf("no %s in %v", name, c.Args)
		}
	}
	if c.Args[0] != "serve" || !contains(c.Args, "--allow-remote") {
		t.Errorf("args %v", c.Args)
	}
	if _, ok := k8scheck.FlagValue(c.Args, "cell-id"); ok {
		t.Error("--cell-id is set: each pod must take its own pod name (the default)")
	}
	headless := get[*corev1.Service](t, o, "Service", sts.Spec.ServiceName)
	if headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("the StatefulSet's Service %s is not headless or does not publish draining pods", headless.Name)
	}
	for k, v := range headless.Spec.Selector {
		if sts.Spec.Template.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, not on the pods", k, v)
		}
	}
}

// block is the text from start to its closing brace, with runs of white
// space made one blank ("" when start is not in text).
func block(text, start string) string {
	i := strings.Index(text, start)
	if i < 0 {
		return ""
	}
	j := strings.Index(text[i:], "}")
	return strings.Join(strings.Fields(text[i:i+j+1]), " ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkRoute: the minted ids of each cell go to that cell's Service (which
// selects that pod alone), everything else to the cells with session
// persistence on X-Tracecell-Session and a retry of a draining cell's 503.
func checkRoute(t *testing.T, o objects, route *gatewayv1.HTTPRoute, cells int) {
	t.Helper()
	rules := route.Spec.Rules
	if len(rules) != cells+1 {
		t.Fatalf("%d rules, want one per cell and one for the rest", len(rules))
	}
	for i := 0; i < cells; i++ {
		cell := fmt.Sprintf("tracecell-%d", i)
		r := rules[i]
		if len(r.Matches) != 1 || r.Matches[0].Path == nil || *r.Matches[0].Path.Type != gatewayv1.PathMatchRegularExpression {
			t.Fatalf("rule %d: %+v", i, r.Matches)
		}
		re, err := regexp.Compile("^(?:" + *r.Matches[0].Path.Value + ")$")
		if err != nil {
			t.Fatalf("rule %d: %v", i, err)
		}
		other := fmt.Sprintf("tracecell-%d", (i+1)%cells)
		for path, want := range map[string]bool{
			"/v1/sessions/" + cell + ".s-0123456789abcdef":               true,
			"/v1/sessions/" + cell + ".s-0123456789abcdef/exec":          true,
			"/v1/sessions/" + other + ".s-0123456789abcdef/exec":         false,
			"/v1/sessions/" + cell + "0.s-0123456789abcdef/exec":         false,
			"/v1/sessions/" + cell + "xs-0123456789abcdef/exec":          false,
			"/v1/sessions/my-" + cell + ".s-0123456789abcdef":            false,
			"/v1/sessions/" + cell + ".s-0123456789abcdef-trailing/exec": false,
		} {
			if re.MatchString(path) != want {
				t.Errorf("rule %d (%s) matches %s: %v, want %v", i, re, path, !want, want)
			}
		}
		if len(r.BackendRefs) != 1 || string(r.BackendRefs[0].Name) != cell {
			t.Fatalf("rule %d backends %+v", i, r.BackendRefs)
		}
		svc := get[*corev1.Service](t, o, "Service", cell)
		if svc.Spec.Selector["statefulset.kubernetes.io/pod-name"] != cell || !svc.Spec.PublishNotReadyAddresses {
			t.Errorf("Service %s selects %v (publishNotReady %v): want the pod %s alone, draining included", cell, svc.Spec.Selector, svc.Spec.PublishNotReadyAddresses, cell)
		}
		if int32(*r.BackendRefs[0].Port) != svc.Spec.Ports[0].Port {
			t.Errorf("rule %d port %d, Service port %d", i, *r.BackendRefs[0].Port, svc.Spec.Ports[0].Port)
		}
	}
	last := rules[cells]
	sp := last.SessionPersistence
	if sp == nil || sp.Type == nil || *sp.Type != gatewayv1.HeaderBasedSessionPersistence || sp.SessionName == nil || *sp.SessionName != "X-Tracecell-Session" {
		t.Errorf("the last rule's session persistence %+v, want type Header on X-Tracecell-Session", sp)
	}
	if len(last.BackendRefs) != 1 {
		t.Fatalf("last rule backends %+v", last.BackendRefs)
	}
	headless := get[*corev1.Service](t, o, "Service", string(last.BackendRefs[0].Name))
	if headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("the last rule's backend %s is not the cells' headless Service", headless.Name)
	}
	if last.Retry == nil || len(last.Retry.Codes) != 1 || last.Retry.Codes[0] != 503 || last.Retry.Attempts == nil || *last.Retry.Attempts < 1 {
		t.Errorf("retry %+v, want a draining cell's 503 retried", last.Retry)
	}
}

// The plain route of deploy/gateway is the chart's rendering with the
// gateway on and no proxy, for a Gateway named tracecell-gateway.
func TestPlainRouteMatchesChart(t *testing.T) {
	plain := loadFile(t, "../gateway/httproute.yaml")
	manifest, _, err := render(t, "tracecell", "proxy: {type: none}\ngateway: {enabled: true, parentRefs: [{name: tracecell-gateway}]}\n")
	if err != nil {
		t.Fatal(err)
	}
	got := decode(t, "the chart (gateway)", manifest)
	pr := get[*gatewayv1.HTTPRoute](t, plain, "HTTPRoute", "tracecell")
	gr := get[*gatewayv1.HTTPRoute](t, got, "HTTPRoute", "tracecell")
	if d := diff(gr.Spec, pr.Spec); d != "" {
		t.Errorf("the route: %s", d)
	}
	// The plain file's Services with the cells of deploy/k8s/cells.yaml.
	plain[key("Service", "tracecell")] = get[*corev1.Service](t, loadFile(t, "../k8s/cells.yaml"), "Service", "tracecell")
	checkRoute(t, plain, pr, 3)
	for i := 0; i < 3; i++ {
		n := fmt.Sprintf("tracecell-%d", i)
		p, g := get[*corev1.Service](t, plain, "Service", n), get[*corev1.Service](t, got, "Service", n)
		if d := diff(g.Spec.Ports, p.Spec.Ports); d != "" {
			t.Errorf("Service %s ports: %s", n, d)
		}
		for k, v := range p.Spec.Selector {
			if g.Spec.Selector[k] != v {
				t.Errorf("Service %s selects %s=%q in the plain file, %q in the chart", n, k, v, g.Spec.Selector[k])
			}
		}
	}
}

// Helm's lint (`helm lint`, with values.schema.json) finds nothing to warn
// about, with the defaults and with every value set.
func TestLint(t *testing.T) {
	sets := map[string]string{"defaults": ""}
	for _, vs := range valueSets {
		sets[vs.name] = vs.values
	}
	for name, values := range sets {
		t.Run(name, func(t *testing.T) {
			vals := map[string]any{}
			if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
				t.Fatal(err)
			}
			l := lint.AllWithKubeVersion(chartDir, vals, "tools", kubeVersion)
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("lint: %s", m)
				} else {
					t.Logf("lint: %s", m)
				}
			}
		})
	}
}

// Bad values are refused at rendering with a sentence naming the value.
func TestBadValues(t *testing.T) {
	for _, tc := range []struct{ name, release, values, want string }{
		{"drain not below grace", "tracecell", "cells: {drainTimeout: 90s, terminationGracePeriodSeconds: 60}", "cells.terminationGracePeriodSeconds (60) must be above cells drainTimeout (90s = 90s)"},
		{"drain in hours and minutes", "tracecell", "cells: {drainTimeout: 1h1m, terminationGracePeriodSeconds: 3600}", "(1h1m = 3660s)"},
		{"vllm drain not below grace", "tracecell", "vllm: {enabled: true, terminationGracePeriodSeconds: 50}", "vllm.terminationGracePeriodSeconds (50) must be above vllm drainTimeout (50s = 50s)"},
		{"unknown proxy", "tracecell", "proxy: {type: envoy}", "/proxy/type"},
		{"misspelled key", "tracecell", "cells: {replica: 3}", "replica"},
		{"bad duration", "tracecell", "cells: {drainTimeout: 50}", "drainTimeout"},
		{"unknown policy key", "tracecell", "policy: {allow_exce: [git]}", "allow_exce"},
		{"route without a gateway", "tracecell", "gateway: {enabled: true}", "gateway.parentRefs is empty"},
		{"release name with a dot", "a.tracecell", "", `the release name "a.tracecell" has a dot`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := render(t, tc.release, tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// The schema's policy keys are tracecell's policy file keys (config.Config's
// yaml tags): a key tracecell lacks would pass the schema and stop every
// cell at start-up.
func TestSchemaPolicyKeys(t *testing.T) {
	src, err := os.ReadFile("../../config/config.go")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, m := range regexp.MustCompile("yaml:\"([a-z_]+)\"").FindAllStringSubmatch(string(src), -1) {
		known[m[1]] = true
	}
	b, err := os.ReadFile(chartDir + "/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Policy struct {
				Properties map[string]any `json:"properties"`
			} `json:"policy"`
		} `json:"properties"`
	}
	if err := yaml.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range schema.Properties.Policy.Properties {
		keys = append(keys, k)
		if !known[k] {
			t.Errorf("values.schema.json allows policy key %q, which config/config.go does not have", k)
		}
	}
	sort.Strings(keys)
	if len(keys) < 10 {
		t.Fatalf("the schema's policy keys %v: too few, the schema's shape changed?", keys)
	}
}

// The tracecell flags the chart passes exist (when TRACECELL_BIN names a
// built binary, as in deploy's test): every rendering's serve and mcp
// arguments against the command's --help.
func TestFlagsExist(t *testing.T) {
	bin := os.Getenv("TRACECELL_BIN")
	if bin == "" {
		t.Skip("TRACECELL_BIN is not set: the flags are not checked against a binary")
	}
	sets := []string{"", "vllm: {enabled: true}\nagentSandbox: {enabled: true}\npolicy: {net: deny}\ncells: {preload: [numpy]}\n"}
	for _, vs := range valueSets {
		sets = append(sets, vs.values)
	}
	help := map[string]string{}
	for _, values := range sets {
		manifest, _, err := render(t, "tracecell", values)
		if err != nil {
			t.Fatal(err)
		}
		for k, o := range decode(t, "flags", manifest) {
			var spec *corev1.PodSpec
			switch v := o.(type) {
			case *appsv1.StatefulSet:
				spec = &v.Spec.Template.Spec
			case *appsv1.Deployment:
				spec = &v.Spec.Template.Spec
			case *k8scheck.SandboxTemplate:
				spec = &v.Spec.PodTemplate.Spec
			case *k8scheck.SandboxWarmPool:
				spec = &v.Spec.PodTemplate.Spec
			default:
				continue
			}
			for _, c := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
				if c.Name != "tracecell" {
					continue
				}
				cmd := c.Args[0]
				if _, ok := help[cmd]; !ok {
					out, err := exec.Command(bin, cmd, "--help").CombinedOutput()
					if err != nil {
						t.Fatalf("%s %s --help: %v\n%s", bin, cmd, err, out)
					}
					help[cmd] = string(out)
				}
				for _, a := range c.Args[1:] {
					name, _, _ := strings.Cut(a, "=")
					h := help[cmd]
					if !strings.Contains(h, name+" ") && !strings.Contains(h, name+"=") && !strings.Contains(h, name+"\t") {
						t.Errorf("%s: tracecell %s has no flag %s", k, cmd, name)
					}
				}
			}
		}
	}
	if len(help) != 2 {
		t.Errorf("checked the flags of %d commands, want serve and mcp", len(help))
	}
}
