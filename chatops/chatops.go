// Package chatops is the platform-neutral bot logic shared by every front-end
// (terminal, Slack, Matrix): chats and their settings, commands typed in a thread,
// starting and stopping runs, answering interactions and following a chat's events.
package chatops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/agentcore/runhub"
)

// Event is a persisted chat event as front-ends see it.
type Event = runhub.Event

// Chat is a chat's settings.
type Chat struct {
	ID      agent.ChatID
	Title   string
	Agent   string
	Model   string
	Effort  string
	Mode    string
	Project string
	Cwd     string
}

// ChatStore creates, reads and updates chats.
type ChatStore interface {
	CreateChat(ctx context.Context, c Chat) (Chat, error)
	GetChat(ctx context.Context, id agent.ChatID) (Chat, error)
	UpdateChat(ctx context.Context, c Chat) error
}

// ChatForker is an optional interface of the ChatStore given to New: it
// forks a chat (Chats.Fork).
type ChatForker interface {
	// ForkChat copies chat fromID's settings as newID, forked from it at its
	// last event, without changing it: newID's runs carry fromID's history
	// (natively forked sessions where the agent forks natively, else the
	// visible transcript).
	ForkChat(ctx context.Context, fromID, newID agent.ChatID) error
}

// ReportedModels is an optional interface of the ChatStore given to New:
// the model the agent itself reported in the chat's latest run that reported
// one (runs.agent_model), which `status` shows beside the chat's setting.
type ReportedModels interface {
	LastAgentModel(ctx context.Context, chatID agent.ChatID) (string, error)
}

// ErrNoFork is returned by Chats.Fork when the store cannot fork chats.
var ErrNoFork = errors.New("chatops: this store cannot fork chats")

// Runner starts and stops runs (prompt.Service).
type Runner interface {
	Start(ctx context.Context, req prompt.StartRequest) (*prompt.Run, error)
	Cancel(chatID agent.ChatID) bool
	Active(chatID agent.ChatID) (*prompt.Run, bool)
	RespondInteraction(ctx context.Context, chatID agent.ChatID, runID agent.RunID, resp agent.InteractionResponse) error
}

// Feed reads a chat's events: persisted ones after a seq, then live ones.
type Feed interface {
	Subscribe(ctx context.Context, chatID agent.ChatID, afterSeq int64) <-chan Event
	LastSeq(ctx context.Context, chatID agent.ChatID) (int64, error)
}

// AgentInfo describes an agent id a chat can use.
type AgentInfo struct {
	ID          string
	Installed   bool
	Version     string
	Models      []string
	InstallHint string
	Problem     string
	// Args are the models and efforts a chat may set for the agent.
	Args registry.ArgRules
}

// AgentInfos turns the registry's reports into chatops' view: the first
// problem, else the version warning, is the agent's Problem.
func AgentInfos(reports []registry.Report) []AgentInfo {
	out := make([]AgentInfo, 0, len(reports))
	for _, r := range reports {
		info := AgentInfo{ID: r.ID, Installed: r.Status != registry.StatusMissing, Version: r.Version, Models: r.Models, InstallHint: r.InstallHint,
			Args: r.ArgRules(), Problem: r.VersionWarning}
		if len(r.Problems) > 0 {
			info.Problem = r.Problems[0]
		}
		out = append(out, info)
	}
	return out
}

// Agents lists the configured agents and whether they can run here.
type Agents interface {
	Agents(ctx context.Context) []AgentInfo
}

// AgentLookup is an optional interface of Agents that answers for one agent
// without probing every agent: the commands agent, model and effort use it
// when the catalogue has it.
type AgentLookup interface {
	// Agent returns the agent's entry (its Args at least); ok is false for an
	// id the catalogue does not know.
	Agent(ctx context.Context, id string) (AgentInfo, bool)
	// AgentIDs lists the known ids, sorted.
	AgentIDs() []string
}

