// Package k8scheck holds what the offline checks of tracecell's Kubernetes
// manifests share: the plain manifests' test (deploy) and the Helm chart's
// (deploy/helmtest, a module of its own that imports this one through a
// replace directive). It is test support; nothing in the tracecell binary
// imports it.
package k8scheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// The agent-sandbox types, mirrored field for field from
// sigs.k8s.io/agent-sandbox (api/v1alpha1/sandbox_types.go: PodTemplate,
// PodMetadata; extensions/api/v1alpha1/sandboxtemplate_types.go and
// sandboxwarmpool_types.go), whose module the Go module proxy does not
// serve: the wrappers are checked against this mirror, the pod spec inside
// against k8s.io/api itself.

// SandboxPodTemplate is agent-sandbox's PodTemplate.
type SandboxPodTemplate struct {
	Spec     corev1.PodSpec `json:"spec"`
	Metadata struct {
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
}

// SandboxTemplate is agent-sandbox's extensions SandboxTemplate.
type SandboxTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		PodTemplate          SandboxPodTemplate `json:"podTemplate"`
		VolumeClaimTemplates []struct {
			Metadata struct {
				Name        string            `json:"name,omitempty"`
				Labels      map[string]string `json:"labels,omitempty"`
				Annotations map[string]string `json:"annotations,omitempty"`
			} `json:"metadata"`
			Spec corev1.PersistentVolumeClaimSpec `json:"spec"`
		} `json:"volumeClaimTemplates,omitempty"`
		NetworkPolicy *struct {
			Ingress []networkingv1.NetworkPolicyIngressRule `json:"ingress,omitempty"`
			Egress  []networkingv1.NetworkPolicyEgressRule  `json:"egress,omitempty"`
		} `json:"networkPolicy,omitempty"`
	} `json:"spec"`
}

// SandboxWarmPool is agent-sandbox's extensions SandboxWarmPool.
type SandboxWarmPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Replicas    int32                     `json:"replicas"`
		PodTemplate SandboxPodTemplate        `json:"podTemplate"`
		Strategy    appsv1.DeploymentStrategy `json:"strategy"`
	} `json:"spec"`
}

// StripComments drops the YAML comment lines of s.
func StripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// PodSecurity returns why spec fails the Pod Security level (none:
// allowed), as the admission controller's own checks say.
func PodSecurity(tb testing.TB, level psapi.Level, meta metav1.ObjectMeta, spec corev1.PodSpec) []string {
	tb.Helper()
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	res := policy.AggregateCheckResults(ev.EvaluatePod(psapi.LevelVersion{Level: level, Version: psapi.LatestVersion()}, &meta, &spec))
	if res.Allowed {
		return nil
	}
	return res.ForbiddenReasons
}

// FlagValue is the value of --name=VALUE in args.
func FlagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// CheckProxy runs the proxy's own configuration check (haproxy -c, nginx
// -t: args gives its arguments for the file) on text. It returns false,
// having checked nothing, when prog is not installed (Debian: apt-get
// install haproxy nginx; make scale installs them).
func CheckProxy(tb testing.TB, prog, text string, args func(file string) []string) bool {
	tb.Helper()
	path, err := exec.LookPath(prog)
	if err != nil {
		for _, d := range []string{"/usr/sbin/", "/sbin/"} {
			if _, err := os.Stat(d + prog); err == nil {
				path = d + prog
			}
		}
	}
	if path == "" {
		return false
	}
	f := filepath.Join(tb.TempDir(), prog+".conf")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(path, args(f)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		tb.Fatalf("%s %v: %v\n%s\n%s", prog, args(f), err, out.String(), text)
	}
	return true
}
