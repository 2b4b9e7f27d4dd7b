// Package agent holds the provider-neutral contracts between Threadline's core and
// the agent CLI adapters: Provider, RunRequest, Event, Interaction and the sentinel
// errors. It imports nothing of this project.
//
// # Run lifecycle
//
// The prompt service builds one RunRequest and calls Provider.Run with an emit
// callback. The provider launches its CLI, parses its native protocol and emits
// normalized Events in order from a single goroutine. A successful native run ends
// with exactly one run.completed; a failure emits run.failed and Run returns an error
// wrapping ErrRunFailed; a cancelled ctx makes the provider stop the agent natively
// (with a deadline, then a kill), emit run.interrupted and return nil. The emit
// callback must not be called after Run returns.
package agent

import (
	"context"
	"errors"
	"time"
)

// ProviderID names a provider ("claude", "codex", "opencode", ...).
type ProviderID string

// Provider runs one agent CLI family.
type Provider interface {
	// ID is the provider's stable identifier.
	ID() ProviderID
	// Run executes one turn and emits events from one goroutine. See the package doc.
	Run(ctx context.Context, req RunRequest, emit func(Event)) error
}

// Mode is the agent's working mode.
type Mode string

// Modes.
const (
	ModeDefault Mode = "default"
	ModePlan    Mode = "plan"
)

// ApprovalPolicy says how requests for approval are handled when nobody can be asked.
type ApprovalPolicy string

// Approval policies.
const (
	// ApprovalAsk turns every request into an Interaction answered through Responses.
	ApprovalAsk ApprovalPolicy = "ask"
	// ApprovalDeny declines every request without asking (a non-interactive run).
	ApprovalDeny ApprovalPolicy = "deny"
	// ApprovalAccept lets the agent act without asking (the operator chose it).
	ApprovalAccept ApprovalPolicy = "accept"
)

// Image is an image input attached to a prompt.
type Image struct {
	MediaType string `json:"media_type"`
	Data      []byte `json:"-"`
	Name      string `json:"name,omitempty"`
}

// RunRequest is the only input a provider receives.
type RunRequest struct {
	ChatID string
	RunID  string
	// Prompt is the text to send, already including any visible history.
	Prompt string
	Images []Image
	Model  string
	Effort string
	Mode   Mode
	// ResumeID is the provider's native session to continue; empty starts fresh.
	ResumeID string
	// Fork asks for a new native session branched from ResumeID.
	Fork    bool
	Cwd     string
	Project string
	// Container, when set, is the project container the run executes in;
	// the provider passes it to procrun.Spec.Container unchanged. Nil runs
	// on the host in Cwd.
	Container *ContainerTarget
	// Bin, Args and Env are the operator's overrides for the executable, extra
	// arguments and extra environment of the child.
	Bin  string
	Args []string
	Env  map[string]string
	// Approval and Sandbox are the run's policies.
	Approval ApprovalPolicy
	Sandbox  string
	// Responses carries answers to interactions this run requested. Nil means
	// nobody can answer: the provider applies Approval.
	Responses <-chan InteractionResponse
	// IdleTimeout stops the turn when the agent writes nothing on stdout for
	// this long (not counting time spent waiting for an answer); 0 disables.
	// The prompt service hands it to the run loop (procrun.WithIdleTimeout).
	IdleTimeout time.Duration
	// ForkOf is the chat a fork's first run forks (ResumeID is then its
	// session, Fork set): a sandboxed run's per-chat agent state starts as
	// a copy of that chat's, where the session lives.
	ForkOf string
	// ReadOnly are paths a sandboxed run may read besides its own working
	// directory and state (the main clone its workspace borrows objects
	// from).
	ReadOnly []string
	// LocalPort, when set, is a loopback TCP port of this run's own: a
	// sandboxed run may listen and connect on it (and on no other port
	// above 1023 but its endpoints'), for a CLI that serves itself locally
	// and talks to that server (kilo's --port).
	LocalPort int
	// MCPServers are MCP servers (stdio) the run's CLI is given besides its
	// own: Threadline's thread tools. A provider whose CLI takes none
	// ignores them.
	MCPServers []MCPServer
}

// Sentinel errors shared by providers and the core.
var (
	// ErrSessionNotFound is returned when the native session to resume does not exist.
	ErrSessionNotFound = errors.New("agent session not found")
	// ErrRunFailed is returned after the provider emitted run.failed.
	ErrRunFailed = errors.New("agent run failed")
	// ErrPromptAlreadyRunning is returned when the chat already has an active run.
	ErrPromptAlreadyRunning = errors.New("a run is already active in this chat")
	// ErrNotInstalled is returned when the agent's executable cannot be found.
	ErrNotInstalled = errors.New("agent CLI not installed")
	// ErrDuplicateRequest is a protocol violation: the agent reused the id of
	// a request that is still pending. The run fails.
	ErrDuplicateRequest = errors.New("duplicate request id")
	// ErrUnknownInteraction is returned for an answer whose interaction id is
	// not pending in the run; the answer is refused.
	ErrUnknownInteraction = errors.New("unknown interaction")
)