// Chats is the platform-neutral chat service the desk and the console use:
// chats (create, read, fork), prompts and their runs (send, stop, respond) and
// each chat's event feed. It knows nothing of platforms or threads.
type Chats struct {
	chats  ChatStore
	runner Runner
	feed   Feed
	agents Agents
	log    *slog.Logger

	// InteractionTimeout is the default of prompts that set none: approvals
	// nobody answered in time are declined (timed_out); zero waits.
	InteractionTimeout time.Duration
	// Workspaces ships chats' branches (diff, push, pr, merge, close); nil:
	// those commands say they are not set up.
	Workspaces Workspaces
	// Redact, when set, scrubs what the log command returns (the console
	// prints it); a thread's upload is scrubbed by DeskOptions.Redact too.
	Redact Redactor
}

// New returns the Chats over the store, the prompt runner, the event feed and
// the agents (nil lists none).
func New(chats ChatStore, runner Runner, feed Feed, agents Agents, logger *slog.Logger) *Chats {
	return &Chats{chats: chats, runner: runner, feed: feed, agents: agents, log: logger}
}

// Threads is Desk's former name, kept while a change in flight
// (chatops/workfile.go) moves to Desk; delete it after.
type Threads = Desk

// ErrBusy is returned when a prompt arrives while the chat's run is active.
var ErrBusy = agent.ErrPromptAlreadyRunning

// NewChat creates a chat with the given settings.
func (b *Chats) NewChat(ctx context.Context, c Chat) (Chat, error) {
	if c.Agent == "" {
		return Chat{}, errors.New("no agent chosen for the new chat")
	}
	if c.Mode == "" {
		c.Mode = string(agent.ModeDefault)
	}
	return b.chats.CreateChat(ctx, c)
}

// Fork creates a new chat from chat fromID and returns it: the same agent
// and settings, and the parent's conversation. An agent that forks natively
// branches the parent's session on the fork's first run; any other agent gets
// the parent's visible transcript (the last TranscriptLimit bytes, the
// parent's history up to the fork, then the fork's own). The parent is never
// changed. This is the one fork of every front-end: the `fork` command of
// Slack and Matrix threads, `/fork` in `threadline chat` and `threadline run
// --chat ID --fork`.
func (b *Chats) Fork(ctx context.Context, fromID agent.ChatID) (Chat, error) {
	f, ok := b.chats.(ChatForker)
	if !ok {
		return Chat{}, ErrNoFork
	}
	if _, err := b.chats.GetChat(ctx, fromID); err != nil {
		return Chat{}, fmt.Errorf("fork chat %s: %w", fromID, err)
	}
	id := agent.ChatID(uuid.NewString())
	if err := f.ForkChat(ctx, fromID, id); err != nil {
		return Chat{}, fmt.Errorf("fork chat %s: %w", fromID, err)
	}
	if b.log != nil {
		b.log.InfoContext(ctx, "chat forked", logkey.ChatID, id, "forked_from", fromID)
	}
	return b.chats.GetChat(ctx, id)
}

// Chat returns a chat's settings.
func (b *Chats) Chat(ctx context.Context, id agent.ChatID) (Chat, error) {
	return b.chats.GetChat(ctx, id)
}

// Subscribe follows a chat's events after a seq.
func (b *Chats) Subscribe(ctx context.Context, chatID agent.ChatID, afterSeq int64) <-chan Event {
	return b.feed.Subscribe(ctx, chatID, afterSeq)
}

// LastSeq is the seq of the chat's newest persisted event.
func (b *Chats) LastSeq(ctx context.Context, chatID agent.ChatID) (int64, error) {
	return b.feed.LastSeq(ctx, chatID)
}

// Prompt is a user's message to a chat.
type Prompt struct {
	ChatID      agent.ChatID
	Text        string
	Images      []agent.Image
	By          string
	Interactive bool
	// InteractionTimeout declines unanswered approvals after it; zero waits.
	InteractionTimeout time.Duration
	// Skills are applied in the agent's declared way.
	Skills []registry.Skill
}

