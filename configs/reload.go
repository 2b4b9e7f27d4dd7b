// Reloading the config file of a running process (serve's SIGHUP).

package configs

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/threadline-bot/threadline/agentcore/redact"
)

// Reloader reloads a running process's config file, one reload at a time:
// the file is read and validated, its secrets join the running redactor
// before anything is logged, Apply puts its reloadable settings in force
// (PlanReload says which), and the outcome is logged with keys, never
// values. An invalid file, or one Apply refuses, changes nothing.
type Reloader struct {
	// Start is the config the process started with.
	Start *Config
	// Redactor is the process's redactor.
	Redactor *redact.Redactor
	Log      *slog.Logger
	// Apply puts next in force as r plans (r.Effective).
	Apply func(next *Config, r Reload) error

	mu      sync.Mutex
	applied *Config
}

// Reload reloads the file at path ("" the file the process started from).
func (l *Reloader) Reload(ctx context.Context, path string) (Reload, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	start := time.Now()
	r, err := l.reload(path)
	r.Took = time.Since(start)
	if err != nil {
		l.Log.ErrorContext(ctx, "config reload refused; the running config is kept", "path", path, "err", err, "took", r.Took)
		return r, err
	}
	if len(r.Restart) > 0 {
		l.Log.WarnContext(ctx, "config reload: these settings need a restart and keep their running values", "needs_restart", strings.Join(r.Restart, ", "))
	}
	changed := strings.Join(r.Applied, ", ")
	if changed == "" {
		changed = "(nothing)"
	}
	l.Log.InfoContext(ctx, "config reloaded", "path", path, "changed", changed, "took", r.Took)
	return r, nil
}

func (l *Reloader) reload(path string) (Reload, error) {
	if path == "" {
		path = l.Start.Path()
	}
	next, err := Load(path)
	if err != nil {
		return Reload{}, err
	}
	next.ShareRedactor(l.Redactor)
	applied := l.applied
	if applied == nil {
		applied = l.Start
	}
	r := PlanReload(l.Start, applied, next)
	if err := l.Apply(next, r); err != nil {
		return Reload{}, err
	}
	l.applied = r.Effective
	return r, nil
}

// On reloads the file at path on every signal from hup until ctx ends.
func (l *Reloader) On(ctx context.Context, hup <-chan os.Signal, path string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			_, _ = l.Reload(ctx, path) // Reload logs its outcome
		}
	}
}

// Hangups makes SIGHUP reach the returned channel instead of ending the
// process (Go's default for an unhandled SIGHUP is exit 129); a signal that
// arrives before the reload loop runs waits in the channel. signal.Stop
// undoes it.
func Hangups() chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	return ch
}
