// Package helmtest validates the Helm chart of deploy/helm/tracecell and the
// Gateway API route of deploy/gateway offline, with Helm's own Go packages
// (lint, and an install with DryRun and ClientOnly, as `helm template`
// does) and the k8s.io/api and sigs.k8s.io/gateway-api types. It is a
// module of its own so that Helm's dependencies stay out of tracecell's
// go.mod; `make unit` runs it (cd deploy/helmtest && go test ./...).
package helmtest
