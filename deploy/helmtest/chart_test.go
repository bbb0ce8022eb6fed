package helmtest

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/tracecell/tracecell/deploy/k8scheck"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psapi "k8s.io/pod-security-admission/api"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = "../helm/tracecell"

// The oldest Kubernetes the chart claims (Chart.yaml kubeVersion): native
// sidecars are on by default from 1.29.
var kubeVersion = &chartutil.KubeVersion{Version: "v1.29.0", Major: "1", Minor: "29"}

// objects are the decoded documents of a rendering or a file, by kind/name.
type objects map[string]any

func key(kind, name string) string { return kind + "/" + name }

// decode splits a multi-document YAML stream and decodes every document
// strictly into the type of its kind: an unknown or misspelled field, or a
// kind this test has no type for, is an error.
func decode(t *testing.T, what, stream string) objects {
	t.Helper()
	out := objects{}
	for i, part := range regexp.MustCompile(`(?m)^---\s*$`).Split(stream, -1) {
		if strings.TrimSpace(k8scheck.StripComments(part)) == "" {
			continue
		}
		var tm struct {
			metav1.TypeMeta `json:",inline"`
			Metadata        struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(part), &tm); err != nil {
			t.Fatalf("%s document %d: %v\n%s", what, i, err, part)
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
		case "gateway.networking.k8s.io/v1 HTTPRoute":
			obj = &gatewayv1.HTTPRoute{}
		case "extensions.agents.x-k8s.io/v1alpha1 SandboxTemplate":
			obj = &k8scheck.SandboxTemplate{}
		case "extensions.agents.x-k8s.io/v1alpha1 SandboxWarmPool":
			obj = &k8scheck.SandboxWarmPool{}
		default:
			t.Fatalf("%s document %d: no type for %q %q; add it to this test", what, i, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(part), obj); err != nil {
			t.Fatalf("%s document %d (%s %s): %v", what, i, tm.Kind, tm.Metadata.Name, err)
		}
		k := key(tm.Kind, tm.Metadata.Name)
		if _, dup := out[k]; dup {
			t.Fatalf("%s: two documents are %s", what, k)
		}
		out[k] = obj
	}
	return out
}

func (o objects) kinds() []string {
	var ks []string
	for k := range o {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func get[T any](t *testing.T, o objects, kind, name string) T {
	t.Helper()
	v, ok := o[key(kind, name)].(T)
	if !ok {
		t.Fatalf("no %s %q among %v", kind, name, o.kinds())
	}
	return v
}

// loadFile decodes a plain manifest of deploy/.
func loadFile(t *testing.T, path string) objects {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, path, string(b))
}

// render installs the chart as `helm template` does (DryRun, ClientOnly:
// no cluster), with the values given as YAML; it returns the manifest and
// the NOTES.txt text, or the error.
func render(t *testing.T, release, values string) (string, string, error) {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading %s: %v", chartDir, err)
	}
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
		t.Fatalf("the test's values: %v", err)
	}
	cfg := &action.Configuration{Log: func(f string, a ...any) { t.Logf(f, a...) }}
	in := action.NewInstall(cfg)
	in.DryRun, in.ClientOnly, in.Replace = true, true, true
	in.ReleaseName, in.Namespace = release, "tools"
	in.KubeVersion = kubeVersion
	rel, err := in.Run(chrt, vals)
	if err != nil {
		return "", "", err
	}
	return rel.Manifest, rel.Info.Notes, nil
}

// diff names the first difference of two values as YAML, or "".
func diff(a, b any) string {
	if reflect.DeepEqual(a, b) {
		return ""
	}
	ya, _ := yaml.Marshal(a)
	yb, _ := yaml.Marshal(b)
	la, lb := strings.Split(string(ya), "\n"), strings.Split(string(yb), "\n")
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: chart %q, plain %q\nchart:\n%s\nplain:\n%s", i+1, x, y, ya, yb)
		}
	}
	return "equal as YAML, different in Go (nil against empty?)"
}

// samePod compares a rendered pod template with a plain manifest's, labels
// and annotations aside (the chart adds the release's labels).
func samePod(t *testing.T, what string, chart, plain corev1.PodTemplateSpec) {
	t.Helper()
	if d := diff(chart.Spec, plain.Spec); d != "" {
		t.Errorf("%s: the chart's pod differs from the plain manifest's: %s", what, d)
	}
	for k, v := range plain.Labels {
		if chart.Labels[k] != v {
			t.Errorf("%s: pod label %s=%q, plain manifest %q", what, k, chart.Labels[k], v)
		}
	}
}

