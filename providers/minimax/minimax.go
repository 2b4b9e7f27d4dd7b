// Package minimax runs MiniMax models through the Codex CLI's App Server:
// the same provider-neutral providers/codexharness as the codex provider,
// with MiniMax's own identity. This package owns the provider id
// ("minimax"), its label, the endpoint, the key variable (MINIMAX_API_KEY),
// the model catalog and an isolated CODEX_HOME whose config.toml (written
// before every run) points Codex's model provider at MiniMax. The same
// configuration goes on the command line (-c overrides), for a sandboxed
// run, whose CODEX_HOME is its chat's own agent state.
//
// codex-cli 0.169.0 only speaks the Responses wire API (wire_api "chat" is
// rejected), so BaseURL must serve POST <BaseURL>/responses.
//
// The key reaches the child only when the operator configures it (Options.Env
// or the run's env): like every host variable outside procrun's allow-list,
// a host MINIMAX_API_KEY does not pass by itself.
package minimax

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/codexharness"
)

// ProviderID is the minimax provider's id.
const ProviderID agent.ProviderID = "minimax"

// Defaults.
const (
	DefaultBin     = codexharness.DefaultBin
	DefaultBaseURL = "https://api.minimax.io/v1"
	DefaultModel   = "MiniMax-M2.1"
	KeyEnv         = "MINIMAX_API_KEY"
	// modelProvider is the model provider id inside the generated config.
	modelProvider = "minimax"
	installHint   = "npm install -g @openai/codex (MiniMax runs through the Codex CLI)"
)

// DefaultModels is the catalog offered when Options.Models is empty. The App
// Server's model/list always returns OpenAI's bundled catalog, whatever the
// provider, so MiniMax keeps its own.
var DefaultModels = []string{"MiniMax-M2.1", "MiniMax-M2"}

// Options configures a Provider. Zero values take the defaults.
type Options struct {
	// Launch is the Codex executable (default "codex"), the child's
	// environment (put MINIMAX_API_KEY in Env) and StopGrace (see
	// codexharness.Options.StopGrace; default 10 s).
	procrun.Launch
	// CodexHome is MiniMax's own CODEX_HOME; default
	// $XDG_STATE_HOME/threadline/minimax/codex-home (~/.local/state/...).
	CodexHome string
	// BaseURL is the Responses endpoint; default DefaultBaseURL.
	BaseURL string
	// Model is the default model; default DefaultModel.
	Model string
	// Models is the catalog; default DefaultModels.
	Models []string
}

// Provider runs MiniMax through the Codex App Server.
type Provider struct {
	opts    Options
	harness *codexharness.Harness
}

var _ agent.Provider = (*Provider)(nil)

// New returns a Provider. A nil logger discards logs.
func New(logger *slog.Logger, opts Options) *Provider {
	opts.BaseURL = cmp.Or(opts.BaseURL, DefaultBaseURL)
	opts.Model = cmp.Or(opts.Model, DefaultModel)
	if len(opts.Models) == 0 {
		opts.Models = DefaultModels
	}
	if opts.CodexHome == "" {
		opts.CodexHome = defaultCodexHome()
	}
	h := codexharness.New(logger, codexharness.Options{
		Launch: opts.Launch,
		// The config as -c overrides too: a sandboxed run's CODEX_HOME is
		// its chat's own (RunRequest.Env wins over CodexHome), without it.
		Args:          config(opts).Overrides(),
		Provider:      ProviderID,
		Label:         "MiniMax",
		CodexHome:     opts.CodexHome,
		ModelProvider: modelProvider,
		CredentialEnv: []string{KeyEnv},
		InstallHint:   installHint,
	})
	return &Provider{opts: opts, harness: h}
}

func defaultCodexHome() string {
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "."
		}
		state = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(state, "threadline", "minimax", "codex-home")
}

// ID returns "minimax".
func (p *Provider) ID() agent.ProviderID { return ProviderID }

// CodexHome is the provider's CODEX_HOME.
func (p *Provider) CodexHome() string { return p.opts.CodexHome }

// ConfigTOML is the config.toml of the provider's CODEX_HOME: MiniMax as the
// model provider (Responses wire API, key from MINIMAX_API_KEY) and plugins,
// remote plugins, apps, analytics and update checks off.
func (p *Provider) ConfigTOML() string { return config(p.opts).TOML() }

// config is the provider configuration of opts.
func config(opts Options) codexharness.ProviderConfig {
	return codexharness.ProviderConfig{
		Comment: "Written by Threadline for the minimax provider; rewritten before every run.",
		Model:   opts.Model, ID: modelProvider, Name: "MiniMax", BaseURL: opts.BaseURL, EnvKey: KeyEnv,
	}
}

// WriteConfig creates CODEX_HOME and writes config.toml when it differs.
func (p *Provider) WriteConfig() error {
	if err := os.MkdirAll(p.opts.CodexHome, 0o700); err != nil {
		return fmt.Errorf("minimax codex home: %w", err)
	}
	path := filepath.Join(p.opts.CodexHome, "config.toml")
	want := []byte(p.ConfigTOML())
	if have, err := os.ReadFile(path); err == nil && string(have) == string(want) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, want, 0o600); err != nil {
		return fmt.Errorf("minimax config: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("minimax config: %w", err)
	}
	return nil
}

// Run writes the CODEX_HOME config and executes one turn through
// `codex app-server` with MiniMax as the model provider.
func (p *Provider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	if err := p.WriteConfig(); err != nil {
		return err
	}
	if req.Model == "" {
		req.Model = p.opts.Model
	}
	return p.harness.Run(ctx, req, emit)
}