// Send starts a run for the prompt. A busy chat returns an error wrapping ErrBusy.
func (b *Chats) Send(ctx context.Context, p Prompt) (*prompt.Run, error) {
	return b.runner.Start(ctx, prompt.StartRequest{
		ChatID: p.ChatID, Prompt: p.Text, Images: p.Images, By: p.By, Interactive: p.Interactive,
		InteractionTimeout: cmp.Or(p.InteractionTimeout, b.InteractionTimeout),
		Skills:             p.Skills,
	})
}

// Stop cancels the chat's run and reports whether one was active.
func (b *Chats) Stop(chatID agent.ChatID) bool { return b.runner.Cancel(chatID) }

// Active returns the chat's running run.
func (b *Chats) Active(chatID agent.ChatID) (*prompt.Run, bool) { return b.runner.Active(chatID) }

// Respond answers a pending interaction of run runID of chat chatID.
func (b *Chats) Respond(ctx context.Context, chatID agent.ChatID, runID agent.RunID, resp agent.InteractionResponse) error {
	return b.runner.RespondInteraction(ctx, chatID, runID, resp)
}

// agentInfo returns the agent's entry; ok is false without a catalogue or
// for an id it does not list.
func (b *Chats) agentInfo(ctx context.Context, id string) (AgentInfo, bool) {
	if b.agents == nil {
		return AgentInfo{}, false
	}
	if l, ok := b.agents.(AgentLookup); ok {
		return l.Agent(ctx, id)
	}
	for _, a := range b.agents.Agents(ctx) {
		if a.ID == id {
			return a, true
		}
	}
	return AgentInfo{}, false
}

// agentIDs lists the catalogue's agent ids for a message.
func (b *Chats) agentIDs(ctx context.Context) string {
	if b.agents == nil {
		return "(none configured)"
	}
	if l, ok := b.agents.(AgentLookup); ok {
		return strings.Join(l.AgentIDs(), ", ")
	}
	var ids []string
	for _, a := range b.agents.Agents(ctx) {
		ids = append(ids, a.ID)
	}
	return strings.Join(ids, ", ")
}

// checkSetting checks a model or effort for the chat's agent: the value's
// shape always (agent.ValidArgValue), and the agent's declared list where
// the catalogue knows the agent. A refusal message names the valid values
// and never echoes a value of the wrong shape.
func (b *Chats) checkSetting(ctx context.Context, agentID, what, v string) (string, bool) {
	if v == "" {
		return "", true
	}
	info, known := b.agentInfo(ctx, agentID)
	valid := func() string {
		if !known {
			return "letters, digits and . _ : / @ + -, not starting with -"
		}
		if what == "model" {
			return info.Args.ValidModels()
		}
		return info.Args.ValidEfforts()
	}
	if err := agent.ValidArgValue(v); err != nil {
		return fmt.Sprintf("That is not a valid %s; nothing was changed. Valid for %s: %s.", what, agentID, valid()), false
	}
	if !known {
		return "", true
	}
	check := info.Args.CheckModel
	if what == "effort" {
		check = info.Args.CheckEffort
	}
	if check(v) != nil {
		return fmt.Sprintf("%s does not take %s %s; nothing was changed. Valid: %s.", agentID, what, v, valid()), false
	}
	return "", true
}

func (b *Chats) agentsTable(ctx context.Context) string {
	if b.agents == nil {
		return "No agents are configured."
	}
	var sb strings.Builder
	for _, a := range b.agents.Agents(ctx) {
		switch {
		case a.Installed:
			fmt.Fprintf(&sb, "  %-10s %s", a.ID, a.Version)
			if len(a.Models) > 0 {
				fmt.Fprintf(&sb, "  models: %s", strings.Join(a.Models, ", "))
			}
		default:
			fmt.Fprintf(&sb, "  %-10s not installed", a.ID)
			if a.InstallHint != "" {
				fmt.Fprintf(&sb, " (install: %s)", a.InstallHint)
			}
		}
		if a.Problem != "" {
			fmt.Fprintf(&sb, "  %s", a.Problem)
		}
		sb.WriteString("\n")
	}
	return strings.TrimRight(sb.String(), "\n")
}

func orDefault(s string) string {
	if s == "" {
		return "(default)"
	}
	return s
}
