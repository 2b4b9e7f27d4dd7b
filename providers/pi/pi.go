// Provider: runs one pi turn over the RPC mode's JSON lines.

package pi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// installHint tells an operator how to install the CLI.
const installHint = "npm install -g @mariozechner/pi-coding-agent"

// Defaults.
const (
	DefaultBin              = "pi"
	DefaultInterruptTimeout = 5 * time.Second
	// DefaultRetryGrace is how long a failed agent_end waits for pi's
	// auto_retry_start (observed within 1 ms) before it ends the run.
	DefaultRetryGrace = time.Second
)

// VerifiedWith lists the pi versions this adapter was checked against.
var VerifiedWith = []string{"0.73.1"}

// ReadOnlyTools is the --tools allowlist used when pi cannot ask for
// approval: every policy but accept, and plan mode.
var ReadOnlyTools = []string{"read", "grep", "find", "ls"}

// Efforts are pi's thinking levels (--thinking).
var Efforts = []string{"off", "minimal", "low", "medium", "high", "xhigh"}

// DefaultEnv is added to every child's environment unless the run's env sets
// the same key: no startup network traffic, install ping or version check.
var DefaultEnv = map[string]string{
	"PI_OFFLINE":            "1",
	"PI_TELEMETRY":          "0",
	"PI_SKIP_VERSION_CHECK": "1",
}

// Options configures a Provider.
type Options struct {
	// Launch is the executable (default "pi"), the child's environment (on
	// top of DefaultEnv) and StopGrace: how long a cancelled run waits for
	// pi's agent_end after abort, and how long a finished run waits for pi
	// to exit after stdin closed, before the process is killed (default 5 s).
	procrun.Launch
	// RetryGrace: see DefaultRetryGrace.
	RetryGrace time.Duration
}

// Provider runs pi in RPC mode.
type Provider struct {
	logger *slog.Logger
	opts   Options
}

var _ agent.Provider = (*Provider)(nil)

// New returns a Provider. A nil logger discards logs.
func New(logger *slog.Logger, opts Options) *Provider {
	opts.Launch = opts.Launch.WithDefaults(DefaultBin, DefaultInterruptTimeout)
	if opts.RetryGrace <= 0 {
		opts.RetryGrace = DefaultRetryGrace
	}
	return &Provider{logger: procrun.ProviderLogger(logger, ProviderID), opts: opts}
}

// ID returns "pi".
func (p *Provider) ID() agent.ProviderID { return ProviderID }

// readOnly reports whether the run is limited to ReadOnlyTools.
func readOnly(req agent.RunRequest) bool {
	return req.Approval != agent.ApprovalAccept || req.Mode == agent.ModePlan
}

// Args returns the CLI arguments for req (without the executable):
//
//	--mode rpc [--session ID] [--model M] [--thinking E] [--tools read,grep,find,ls] [args...]
//
// pi has no approval prompts: only Approval accept runs with every tool;
// other policies and plan mode get the read-only allowlist.
//
// pi's own parser (dist/cli/args.js) matches "--model" exactly and takes the
// next argument as its value, so "--model=M" would be an unknown flag: the
// value stays a separate argument, and Run refuses (agent.CheckRunArgs) any
// value that could read as a flag before this is built.
func Args(req agent.RunRequest) []string {
	args := []string{"--mode", "rpc"}
	if req.ResumeID != "" && !req.Fork {
		args = append(args, "--session", req.ResumeID)
	}
	if req.ResumeID != "" && req.Fork {
		args = append(args, "--fork", req.ResumeID)
	}
	if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	if req.Effort != "" {
		args = append(args, "--thinking", req.Effort)
	}
	if readOnly(req) {
		args = append(args, "--tools", strings.Join(ReadOnlyTools, ","))
	}
	return append(args, req.Args...)
}

// PromptLine is the prompt command carrying req.Prompt and its images.
func PromptLine(req agent.RunRequest, id string) ([]byte, error) {
	type image struct {
		Type     string `json:"type"`
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
	}
	cmd := struct {
		Type    string  `json:"type"`
		ID      string  `json:"id"`
		Message string  `json:"message"`
		Images  []image `json:"images,omitempty"`
	}{Type: "prompt", ID: id, Message: req.Prompt}
	for _, img := range req.Images {
		if img.MediaType == "" || len(img.Data) == 0 {
			return nil, fmt.Errorf("image %q: missing media type or data", img.Name)
		}
		cmd.Images = append(cmd.Images, image{Type: "image", Data: base64.StdEncoding.EncodeToString(img.Data), MimeType: img.MediaType})
	}
	return json.Marshal(cmd)
}

// Session-not-found texts pi prints on stderr before it exits 1.
var sessionNotFoundTexts = []string{"No session found matching", "Session found in different project"}

// Command ids the provider uses.
const (
	stateID  = "threadline-state"
	promptID = "threadline-prompt"
)

// Run executes one turn. See the agent package doc for the contract and the
// package doc for the protocol.
func (p *Provider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	logger := p.logger.With("chat_id", req.ChatID, "run_id", req.RunID)
	if err := agent.CheckRunArgs(req); err != nil {
		return fmt.Errorf("pi: %w", err)
	}
	if req.ResumeID != "" && strings.ContainsRune(req.ResumeID, filepath.Separator) {
		// --session <path> of a missing file silently starts a new session
		// at that path: check first.
		if _, err := os.Stat(req.ResumeID); err != nil {
			return fmt.Errorf("pi session %s: %w", req.ResumeID, agent.ErrSessionNotFound)
		}
	}
	prompt, err := PromptLine(req, promptID)
	if err != nil {
		return fmt.Errorf("pi prompt: %w", err)
	}
	parser := NewParser(procrun.KnownSession(req))
	parser.AutoAnswer = agent.DecisionDecline
	if req.Responses != nil && (req.Approval == agent.ApprovalAsk || req.Approval == "") {
		parser.AutoAnswer = ""
	} else if req.Approval == agent.ApprovalAccept {
		parser.AutoAnswer = agent.DecisionApprove
	}
	return procrun.Session{
		Provider:         ProviderID,
		Spec:             p.opts.Spec(req, Args(req), DefaultEnv),
		Wire:             &wire{parser: parser, req: req, prompt: prompt, retryGrace: p.opts.RetryGrace},
		Responses:        req.Responses,
		Logger:           logger,
		InstallHint:      installHint,
		InterruptTimeout: p.opts.StopGrace,
		NoResult:         "pi exited without ending the run",
	}.Run(ctx, emit)
}

func sessionNotFound(stderr string) bool {
	for _, s := range sessionNotFoundTexts {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}
