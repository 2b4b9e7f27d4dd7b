// Launch: the part of every CLI provider's options that says how its
// process starts (executable, environment, secrets), and the process spec of
// one run built from it.

package procrun

import (
	"log/slog"
	"maps"
	"os"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// Launch is how a provider starts its CLI. Providers embed it in their
// Options; WithDefaults fills it in New and Spec builds each run's process.
type Launch struct {
	// Bin is the executable; default the provider's. RunRequest.Bin overrides it.
	Bin string
	// Env is extra environment for every run (below RunRequest.Env).
	Env map[string]string
	// HostEnv returns the host environment to filter; default os.Environ.
	HostEnv func() []string
	// Secret reports keys that must never reach the child (see Environ).
	Secret func(key string) bool
}

// WithDefaults returns l with its zero fields set: Bin to bin, HostEnv to
// os.Environ.
func (l Launch) WithDefaults(bin string) Launch {
	if l.Bin == "" {
		l.Bin = bin
	}
	if l.HostEnv == nil {
		l.HostEnv = os.Environ
	}
	return l
}

// Spec is the process of one run of req with args: req.Bin (else l.Bin) in
// req.Cwd, or in req.Container when set (procrun builds the lxc exec). Its
// environment is the host's filtered through Environ with, on top, base,
// then l.Env, then req.Env (a later map wins on the same key). l must have
// been through WithDefaults.
func (l Launch) Spec(req agent.RunRequest, args []string, base map[string]string) Spec {
	bin := req.Bin
	if bin == "" {
		bin = l.Bin
	}
	extra := maps.Clone(base)
	if extra == nil {
		extra = map[string]string{}
	}
	maps.Copy(extra, l.Env)
	maps.Copy(extra, req.Env)
	return Spec{
		Bin:       bin,
		Args:      args,
		Dir:       req.Cwd,
		Env:       Environ(l.HostEnv(), extra, l.Secret),
		Container: req.Container,
	}
}

// ProviderLogger is a provider's logger: logger (a nil one discards) with
// the provider key set to id.
func ProviderLogger(logger *slog.Logger, id agent.ProviderID) *slog.Logger {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return logger.With("provider", string(id))
}