// haproxyNames rewrites the namespace of the chart's full cell names to
// the plain manifest's ("default").
func haproxyNames(cfg, namespace string) string {
	return strings.ReplaceAll(cfg, "."+namespace+".svc.cluster.local:", ".default.svc.cluster.local:")
}

// The default values render exactly the objects of deploy/k8s/cells.yaml
// and haproxy.yaml (the release named tracecell, as the plain manifests'
// objects are): the same pods (security contexts, probes, ports, args,
// volumes), the same Services' specs, the same HAProxy configuration.
func TestDefaultsMatchPlainManifests(t *testing.T) {
	manifest, notes, err := render(t, "tracecell", "")
	if err != nil {
		t.Fatalf("rendering the defaults: %v", err)
	}
	got := decode(t, "the chart (defaults)", manifest)
	plain := loadFile(t, "../k8s/cells.yaml")
	for k, v := range loadFile(t, "../k8s/haproxy.yaml") {
		plain[k] = v
	}
	if g, p := got.kinds(), plain.kinds(); !reflect.DeepEqual(g, p) {
		t.Fatalf("the chart renders %v, the plain manifests hold %v", g, p)
	}
	for _, k := range plain.kinds() {
		t.Run(k, func(t *testing.T) {
			switch p := plain[k].(type) {
			case *appsv1.StatefulSet:
				c := got[k].(*appsv1.StatefulSet)
				samePod(t, k, c.Spec.Template, p.Spec.Template)
				if d := diff(c.Spec.VolumeClaimTemplates, p.Spec.VolumeClaimTemplates); d != "" {
					t.Errorf("volume claims: %s", d)
				}
				if *c.Spec.Replicas != *p.Spec.Replicas || c.Spec.ServiceName != p.Spec.ServiceName || c.Spec.PodManagementPolicy != p.Spec.PodManagementPolicy {
					t.Errorf("replicas/service/policy %d %s %s, plain %d %s %s", *c.Spec.Replicas, c.Spec.ServiceName, c.Spec.PodManagementPolicy, *p.Spec.Replicas, p.Spec.ServiceName, p.Spec.PodManagementPolicy)
				}
			case *appsv1.Deployment:
				c := got[k].(*appsv1.Deployment)
				samePod(t, k, c.Spec.Template, p.Spec.Template)
				if *c.Spec.Replicas != *p.Spec.Replicas {
					t.Errorf("replicas %d, plain %d", *c.Spec.Replicas, *p.Spec.Replicas)
				}
			case *corev1.Service:
				c := got[k].(*corev1.Service)
				if d := diff(c.Spec.Ports, p.Spec.Ports); d != "" {
					t.Errorf("ports: %s", d)
				}
				if c.Spec.ClusterIP != p.Spec.ClusterIP || c.Spec.PublishNotReadyAddresses != p.Spec.PublishNotReadyAddresses {
					t.Errorf("clusterIP %q publishNotReady %v, plain %q %v", c.Spec.ClusterIP, c.Spec.PublishNotReadyAddresses, p.Spec.ClusterIP, p.Spec.PublishNotReadyAddresses)
				}
				for sk, sv := range p.Spec.Selector {
					if c.Spec.Selector[sk] != sv {
						t.Errorf("selector %s=%q, plain %q", sk, c.Spec.Selector[sk], sv)
					}
				}
			case *policyv1.PodDisruptionBudget:
				c := got[k].(*policyv1.PodDisruptionBudget)
				if d := diff(c.Spec.MaxUnavailable, p.Spec.MaxUnavailable); d != "" {
					t.Errorf("maxUnavailable: %s", d)
				}
			case *corev1.ConfigMap:
				c := got[k].(*corev1.ConfigMap)
				for f, text := range p.Data {
					if g := haproxyNames(c.Data[f], "tools"); g != text {
						t.Errorf("%s differs from the plain manifest's (the namespace aside):\n%s\n--- plain:\n%s", f, g, text)
					}
				}
				if !k8scheck.CheckProxy(t, "haproxy", c.Data["haproxy.cfg"], func(f string) []string { return []string{"-c", "-f", f} }) {
					t.Logf("%s is not installed (Debian: apt-get install %s): its syntax check is skipped", "haproxy", "haproxy")
				}
			}
		})
	}
	checkPods(t, got)
	for _, want := range []string{"kubectl -n tools create secret generic tracecell-token", "tracecell-0 .. tracecell-2", "http://tracecell-proxy.tools.svc:8080"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, notes)
		}
	}
}

