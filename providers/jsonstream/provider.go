// Provider: one JSON-event-stream CLI run on a procrun.Session (OneShot, LineWire).

package jsonstream

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/registry"
)

// Dialect selects the CLI and its event shapes.
type Dialect string

// Dialects: the registry's dialects of its JSON-events format.
const (
	OpenCode    Dialect = registry.DialectOpenCode
	Mimo        Dialect = registry.DialectMimo
	CursorAgent Dialect = registry.DialectCursorAgent
	Copilot     Dialect = registry.DialectCopilot
	Qoder       Dialect = registry.DialectQoder
	// GrokCLI is @vibe-kit/grok-cli, whose executable is also named grok.
	GrokCLI Dialect = registry.DialectGrokCLI
	// Kilo is Kilo Code's run mode, an OpenCode fork with its command line
	// and events.
	Kilo Dialect = registry.DialectKilo
)

// Dialects lists every supported dialect.
var Dialects = []Dialect{OpenCode, Mimo, Kilo, CursorAgent, Copilot, Qoder, GrokCLI}

// Errors.
var (
	// ErrUnknownDialect is returned by Command (and Run) for a dialect this
	// package does not speak.
	ErrUnknownDialect = errors.New("jsonstream: unknown dialect")
	// ErrPromptTooLarge is returned (after run.failed) when a CLI that only
	// takes the prompt as an argument (grok-cli) gets one longer than the
	// argv limit: procrun.ErrPromptTooLarge.
	ErrPromptTooLarge = procrun.ErrPromptTooLarge
)

// dialectInfo is what the provider reads of a dialect's descriptor.
type dialectInfo struct {
	bin, install string
	fork         bool
	argv         bool // the prompt is an argument, not stdin
	args         registry.ArgSpec
}

// launchInfo returns d's launch facts from its descriptor.
func launchInfo(d Dialect) (dialectInfo, bool) {
	desc, ok := Descriptor(d)
	return dialectInfo{bin: desc.Executable, install: desc.InstallHint, fork: desc.NativeFork,
		argv: desc.Prompt == registry.DeliverArgv, args: desc.Args}, ok
}

// dialect is what the package has of one dialect: its descriptor and the
// parser of a run of provider id continuing session known.
type dialect struct {
	descriptor func() registry.Definition
	parser     func(id agent.ProviderID, known string) procrun.LineParser
}

// dialects are the dialects by name.
var dialects = map[Dialect]dialect{
	OpenCode: {openCodeDescriptor, openCodeParser},
	Mimo:     {mimoDescriptor, openCodeParser},
	Kilo:     {kiloDescriptor, openCodeParser},
	CursorAgent: {cursorDescriptor, func(_ agent.ProviderID, known string) procrun.LineParser {
		return NewCursorParser(known)
	}},
	Copilot: {copilotDescriptor, func(_ agent.ProviderID, known string) procrun.LineParser {
		return NewCopilotParser(known)
	}},
	Qoder: {qoderDescriptor, func(_ agent.ProviderID, known string) procrun.LineParser {
		return NewQoderParser(known)
	}},
	GrokCLI: {grokCLIDescriptor, func(agent.ProviderID, string) procrun.LineParser { return NewGrokCLIParser() }},
}

func openCodeParser(id agent.ProviderID, known string) procrun.LineParser {
	return NewOpenCodeParser(id, known)
}

// Defaults.
const (
	DefaultStopGrace = 5 * time.Second
	// DefaultArgvLimit is procrun.DefaultArgvLimit.
	DefaultArgvLimit = procrun.DefaultArgvLimit
)

// Options configures a Provider.
type Options struct {
	// Dialect selects the CLI (required).
	Dialect Dialect
	// ID is the provider id; default the dialect's name.
	ID agent.ProviderID
	// Launch is the executable (default the dialect's), the child's
	// environment and the grace after SIGINT (default 5 s).
	procrun.Launch
	// ArgvLimit is the longest prompt passed as one argument (grok-cli);
	// zero means DefaultArgvLimit.
	ArgvLimit int
}

// Provider runs one JSON-event-stream CLI.
type Provider struct {
	procrun.OneShot
	opts Options
	info dialectInfo
}

var _ agent.Provider = (*Provider)(nil)

// New returns a Provider for opts.Dialect. An unknown dialect returns
// ErrUnknownDialect. A nil logger discards logs.
func New(logger *slog.Logger, opts Options) (*Provider, error) {
	info, ok := launchInfo(opts.Dialect)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownDialect, opts.Dialect)
	}
	if opts.ID == "" {
		opts.ID = agent.ProviderID(opts.Dialect)
	}
	opts.Launch = opts.Launch.WithDefaults(info.bin, DefaultStopGrace)
	opts.ArgvLimit = procrun.ArgvLimitOrDefault(opts.ArgvLimit)
	return &Provider{OneShot: procrun.NewOneShot(logger, opts.ID, info.install, opts.StopGrace), opts: opts, info: info}, nil
}

