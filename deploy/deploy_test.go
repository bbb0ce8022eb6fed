// Package deploy holds the Kubernetes manifests and proxy configurations
// of tracecell's deployment shapes (README: "Beyond one machine"); this
// test validates them offline: every document strictly decoded into the
// k8s.io/api type of its kind (an unknown or misspelled field fails), the
// pods checked by the Pod Security admission's own code, the cross
// references (probes, drain timeout against the grace period, the
// sidecar's port, the proxies' cell names) checked, and the proxy
// configurations checked by haproxy -c and nginx -t when those are
// installed (Debian: apt-get install haproxy nginx).
package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tracecell/tracecell/deploy/k8scheck"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psapi "k8s.io/pod-security-admission/api"
	"sigs.k8s.io/yaml"
)

type doc struct {
	file string
	obj  any
}

// load decodes every document of deploy/k8s strictly.
func load(t *testing.T) []doc {
	t.Helper()
	files, err := filepath.Glob("k8s/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("manifests: %v %v", files, err)
	}
	var out []doc
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, part := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			if strings.TrimSpace(k8scheck.StripComments(part)) == "" {
				continue
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(part), &tm); err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "v1 Service":
				obj = &corev1.Service{}
			case "v1 ConfigMap":
				obj = &corev1.ConfigMap{}
			case "apps/v1 StatefulSet":
				obj = &appsv1.StatefulSet{}
			case "apps/v1 Deployment":
				obj = &appsv1.Deployment{}
			case "policy/v1 PodDisruptionBudget":
				obj = &policyv1.PodDisruptionBudget{}
			case "extensions.agents.x-k8s.io/v1alpha1 SandboxTemplate":
				obj = &k8scheck.SandboxTemplate{}
			case "extensions.agents.x-k8s.io/v1alpha1 SandboxWarmPool":
				obj = &k8scheck.SandboxWarmPool{}
			default:
				t.Fatalf("%s document %d: no type for %s %s; add it to this test", f, i, tm.APIVersion, tm.Kind)
			}
			if err := yaml.UnmarshalStrict([]byte(part), obj); err != nil {
				t.Fatalf("%s document %d (%s): %v", f, i, tm.Kind, err)
			}
			out = append(out, doc{f, obj})
		}
	}
	return out
}

// tracecellContainers are the containers running the tracecell image.
func tracecellContainers(spec corev1.PodSpec) []corev1.Container {
	var out []corev1.Container
	for _, c := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
		if strings.HasPrefix(c.Image, "tracecell:") {
			out = append(out, c)
		}
	}
	return out
}