// With the vLLM sidecar on, its Deployment is deploy/k8s/vllm-sidecar.yaml's.
func TestVLLMSidecarMatchesPlainManifest(t *testing.T) {
	manifest, _, err := render(t, "tracecell", "vllm: {enabled: true}\nproxy: {type: none}\n")
	if err != nil {
		t.Fatal(err)
	}
	got := decode(t, "the chart (vllm)", manifest)
	plain := loadFile(t, "../k8s/vllm-sidecar.yaml")
	p := get[*appsv1.Deployment](t, plain, "Deployment", "vllm-gpt-oss")
	c := get[*appsv1.Deployment](t, got, "Deployment", "tracecell-vllm")
	samePod(t, "vllm", corev1.PodTemplateSpec{Spec: c.Spec.Template.Spec}, corev1.PodTemplateSpec{Spec: p.Spec.Template.Spec})
	if _, ok := got[key("Deployment", "tracecell-haproxy")]; ok {
		t.Error("proxy.type none still renders HAProxy")
	}
	checkPods(t, got)
}

// checkPods: every pod meets Pod Security "restricted" (vLLM's, whose
// image runs as root, "baseline", with its tracecell sidecar alone
// restricted), adds no capability, and runs tracecell with a drain
// shorter than its grace period.
func checkPods(t *testing.T, o objects) {
	t.Helper()
	for _, k := range o.kinds() {
		var tmpl corev1.PodTemplateSpec
		switch v := o[k].(type) {
		case *appsv1.StatefulSet:
			tmpl = v.Spec.Template
		case *appsv1.Deployment:
			tmpl = v.Spec.Template
		case *k8scheck.SandboxTemplate:
			tmpl = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: v.Spec.PodTemplate.Metadata.Labels}, Spec: v.Spec.PodTemplate.Spec}
		case *k8scheck.SandboxWarmPool:
			tmpl = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: v.Spec.PodTemplate.Metadata.Labels}, Spec: v.Spec.PodTemplate.Spec}
		default:
			continue
		}
		level := psapi.LevelRestricted
		if strings.HasSuffix(k, "-vllm") {
			level = psapi.LevelBaseline
			side := corev1.PodSpec{Containers: []corev1.Container{tmpl.Spec.InitContainers[0]}}
			side.Containers[0].RestartPolicy = nil
			if why := k8scheck.PodSecurity(t, psapi.LevelRestricted, tmpl.ObjectMeta, side); why != nil {
				t.Errorf("%s: the tracecell sidecar fails Pod Security restricted: %v", k, why)
			}
		}
		if why := k8scheck.PodSecurity(t, level, tmpl.ObjectMeta, tmpl.Spec); why != nil {
			t.Errorf("%s fails Pod Security %s: %v", k, level, why)
		}
		for _, c := range append(append([]corev1.Container(nil), tmpl.Spec.InitContainers...), tmpl.Spec.Containers...) {
			if c.SecurityContext != nil && c.SecurityContext.Capabilities != nil && len(c.SecurityContext.Capabilities.Add) > 0 {
				t.Errorf("%s: container %s adds capabilities %v", k, c.Name, c.SecurityContext.Capabilities.Add)
			}
		}
	}
}

// With agentSandbox on, the SandboxTemplate and SandboxWarmPool hold the
// pod of deploy/k8s/agent-sandbox.yaml, the same in both.
func TestAgentSandboxMatchesPlainManifest(t *testing.T) {
	manifest, _, err := render(t, "tracecell", "agentSandbox: {enabled: true}\nproxy: {type: none}\n")
	if err != nil {
		t.Fatal(err)
	}
	got := decode(t, "the chart (agent-sandbox)", manifest)
	plain := loadFile(t, "../k8s/agent-sandbox.yaml")
	pt := get[*k8scheck.SandboxTemplate](t, plain, "SandboxTemplate", "tracecell")
	gt := get[*k8scheck.SandboxTemplate](t, got, "SandboxTemplate", "tracecell")
	pp := get[*k8scheck.SandboxWarmPool](t, plain, "SandboxWarmPool", "tracecell")
	gp := get[*k8scheck.SandboxWarmPool](t, got, "SandboxWarmPool", "tracecell")
	if d := diff(gt.Spec.PodTemplate.Spec, pt.Spec.PodTemplate.Spec); d != "" {
		t.Errorf("the template's pod: %s", d)
	}
	if d := diff(gp.Spec.PodTemplate, gt.Spec.PodTemplate); d != "" {
		t.Errorf("the warm pool's pod differs from the template's: %s", d)
	}
	if d := diff(gt.Spec.NetworkPolicy, pt.Spec.NetworkPolicy); d != "" {
		t.Errorf("the template's network policy: %s", d)
	}
	if gp.Spec.Replicas != pp.Spec.Replicas {
		t.Errorf("warm pool replicas %d, plain %d", gp.Spec.Replicas, pp.Spec.Replicas)
	}
	checkPods(t, got)
}
