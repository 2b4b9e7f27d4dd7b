// Where serve listens: the front-ends' public routes and the unauthenticated
// /healthz and /metrics, which never share a public address.

package configs

import (
	"fmt"
	"net"
)

// DefaultAdminListen is http.admin_listen's default.
const DefaultAdminListen = "127.0.0.1:8781"

// Listener is one HTTP address serve opens: the front-ends' routes (the
// Slack Events API), or /healthz and /metrics (Admin).
type Listener struct {
	Key   string // the config key that names Addr
	Addr  string
	Admin bool
}

// Serves says what the listener serves, for the log.
func (l Listener) Serves() string {
	if l.Admin {
		return "/healthz /metrics"
	}
	return "front-end routes"
}

// Listeners decides where serve listens. /healthz and /metrics are
// unauthenticated, so they are never on a public listener: with front-end
// routes (public: Slack HTTP mode) http.listen serves only those and /healthz
// and /metrics are on http.admin_listen (default 127.0.0.1:8781), which must
// be another address. Without routes they stay on http.listen when it is a
// loopback address and admin_listen is not set; else they go to
// admin_listen and http.listen is not opened.
func (c HTTPConfig) Listeners(public bool) ([]Listener, error) {
	admin := Listener{Key: "http.admin_listen", Addr: c.AdminListen, Admin: true}
	if admin.Addr == "" {
		admin.Addr = DefaultAdminListen
	}
	if public {
		if sameAddr(c.Listen, admin.Addr) {
			return nil, fmt.Errorf("http.admin_listen %s: must differ from http.listen in Slack HTTP mode, so that /healthz and /metrics are not public", admin.Addr)
		}
		return []Listener{{Key: "http.listen", Addr: c.Listen}, admin}, nil
	}
	if c.AdminListen == "" && isLoopback(c.Listen) {
		return []Listener{{Key: "http.listen", Addr: c.Listen, Admin: true}}, nil
	}
	return []Listener{admin}, nil
}

// isLoopback reports whether the listen address addr binds only a loopback
// interface ("127.0.0.1:8780", "[::1]:8780", "localhost:8780"); ":8780"
// binds every interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameAddr reports whether two listen addresses would collide: the same
// port on the same host, or on a wildcard host.
func sameAddr(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil {
		return a == b
	}
	wild := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return pa == pb && (ha == hb || wild(ha) || wild(hb))
}
