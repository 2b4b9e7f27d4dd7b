// Wiring: the store, run hub, providers, prompt service and chatops bot.

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/providers/claude"
	"github.com/threadline-bot/threadline/providers/codex"
	"github.com/threadline-bot/threadline/providers/minimax"
	"github.com/threadline-bot/threadline/store"
)

// builtin describes a built-in agent adapter.
type builtin struct {
	name        string
	defaultBin  string
	installHint string
	new         func(log *slog.Logger) agent.Provider
}

var builtins = map[string]builtin{
	"claude": {
		name:        "Claude Code",
		defaultBin:  "claude",
		installHint: "npm install -g @anthropic-ai/claude-code",
		new: func(log *slog.Logger) agent.Provider {
			return claude.New(log, claude.Options{})
		},
	},
	"codex": {
		name:        "Codex",
		defaultBin:  "codex",
		installHint: "npm install -g @openai/codex",
		new: func(log *slog.Logger) agent.Provider {
			return codex.New(log, codex.Options{})
		},
	},
	"minimax": {
		name:        "MiniMax (through the Codex CLI)",
		defaultBin:  "codex",
		installHint: "npm install -g @openai/codex, then set agents.minimax.env.MINIMAX_API_KEY",
		new: func(log *slog.Logger) agent.Provider {
			return minimax.New(log, minimax.Options{})
		},
	},
}

