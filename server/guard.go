package server

import (
	"net"
	"net/http"
	"strings"
)

// browserGuard refuses what a web page in a browser on this host could make
// the browser send to a loopback listener, which has no token to stop it:
//
//   - DNS rebinding: the page's own host name re-resolves to 127.0.0.1, so
//     its requests are same-origin and it reads the answers (run code, read
//     host files through it, download sandboxes). The Host header then names
//     the attacker's domain: on a loopback connection only a loopback Host
//     (localhost, 127.0.0.0/8, ::1) is served, as the MCP go-sdk does for
//     /sse and /mcp.
//   - cross-site requests a browser sends without a CORS preflight (a POST
//     with Content-Type text/plain runs code blind): a state-changing
//     request whose Sec-Fetch-Site or Origin says another site is refused
//     (net/http's CrossOriginProtection).
//
// Clients that are not browsers (curl, vLLM, SDKs) send a loopback Host and
// no Origin, and pass. A Unix socket has no loopback address to check and
// browsers cannot reach it; the cross-origin check still applies.
func browserGuard(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if onLoopbackTCP(r) && !loopbackHost(r.Host) {
			writeError(w, errf(403, "forbidden_host", "Host %q is not a loopback name: this server listens on loopback and answers only requests addressed to localhost, 127.0.0.1 or [::1] (a protection against DNS rebinding)", r.Host))
			return
		}
		if err := cop.Check(r); err != nil {
			writeError(w, errf(403, "cross_origin", "cross-origin request refused: a web page may not drive this server (%v)", err))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// onLoopbackTCP reports whether the request came in on a loopback TCP address.
func onLoopbackTCP(r *http.Request) bool {
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || la == nil || la.Network() != "tcp" {
		return false
	}
	host, _, err := net.SplitHostPort(la.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHost reports whether a Host header names this machine's loopback.
func loopbackHost(h string) bool {
	host, _, err := net.SplitHostPort(h)
	if err != nil {
		host = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	}
	host = strings.TrimSuffix(host, ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
