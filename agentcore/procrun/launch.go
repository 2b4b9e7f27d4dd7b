// Launch: the part of every CLI provider's options that says how its
// process starts (executable, environment, secrets) and how long a cancelled
// run has before the kill, and the process spec of one run built from it.

package procrun

import (
	"log/slog"
	"maps"
	"os"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
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
	// StopGrace is how long a cancelled run waits, once interrupted (SIGINT
	// or the CLI's own cancel request), for the CLI to end the turn before
	// its process is killed; default the provider's.
	StopGrace time.Duration
}

// WithDefaults returns l with its zero fields set: Bin to bin, HostEnv to
// os.Environ, StopGrace (also when negative) to grace.
func (l Launch) WithDefaults(bin string, grace time.Duration) Launch {
	if l.Bin == "" {
		l.Bin = bin
	}
	if l.HostEnv == nil {
		l.HostEnv = os.Environ
	}
	if l.StopGrace <= 0 {
		l.StopGrace = grace
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
// the agent key (logkey.Agent) set to id. Every provider adds it here, once:
// the caller's logger does not carry it.
func ProviderLogger(logger *slog.Logger, id agent.ProviderID) *slog.Logger {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return logger.With(logkey.Agent, string(id))
}

// DropImages tells the log and the chat (a system event, subtype
// images_dropped, saying text) that req's images are not sent, for a CLI
// that takes a text prompt only. Without images it does nothing.
func DropImages(logger *slog.Logger, req agent.RunRequest, emit func(agent.Event), text string) {
	if len(req.Images) == 0 {
		return
	}
	logger.Warn("images dropped: the CLI takes a text prompt only", "images", len(req.Images))
	emit(agent.Event{Type: agent.EventSystem, Subtype: "images_dropped", Text: text})
}

// OneWay is the part of a Wire that a one-way CLI (a print mode that asks
// nothing and has no cancel request of its own) shares: its Start writes
// Stdin once, if set, and closes stdin; Respond refuses every answer
// (agent.ErrUnknownInteraction); Interrupt leaves the cancel to the Session
// (SIGINT, then the kill). A provider's wire embeds it and adds Line and
// Outcome.
type OneWay struct {
	// Stdin is the prompt to write; nil closes stdin at once.
	Stdin []byte
}

// Start writes the prompt, if any, and closes stdin.
func (w *OneWay) Start(c *Conn) error {
	if w.Stdin != nil {
		c.Write(w.Stdin)
	}
	c.CloseStdin()
	return nil
}

// Respond is never reached: a one-way CLI asks nothing.
func (w *OneWay) Respond(agent.InteractionResponse, *Conn) error {
	return agent.ErrUnknownInteraction
}

// Interrupt has no native form: the Session sends SIGINT, then kills.
func (w *OneWay) Interrupt(*Conn) error { return ErrNoNative }