func builtinIDs() []string {
	ids := make([]string, 0, len(builtins))
	for id := range builtins {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// app is everything a command needs, wired.
type app struct {
	cfg     *Config
	log     *slog.Logger
	store   *store.Store
	hub     *runhub.Hub
	prompt  *prompt.Service
	bot     *chatops.Bot
	owner   string
	metrics *metrics

	liveCtx  context.Context
	stopLive context.CancelFunc
	liveDone chan struct{}
}

// openApp opens and migrates the store and wires the services.
func openApp(ctx context.Context, cfg *Config, log *slog.Logger, approval agent.ApprovalPolicy) (*app, error) {
	agents := map[string]prompt.AgentConfig{}
	for id := range cfg.Agents {
		pid, a, err := cfg.agent(id)
		if err != nil {
			return nil, err
		}
		agents[id] = prompt.AgentConfig{Provider: agent.ProviderID(pid), Bin: a.Bin, Args: a.Args, Env: a.Env, Model: a.Model}
	}
	st, err := store.OpenAndMigrate(ctx, cfg.Database.URL, log)
	if err != nil {
		return nil, err
	}
	owner := replicaID()
	m := newMetrics()
	hub := runhub.New(st, log, runhub.Options{Owner: owner, Persisted: m.persisted})
	var providers []agent.Provider
	for _, id := range builtinIDs() {
		providers = append(providers, builtins[id].new(log.With("agent", id)))
	}
	chats := chatStore{st}
	ps := prompt.New(hub, chats, st, providers, log, prompt.Options{
		Agents: agents, Approval: approval, Owner: owner, Ledger: ledger{st}, Observer: m,
		Preparer: newPreparer(cfg, st, log),
	})
	a := &app{cfg: cfg, log: log, store: st, hub: hub, prompt: ps, owner: owner, metrics: m}
	a.bot = chatops.New(chats, ps, feed{hub: hub, st: st}, a, log)
	a.sweep(ctx)
	a.liveCtx, a.stopLive = context.WithCancel(context.WithoutCancel(ctx))
	a.liveDone = make(chan struct{})
	go a.heartbeat()
	return a, nil
}

func (a *app) Close() error {
	a.stopLive()
	<-a.liveDone
	return errors.Join(a.hub.Close(), a.store.Close())
}

// replicaID names this process in run rows.
func replicaID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// launch resolves an agent id to its provider, configuration and executable path.
func (a *app) launch(id string) (builtin, string, error) {
	pid, ac, err := a.cfg.agent(id)
	if err != nil {
		return builtin{}, "", err
	}
	b := builtins[pid]
	bin := ac.Bin
	if bin == "" {
		bin = b.defaultBin
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return b, bin, fmt.Errorf("%w: %s (%s) was not found (looked for %q). Install it with: %s",
			agent.ErrNotInstalled, id, b.name, bin, b.installHint)
	}
	return b, path, nil
}

// Agents reports every configured and built-in agent; it implements chatops.Agents.
func (a *app) Agents(ctx context.Context) []chatops.AgentInfo { return a.probeAll(ctx) }

// agentIDs lists the built-in and configured agent ids, sorted.
func (a *app) agentIDs() []string {
	ids := map[string]bool{}
	for _, id := range builtinIDs() {
		ids[id] = true
	}
	for id := range a.cfg.Agents {
		ids[id] = true
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	return sorted
}

// probeAll probes every known agent concurrently (version, models), isolating
// failures to their agent. It needs no store.
func (a *app) probeAll(ctx context.Context) []chatops.AgentInfo {
	ids := a.agentIDs()
	out := make([]chatops.AgentInfo, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { out[i] = a.probe(ctx, id) })
	}
	wg.Wait()
	return out
}

func (a *app) probe(ctx context.Context, id string) chatops.AgentInfo {
	info := chatops.AgentInfo{ID: id}
	b, path, err := a.launch(id)
	info.InstallHint = b.installHint
	if err != nil {
		if !errors.Is(err, agent.ErrNotInstalled) {
			info.Problem = err.Error()
		}
		return info
	}
	info.Installed = true
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	caps, err := b.new(a.log).Capabilities(ctx, agent.CapabilityRequest{Bin: path})
	if err != nil {
		info.Problem = err.Error()
		return info
	}
	info.Version, info.Models = caps.Version, caps.Models
	return info
}

// defaultAgent is the configured default, else the first installed built-in.
func (a *app) defaultAgent() (string, error) {
	if a.cfg.Defaults.Agent != "" {
		return a.cfg.Defaults.Agent, nil
	}
	var missing []string
	for _, id := range builtinIDs() {
		_, _, err := a.launch(id)
		if err == nil {
			return id, nil
		}
		missing = append(missing, err.Error())
	}
	return "", fmt.Errorf("no agent CLI is installed:\n  %s", strings.Join(missing, "\n  "))
}

// chatStore adapts store.Store to chatops.ChatStore and prompt.Chats.
type chatStore struct{ st *store.Store }

func (c chatStore) CreateChat(ctx context.Context, ch chatops.Chat) (chatops.Chat, error) {
	if ch.ID == "" {
		ch.ID = uuid.NewString()
	}
	sc := store.Chat{ID: ch.ID, Title: ch.Title, Agent: ch.Agent, Model: ch.Model, Effort: ch.Effort, Mode: ch.Mode, Project: ch.Project, Cwd: ch.Cwd}
	if err := c.st.CreateChat(ctx, &sc); err != nil {
		return chatops.Chat{}, err
	}
	return ch, nil
}

func (c chatStore) GetChat(ctx context.Context, id string) (chatops.Chat, error) {
	sc, err := c.st.GetChat(ctx, id)
	if err != nil {
		return chatops.Chat{}, err
	}
	return chatops.Chat{ID: sc.ID, Title: sc.Title, Agent: sc.Agent, Model: sc.Model, Effort: sc.Effort, Mode: sc.Mode, Project: sc.Project, Cwd: sc.Cwd}, nil
}

func (c chatStore) UpdateChat(ctx context.Context, ch chatops.Chat) error {
	sc, err := c.st.GetChat(ctx, ch.ID)
	if err != nil {
		return err
	}
	sc.Title, sc.Agent, sc.Model, sc.Effort, sc.Mode, sc.Project, sc.Cwd = ch.Title, ch.Agent, ch.Model, ch.Effort, ch.Mode, ch.Project, ch.Cwd
	return c.st.UpdateChat(ctx, sc)
}

func (c chatStore) Chat(ctx context.Context, id string) (prompt.Chat, error) {
	sc, err := c.st.GetChat(ctx, id)
	if err != nil {
		return prompt.Chat{}, err
	}
	return prompt.Chat{
		ID: sc.ID, Agent: sc.Agent, Model: sc.Model, Effort: sc.Effort, Mode: agent.Mode(sc.Mode),
		Project: sc.Project, Cwd: sc.Cwd, Sessions: sc.Sessions, ForkPending: sc.ForkPending,
	}, nil
}

func (c chatStore) SetSession(ctx context.Context, chatID, provider, sessionID string) error {
	return c.st.SetSession(ctx, chatID, provider, sessionID)
}

// feed adapts the hub and store to chatops.Feed.
type feed struct {
	hub *runhub.Hub
	st  *store.Store
}

func (f feed) Subscribe(ctx context.Context, chatID string, afterSeq int64) <-chan chatops.Event {
	return f.hub.Subscribe(ctx, chatID, afterSeq)
}

func (f feed) LastSeq(ctx context.Context, chatID string) (int64, error) {
	return f.st.LastSeq(ctx, chatID)
}

// ledger adapts store.Store to prompt.Ledger.
type ledger struct{ st *store.Store }

func (l ledger) RecordInteraction(ctx context.Context, in prompt.InteractionRecord) error {
	return l.st.CreateInteraction(ctx, store.Interaction{
		RunID: in.RunID, ID: in.ID, ChatID: in.ChatID, NativeID: in.NativeID, Kind: in.Kind, Payload: in.Payload,
	})
}

func (l ledger) ResolveInteraction(ctx context.Context, runID, id, status, decision, by string) error {
	return l.st.ResolveInteraction(ctx, runID, id, status, decision, by)
}
