// Package codex runs OpenAI's Codex CLI (verified with codex-cli 0.169.0)
// through its App Server: one `codex app-server` process per run, driven by
// the provider-neutral providers/codexharness (JSON-RPC over stdio,
// approvals and questions as interactions, native turn/interrupt). This
// package owns what is Codex's own: the provider id, the executable and its
// install hint, the environment and CODEX_HOME, and the model catalog
// (model/list, then `codex debug models`, then Auto).
//
// # Credentials
//
// Codex is meant to run with the host user's ChatGPT login in CODEX_HOME
// (default ~/.codex). The child environment is procrun's allow-list, so a
// host OPENAI_API_KEY or CODEX_API_KEY never reaches it; a key reaches Codex
// only when the operator configures it explicitly (Options.Env or the run's
// env). The bot's own secrets never pass either way.
package codex

import (
	"context"
	"log/slog"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/codexharness"
)

// ProviderID is the codex provider's id.
const ProviderID agent.ProviderID = "codex"

// Defaults.
const (
	DefaultBin  = codexharness.DefaultBin
	installHint = "npm install -g @openai/codex"
)

// VerifiedVersions are the codex-cli versions this adapter was verified with
// (the reference captures and the end-to-end tests).
var VerifiedVersions = []string{"0.169.0"}

// DefaultArgs come before the subcommand on every codex command line: the
// plan tool (update_plan) on, whatever the model's metadata says, so that
// the agent's plan reaches the chat (turn/plan/updated → plan.updated).
var DefaultArgs = []string{"-c", "tools.update_plan.enabled=true"}

// CredentialEnv are the variables whose values key the capability cache.
var CredentialEnv = []string{"OPENAI_API_KEY", "CODEX_API_KEY"}

// Options configures a Provider. Zero values take the defaults.
type Options struct {
	// Launch is the executable (default "codex"), the child's environment
	// and StopGrace: how long a cancelled run waits for the interrupted turn
	// before the process is killed (default 10 s).
	procrun.Launch
	// CodexHome, when set, is the child's CODEX_HOME; empty leaves Codex its
	// default (~/.codex of the child's HOME).
	CodexHome string
	// ApprovalPolicy and Sandbox are thread defaults (codexharness defaults:
	// "untrusted", "workspace-write"); RunRequest.Sandbox wins over Sandbox.
	ApprovalPolicy, Sandbox string
	// ModelProvider selects a model provider of the Codex config; empty keeps
	// the config's default.
	ModelProvider string
	// CatalogTTL and DiscoveryTimeout tune model discovery (codexharness defaults).
	CatalogTTL, DiscoveryTimeout time.Duration
}

// Provider runs Codex.
type Provider struct{ harness *codexharness.Harness }

var _ agent.Provider = (*Provider)(nil)

// New returns a Provider. A nil logger discards logs.
func New(logger *slog.Logger, opts Options) *Provider {
	h := codexharness.New(logger, codexharness.Options{
		Launch:           opts.Launch,
		Provider:         ProviderID,
		Label:            "Codex",
		Args:             DefaultArgs,
		CodexHome:        opts.CodexHome,
		ModelProvider:    opts.ModelProvider,
		ApprovalPolicy:   opts.ApprovalPolicy,
		Sandbox:          opts.Sandbox,
		CredentialEnv:    CredentialEnv,
		CatalogTTL:       opts.CatalogTTL,
		DiscoveryTimeout: opts.DiscoveryTimeout,
		InstallHint:      installHint,
	})
	return &Provider{harness: h}
}

// ID returns "codex".
func (p *Provider) ID() agent.ProviderID { return ProviderID }

// Harness is the App Server harness the provider drives.
func (p *Provider) Harness() *codexharness.Harness { return p.harness }

// Catalog returns the model catalog (cached; see codexharness.Harness.Discover).
func (p *Provider) Catalog(ctx context.Context, bin string) (codexharness.Catalog, error) {
	return p.harness.Discover(ctx, bin, nil)
}

// Run executes one turn through `codex app-server`. See the agent and
// codexharness package docs for the contract.
func (p *Provider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	return p.harness.Run(ctx, req, emit)
}