// NewParser returns the dialect's line parser for a run of provider id that
// continues session known ("" when fresh).
func NewParser(d Dialect, id agent.ProviderID, known string) (procrun.LineParser, error) {
	t, ok := dialects[d]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownDialect, d)
	}
	return t.parser(id, known), nil
}

// Command returns the arguments (without the executable) of a run of d.
// The prompt goes to stdin, except for grok-cli, which takes it as one
// argument of at most argvLimit bytes (a longer one, or one holding a NUL
// byte, is ErrPromptTooLarge). Per dialect:
//
//	opencode, mimo,
//	kilo            run --format json --thinking [--model=M] [--variant=E] [-s ID [--fork]] [--auto]
//	cursor-agent    --print --output-format stream-json --stream-partial-output --trust
//	                [--force] [--model=M] [--resume ID] [--workspace CWD]
//	copilot         --output-format json [--allow-all-tools] [--model=M] [--resume ID]
//	qoder           -p --output-format stream-json [--yolo] [-w CWD] [--model=M] [-r ID]
//	grok-cli        [--model=M] --prompt PROMPT   (headless: every tool is allowed)
//
// The approval flags (--auto, --force, --allow-all-tools, --yolo) are passed
// only for ApprovalAccept: these print modes cannot ask, so without them the
// CLI applies its own configured policy and declines what needs a prompt. A
// Fork on a CLI without native fork (all but opencode and mimo) starts fresh.
//
// Model and effort are one argument bound to their flag (yargs and commander
// take --opt=value), and a value agent.CheckRunArgs refuses (e.g. "--auto",
// which opencode would read as auto-approve after "-m") is an error wrapping
// agent.ErrInvalidArgValue: nothing is started.
func Command(d Dialect, req agent.RunRequest, argvLimit int) ([]string, error) {
	info, ok := launchInfo(d)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownDialect, d)
	}
	if err := agent.CheckRunArgs(req); err != nil {
		return nil, fmt.Errorf("%s: %w", d, err)
	}
	resume := req.ResumeID
	if req.Fork && !info.fork {
		resume = ""
	}
	// The flags are the descriptor's (what detection shows is what runs),
	// in each CLI's order.
	spec := info.args
	args := slices.Clone(spec.Base)
	bound := func(flag, v string) { // --opt=value
		if v != "" {
			args = append(args, flag+"="+v)
		}
	}
	opt := func(flag, v string) { // --opt value
		if v != "" {
			args = append(args, flag, v)
		}
	}
	approve := func() {
		if req.Approval == agent.ApprovalAccept {
			args = append(args, spec.Accept...)
		}
	}
	switch d {
	case OpenCode, Mimo, Kilo:
		bound(spec.Model, req.Model)
		bound(spec.Effort, req.Effort)
		opt(spec.Resume, resume)
		if resume != "" && req.Fork {
			args = append(args, spec.Fork)
		}
		approve()
	case CursorAgent:
		approve()
		bound(spec.Model, req.Model)
		opt(spec.Resume, resume)
		opt("--workspace", req.Cwd)
	case Copilot:
		approve()
		bound(spec.Model, req.Model)
		opt(spec.Resume, resume)
	case Qoder:
		approve()
		opt("-w", req.Cwd)
		bound(spec.Model, req.Model)
		opt(spec.Resume, resume)
	case GrokCLI:
		if !procrun.FitsArgv(req.Prompt, argvLimit) {
			return nil, procrun.PromptTooLarge(string(d), req.Prompt, argvLimit)
		}
		bound(spec.Model, req.Model)
		// grok-cli's parser (commander) takes the argument after --prompt
		// as its value even when it starts with '-'.
		return append(append(args, req.Args...), spec.Prompt, req.Prompt), nil
	}
	return append(args, req.Args...), nil
}

// Run executes one turn. See the agent package doc for the contract. The
// prompt is written to stdin, which is then closed (grok-cli: an argument).
// A cancelled ctx sends SIGINT, waits StopGrace, then kills the process
// group: run.interrupted. Once the CLI exited its process group is killed.
func (p *Provider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	args, err := Command(p.opts.Dialect, req, p.opts.ArgvLimit)
	if err != nil {
		return procrun.StartError(err, emit)
	}
	parser, err := NewParser(p.opts.Dialect, p.opts.ID, procrun.KnownSession(req))
	if err != nil {
		return err
	}
	logger, ok := p.Begin(ctx, req, emit, p.info.fork, fmt.Sprintf("%s takes a text prompt here; the attached images were not sent.", p.opts.ID))
	if !ok {
		return nil
	}
	spec := p.opts.Spec(req, args, nil)
	w := &wire{LineWire: procrun.LineWire{Parser: parser}}
	if req.Container == nil { // a container's processes end with its exec
		w.tokenEntry = RunTokenEnv + "=" + rand.Text()
		spec.Env = append(spec.Env, w.tokenEntry)
	}
	if !p.info.argv {
		// One write of the whole prompt; WriteLine adds the final newline.
		w.Stdin = []byte(req.Prompt)
	}
	s := p.Session(logger, spec, w)
	s.ExitTimeout = -1 // a one-way CLI may finish writing after its result
	return s.Run(ctx, emit)
}
