// Provider: runs one Kimi turn on a procrun.Session (OneShot, LineWire).

package kimi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

const installHint = "uv tool install kimi-cli (or npm install -g @moonshot-ai/kimi-code)"

// Defaults.
const (
	DefaultBin       = "kimi"
	DefaultStopGrace = 5 * time.Second
	// DefaultArgvLimit is procrun.DefaultArgvLimit.
	DefaultArgvLimit = procrun.DefaultArgvLimit
)

// Options configures a Provider.
type Options struct {
	// Launch is the executable (default "kimi"), the child's environment and
	// the grace after SIGINT (default 5 s).
	procrun.Launch
	// ArgvLimit is the longest prompt passed with -p; a longer one goes to
	// stdin. Zero means DefaultArgvLimit.
	ArgvLimit int
}

// Provider runs Kimi Code CLI; its ID is "kimi".
type Provider struct {
	procrun.OneShot
	opts Options
}

var _ agent.Provider = (*Provider)(nil)

// New returns a Provider. A nil logger discards logs.
func New(logger *slog.Logger, opts Options) *Provider {
	opts.Launch = opts.Launch.WithDefaults(DefaultBin, DefaultStopGrace)
	opts.ArgvLimit = procrun.ArgvLimitOrDefault(opts.ArgvLimit)
	return &Provider{OneShot: procrun.NewOneShot(logger, ProviderID, installHint, opts.StopGrace), opts: opts}
}

// Invocation is the command line and stdin of one run.
type Invocation struct {
	Args []string
	// Stdin is the stream-json user message when the prompt is not an argument.
	Stdin []byte
}

// Command builds the invocation for req. argvLimit is the longest prompt
// put on the command line. A Fork clears the resume id (Kimi cannot fork).
//
// The model is one argument (--model=M, which click takes); a value
// agent.CheckRunArgs refuses is an error wrapping agent.ErrInvalidArgValue.
func Command(req agent.RunRequest, argvLimit int) (Invocation, error) {
	var inv Invocation
	if err := agent.CheckRunArgs(req); err != nil {
		return inv, fmt.Errorf("kimi: %w", err)
	}
	if procrun.FitsArgv(req.Prompt, argvLimit) {
		inv.Args = []string{"-p", req.Prompt, "--output-format", "stream-json"}
	} else {
		line, err := json.Marshal(map[string]string{"role": "user", "content": req.Prompt})
		if err != nil {
			return inv, fmt.Errorf("kimi prompt: %w", err)
		}
		inv.Args = []string{"--print", "--input-format", "stream-json", "--output-format", "stream-json"}
		inv.Stdin = line
	}
	if req.Model != "" {
		inv.Args = append(inv.Args, "--model="+req.Model)
	}
	if id := procrun.KnownSession(req); id != "" {
		inv.Args = append(inv.Args, "--session", id)
	}
	inv.Args = append(inv.Args, req.Args...)
	return inv, nil
}

// Run executes one turn. See the agent package doc for the contract.
func (p *Provider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	inv, err := Command(req, p.opts.ArgvLimit)
	if err != nil {
		return err
	}
	logger, ok := p.Begin(ctx, req, emit, false, "Kimi's print mode takes text only; the attached images were not sent.")
	if !ok {
		return nil
	}
	w := &procrun.LineWire{OneWay: procrun.OneWay{Stdin: inv.Stdin}, Parser: NewParser(procrun.KnownSession(req))}
	s := p.Session(logger, p.opts.Spec(req, inv.Args, nil), w)
	s.ExitTimeout = -1 // Kimi may finish writing after its resume hint
	return s.Run(ctx, emit)
}
