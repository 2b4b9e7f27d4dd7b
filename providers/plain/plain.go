// Provider: runs one unstructured CLI, streaming raw stdout chunks.

package plain

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// Defaults and bounds.
const (
	DefaultStopGrace = 5 * time.Second
	// DefaultArgvLimit is procrun.DefaultArgvLimit.
	DefaultArgvLimit = procrun.DefaultArgvLimit
	// DefaultResumeFlag is Antigravity's resume option.
	DefaultResumeFlag = "--resume"
	// TailBytes is how much of the stdout tail failures show.
	TailBytes = 4 << 10
)

// SubtypeSignIn is the system subtype of a failure that looks like a
// missing sign-in; the run.failed text then says what to do.
const SubtypeSignIn = "sign_in_required"

// Options configures a Provider.
type Options struct {
	// CLI selects the command (required).
	CLI CLI
	// ID is the provider id; default the CLI's name.
	ID agent.ProviderID
	// Launch is the executable (default the CLI's), the child's environment
	// and the grace after SIGINT before the process group is killed
	// (default 5 s).
	procrun.Launch
	// ArgvLimit is the longest prompt passed as one argument; zero means
	// DefaultArgvLimit.
	ArgvLimit int
	// BrainDir is Antigravity's session directory; default
	// ~/.gemini/antigravity-cli/brain of the child's HOME.
	BrainDir string
	// ResumeFlag is Antigravity's resume option; default "--resume".
	ResumeFlag string
	// TempDir holds prompt files; default os.TempDir().
	TempDir string
}

// Provider runs one unstructured CLI.
type Provider struct {
	procrun.OneShot
	opts Options
	info cliInfo
}

var _ agent.Provider = (*Provider)(nil)

// New returns a Provider for opts.CLI; an unknown CLI returns ErrUnknownCLI.
// A nil logger discards logs.
func New(logger *slog.Logger, opts Options) (*Provider, error) {
	info, ok := clis[opts.CLI]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownCLI, opts.CLI)
	}
	if opts.ID == "" {
		opts.ID = agent.ProviderID(opts.CLI)
	}
	opts.Launch = opts.Launch.WithDefaults(info.bin, DefaultStopGrace)
	opts.ArgvLimit = procrun.ArgvLimitOrDefault(opts.ArgvLimit)
	if opts.ResumeFlag == "" {
		opts.ResumeFlag = DefaultResumeFlag
	}
	return &Provider{OneShot: procrun.NewOneShot(logger, opts.ID, info.install, opts.StopGrace), opts: opts, info: info}, nil
}

// Run executes one turn. See the package doc for the stream and session
// rules and the agent package doc for the contract.
func (p *Provider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	inv, err := Command(p.opts.CLI, req, p.opts.ArgvLimit, p.opts.ResumeFlag)
	if err != nil {
		return procrun.StartError(err, emit)
	}
	// The prompt file first: a failure to write it is a start error, before
	// any event.
	if inv.PromptFile {
		name, err := p.promptFile(ctx, req)
		if name != "" {
			defer os.Remove(name)
		}
		if err != nil {
			return err
		}
		for i, a := range inv.Args {
			if a == PromptFileArg {
				inv.Args[i] = name
			}
		}
	}
	logger, ok := p.Begin(ctx, req, emit, false, fmt.Sprintf("%s takes a text prompt here; the attached images were not sent.", p.info.name))
	if !ok {
		return nil
	}
	spec := p.opts.Spec(req, inv.Args, nil)
	w := &wire{OneWay: procrun.OneWay{Stdin: inv.Stdin}, p: p, tail: &tailBuffer{max: TailBytes}}
	// Antigravity reports no session id: snapshot its brain directory
	// around a fresh run. Inside a project container the directory is not on
	// this host, so no session is discovered there.
	if p.opts.CLI == Antigravity && procrun.KnownSession(req) == "" && req.Container == nil {
		w.brain = p.brainDir(procrun.AgentEnviron(ctx, spec.Env))
		w.before = snapshot(w.brain)
	}
	// A project chat runs in its container (Start runs it over lxc exec, its
	// environment in an env file, never on the command line); a host run is
	// relayed and isolated as ctx says.
	s := p.Session(logger, spec, w)
	s.Chunks = true
	return s.Run(ctx, emit)
}

// promptFile writes req.Prompt to a private file for the CLI to read,
// handed to the isolated agent user when ctx isolates the run. The caller
// removes a returned name, also on error.
func (p *Provider) promptFile(ctx context.Context, req agent.RunRequest) (string, error) {
	f, err := os.CreateTemp(p.opts.TempDir, "threadline-prompt-*.md")
	if err != nil {
		return "", fmt.Errorf("%s prompt file: %w", p.opts.ID, err)
	}
	name := f.Name()
	_, werr := f.WriteString(req.Prompt)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil && req.Container == nil {
		werr = procrun.ShareWithAgent(ctx, name)
	}
	if werr != nil {
		return name, fmt.Errorf("%s prompt file: %w", p.opts.ID, werr)
	}
	return name, nil
}

// brainDir is Options.BrainDir or ~/.gemini/antigravity-cli/brain of the
// child's HOME.
func (p *Provider) brainDir(env []string) string {
	if p.opts.BrainDir != "" {
		return p.opts.BrainDir
	}
	home := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".gemini", "antigravity-cli", "brain")
}