func TestManifests(t *testing.T) {
	docs := load(t)
	var sts *appsv1.StatefulSet
	var headless *corev1.Service
	var haproxyCfg string
	pods := 0
	for _, d := range docs {
		var meta metav1.ObjectMeta
		var spec *corev1.PodSpec
		switch o := d.obj.(type) {
		case *appsv1.StatefulSet:
			sts, meta, spec = o, o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec
		case *appsv1.Deployment:
			meta, spec = o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec
		case *k8scheck.SandboxTemplate:
			meta, spec = metav1.ObjectMeta{Labels: o.Spec.PodTemplate.Metadata.Labels}, &o.Spec.PodTemplate.Spec
		case *k8scheck.SandboxWarmPool:
			meta, spec = metav1.ObjectMeta{Labels: o.Spec.PodTemplate.Metadata.Labels}, &o.Spec.PodTemplate.Spec
		case *corev1.Service:
			if o.Spec.ClusterIP == corev1.ClusterIPNone {
				headless = o
			}
		case *corev1.ConfigMap:
			if c, ok := o.Data["haproxy.cfg"]; ok {
				haproxyCfg = c
			}
		}
		if spec == nil {
			continue
		}
		pods++
		name := fmt.Sprintf("%s %s %T", d.file, meta.Labels["app.kubernetes.io/name"], d.obj)
		t.Run(name, func(t *testing.T) {
			tcs := tracecellContainers(*spec)
			// Pod Security: the pod is restricted unless it runs vLLM's
			// root image (then baseline, and its tracecell sidecar alone
			// restricted).
			level := psapi.LevelRestricted
			if strings.Contains(d.file, "vllm") {
				level = psapi.LevelBaseline
				for _, c := range tcs {
					side := corev1.PodSpec{Containers: []corev1.Container{c}}
					side.Containers[0].RestartPolicy = nil
					if why := k8scheck.PodSecurity(t, psapi.LevelRestricted, meta, side); why != nil {
						t.Errorf("the tracecell sidecar fails Pod Security restricted: %v", why)
					}
				}
			}
			if why := k8scheck.PodSecurity(t, level, meta, *spec); why != nil {
				t.Errorf("fails Pod Security %s: %v", level, why)
			}
			for _, c := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
				if c.SecurityContext != nil && c.SecurityContext.Capabilities != nil && len(c.SecurityContext.Capabilities.Add) > 0 {
					t.Errorf("container %s adds capabilities %v: tracecell needs none (it traces only its own children)", c.Name, c.SecurityContext.Capabilities.Add)
				}
			}
			for _, c := range tcs {
				d, ok := k8scheck.FlagValue(c.Args, "drain-timeout")
				if !ok {
					t.Errorf("container %s: no --drain-timeout: SIGTERM would end every session at once", c.Name)
					continue
				}
				dt, err := time.ParseDuration(d)
				if err != nil {
					t.Fatalf("--drain-timeout=%s: %v", d, err)
				}
				grace := 30 * time.Second // the Kubernetes default
				if g := spec.TerminationGracePeriodSeconds; g != nil {
					grace = time.Duration(*g) * time.Second
				}
				if grace <= dt {
					t.Errorf("container %s: terminationGracePeriodSeconds %v is not above --drain-timeout %v: SIGKILL would cut the drain", c.Name, grace, dt)
				}
			}
		})
	}
	if pods < 5 || sts == nil || headless == nil || haproxyCfg == "" {
		t.Fatalf("expected the cells' StatefulSet, its headless Service, the HAProxy ConfigMap and 3 pod templates; got %d pods", pods)
	}
	t.Run("cells", func(t *testing.T) {
		c := tracecellContainers(sts.Spec.Template.Spec)
		if len(c) != 1 || c[0].Args[0] != "serve" {
			t.Fatalf("the StatefulSet runs %v", c)
		}
		if p := c[0].ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
			t.Errorf("readiness probe %+v, want GET /readyz", p)
		}
		if p := c[0].LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
			t.Errorf("liveness probe %+v, want GET /healthz (alive while draining)", p)
		}
		if _, ok := k8scheck.FlagValue(c[0].Args, "cell-id"); ok {
			t.Error("--cell-id is set: each pod must take its own pod name (the default)")
		}
		if sts.Spec.ServiceName != headless.Name || !headless.Spec.PublishNotReadyAddresses {
			t.Errorf("the StatefulSet's service %q must be the headless %q, publishing not-ready (draining) pods", sts.Spec.ServiceName, headless.Name)
		}
		for k, v := range headless.Spec.Selector {
			if sts.Spec.Template.Labels[k] != v {
				t.Errorf("the Service selects %s=%s, not on the pods", k, v)
			}
		}
		if len(sts.Spec.VolumeClaimTemplates) == 0 {
			t.Error("no volume claim: a restarted cell would forget which sessions it lost")
		}
		// The proxy names every cell in full (HAProxy's resolvers apply no
		// search domains), and routes each one's minted ids to it.
		for i := 0; i < int(*sts.Spec.Replicas); i++ {
			cell := fmt.Sprintf("%s-%d", sts.Name, i)
			for _, want := range []string{"server " + cell + " " + cell + "." + headless.Name + ".default.svc.cluster.local:", "use-server " + cell + " if { path_beg /v1/sessions/" + cell + ". }"} {
				if !strings.Contains(haproxyCfg, want) {
					t.Errorf("haproxy.cfg lacks %q", want)
				}
			}
		}
	})
	t.Run("vllm sidecar", func(t *testing.T) {
		for _, d := range docs {
			dep, ok := d.obj.(*appsv1.Deployment)
			if !ok || !strings.Contains(d.file, "vllm") {
				continue
			}
			spec := dep.Spec.Template.Spec
			if len(spec.InitContainers) != 1 {
				t.Fatalf("want the tracecell sidecar as the one init container, got %d", len(spec.InitContainers))
			}
			side := spec.InitContainers[0]
			if side.RestartPolicy == nil || *side.RestartPolicy != corev1.ContainerRestartPolicyAlways || side.StartupProbe == nil {
				t.Errorf("the sidecar must be native (restartPolicy: Always) with a startupProbe gating vLLM's start")
			}
			listen, _ := k8scheck.FlagValue(side.Args, "listen")
			found := false
			for i, a := range spec.Containers[0].Args {
				if a == "--tool-server" && i+1 < len(spec.Containers[0].Args) && spec.Containers[0].Args[i+1] == listen {
					found = true
				}
			}
			if !found || listen == "" {
				t.Errorf("vLLM's --tool-server does not name the sidecar's --listen %q: %v", listen, spec.Containers[0].Args)
			}
			if probe := strings.Join(side.StartupProbe.Exec.Command, " "); !strings.Contains(probe, listen+"/readyz") {
				t.Errorf("the startup probe %q does not ask the sidecar's /readyz", probe)
			}
			return
		}
		t.Fatal("no vLLM Deployment")
	})
	// The tracecell flags of the manifests exist (when the binary is built).
	if bin := os.Getenv("TRACECELL_BIN"); bin != "" {
		for _, d := range docs {
			var spec *corev1.PodSpec
			switch o := d.obj.(type) {
			case *appsv1.StatefulSet:
				spec = &o.Spec.Template.Spec
			case *appsv1.Deployment:
				spec = &o.Spec.Template.Spec
			case *k8scheck.SandboxTemplate:
				spec = &o.Spec.PodTemplate.Spec
			case *k8scheck.SandboxWarmPool:
				spec = &o.Spec.PodTemplate.Spec
			}
			if spec == nil {
				continue
			}
			for _, c := range tracecellContainers(*spec) {
				help, err := exec.Command(bin, c.Args[0], "--help").CombinedOutput()
				if err != nil {
					t.Fatalf("%s %s --help: %v", bin, c.Args[0], err)
				}
				for _, a := range c.Args[1:] {
					name, _, _ := strings.Cut(a, "=")
					if !strings.Contains(string(help), name+" ") && !strings.Contains(string(help), name+"=") && !strings.Contains(string(help), name+"\t") {
						t.Errorf("%s: tracecell %s has no flag %s", d.file, c.Args[0], name)
					}
				}
			}
		}
	}
	t.Run("haproxy -c", func(t *testing.T) {
		if !k8scheck.CheckProxy(t, "haproxy", haproxyCfg, func(f string) []string { return []string{"-c", "-f", f} }) {
			t.Skipf("%s is not installed (Debian: apt-get install %s): its syntax check is skipped", "haproxy", "haproxy")
		}
	})
}

