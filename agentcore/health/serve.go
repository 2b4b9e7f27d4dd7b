// The HTTP listeners of serve: each opened with timeouts against slow
// clients, and shut down together.

package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Limits of the HTTP listeners' connections (slowloris): the Slack
// endpoints read at most 1 MiB and answer at once; nothing here streams.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 15 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 60 * time.Second
)

// Route is one address to listen on and what it serves.
type Route struct {
	// Key is the config key that names Addr, for errors.
	Key, Addr string
	Handler   http.Handler
	// Serves says what, for the log.
	Serves string
}

// Servers are the running HTTP servers.
type Servers struct{ list []*http.Server }

// Listen opens every route, or none (the error names the route's key and
// address), and serves them until Shutdown; serving errors are logged.
func Listen(routes []Route, log *slog.Logger) (*Servers, error) {
	s := &Servers{}
	for _, r := range routes {
		ln, err := net.Listen("tcp", r.Addr)
		if err != nil {
			for _, srv := range s.list {
				_ = srv.Close()
			}
			return nil, fmt.Errorf("%s %s: %w", r.Key, r.Addr, err)
		}
		srv := &http.Server{Handler: r.Handler, ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout,
			WriteTimeout: WriteTimeout, IdleTimeout: IdleTimeout}
		s.list = append(s.list, srv)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("http server", "listen", r.Addr, "err", err)
			}
		}()
		log.Info("listening", "addr", ln.Addr().String(), "serves", r.Serves)
	}
	return s, nil
}

// Shutdown stops the servers, letting requests in flight end within 5 s.
func (s *Servers) Shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range s.list {
		_ = srv.Shutdown(ctx)
	}
}
