// Wiring: the store, run hub, providers, prompt service and chatops bot.

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/google/uuid"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/redact"
	"github.com/threadline-bot/threadline/store"
)

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
	agents  *agentSet
	// redactor scrubs secret values from what is posted to chat.
	redactor *redact.Redactor
	deskState

	liveCtx  context.Context
	stopLive context.CancelFunc
	liveDone chan struct{}
}

// openApp opens and migrates the store and wires the services.
func openApp(ctx context.Context, cfg *Config, log *slog.Logger, approval agent.ApprovalPolicy) (*app, error) {
	agents, err := loadAgents(cfg, log)
	if err != nil {
		return nil, err
	}
	st, err := store.OpenAndMigrate(ctx, cfg.Database.URL, log)
	if err != nil {
		return nil, err
	}
	owner := replicaID()
	m := newMetrics()
	hub := runhub.New(st, log, runhub.Options{Owner: owner, Persisted: m.persisted})
	chats := chatStore{st}
	// Secrets of the config and of projects (added as runs load them) are
	// scrubbed from everything posted to chat.
	red := redact.New(cfg.secrets()...)
	ps := prompt.New(hub, chats, st, agents.providers, log, prompt.Options{
		Agents: agents.configs, Approval: approval, Owner: owner, Ledger: ledger{st}, Observer: m,
		Preparer: newPreparer(cfg, st, log, red), Skills: cfg.skills(),
	})
	a := &app{cfg: cfg, log: log, store: st, hub: hub, prompt: ps, owner: owner, metrics: m, agents: agents, redactor: red}
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

// launch resolves an agent id to its definition and executable, as a run would.
func (a *app) launch(id string) (registry.Definition, string, error) { return a.agents.launch(id) }

// Agents reports every known agent; it implements chatops.Agents.
func (a *app) Agents(ctx context.Context) []chatops.AgentInfo {
	return agentInfos(a.agents.probe(ctx, a.log))
}

// defaultAgents are tried in this order when the config names no default.
var defaultAgents = []string{"claude", "codex", "opencode", "gemini", "qwen", "pi", "kimi"}

// defaultAgent is the configured default, else the first installed agent.
func (a *app) defaultAgent() (string, error) {
	if a.cfg.Defaults.Agent != "" {
		return a.cfg.Defaults.Agent, nil
	}
	var missing []string
	for _, id := range defaultAgents {
		_, _, err := a.launch(id)
		if err == nil {
			return id, nil
		}
		missing = append(missing, err.Error())
	}
	return "", fmt.Errorf("no agent CLI is installed:\n  %s\n(`threadline agents --all` lists every agent Threadline can run)", strings.Join(missing, "\n  "))
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