// TestProxyConfigs: the standalone configurations (used by make scale).
func TestProxyConfigs(t *testing.T) {
	for _, tc := range []struct {
		prog, file string
		args       func(string) []string
	}{
		{"haproxy", "proxy/haproxy.cfg", func(f string) []string { return []string{"-c", "-f", f} }},
		{"nginx", "proxy/nginx.conf", func(f string) []string { return []string{"-t", "-q", "-c", f} }},
	} {
		t.Run(tc.prog, func(t *testing.T) {
			b, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range []string{"X-Tracecell-Session", "x-session-id"} {
				if !strings.Contains(strings.ToLower(string(b)), strings.ToLower(strings.ReplaceAll(h, "-", "_"))) &&
					!strings.Contains(strings.ToLower(string(b)), strings.ToLower(h)) {
					t.Errorf("%s does not route by %s", tc.file, h)
				}
			}
			if !k8scheck.CheckProxy(t, tc.prog, string(b), tc.args) {
				t.Skipf("%s is not installed (Debian: apt-get install %s): its syntax check is skipped", tc.prog, tc.prog)
			}
		})
	}
}

// The warm pool's pods are the template's (the v1alpha1 warm pool carries
// its own copy): a drift between them would make claimed cells differ
// from the template a reader looks at.
func TestSandboxPoolMatchesTemplate(t *testing.T) {
	var tmpl *k8scheck.SandboxTemplate
	var pool *k8scheck.SandboxWarmPool
	for _, d := range load(t) {
		switch o := d.obj.(type) {
		case *k8scheck.SandboxTemplate:
			tmpl = o
		case *k8scheck.SandboxWarmPool:
			pool = o
		}
	}
	if tmpl == nil || pool == nil {
		t.Fatal("no SandboxTemplate or SandboxWarmPool in deploy/k8s")
	}
	a, _ := yaml.Marshal(tmpl.Spec.PodTemplate)
	b, _ := yaml.Marshal(pool.Spec.PodTemplate)
	if !bytes.Equal(a, b) {
		t.Fatalf("the warm pool's pod differs from the template's:\n%s\n---\n%s", a, b)
	}
	if tmpl.Spec.NetworkPolicy == nil || len(tmpl.Spec.NetworkPolicy.Ingress) == 0 {
		t.Error("no ingress rule: the template's default-deny NetworkPolicy would block the API port")
	}
}
