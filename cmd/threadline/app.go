// Wiring: the store, run hub, providers, prompt service and chatops bot.

package main

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/execution"
	"github.com/threadline-bot/threadline/agentcore/lifecycle"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/metrics"
	"github.com/threadline-bot/threadline/agentcore/outputcap"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/agentcore/threadtools"
	"github.com/threadline-bot/threadline/agentcore/worktrees"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/configs/agentset"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/lifestore"
)

// app is everything a command needs, wired.
type app struct {
	cfg     *configs.Config
	log     *slog.Logger
	store   *store.Store
	hub     *runhub.Hub
	prompt  *prompt.Service
	bot     *chatops.Chats
	owner   string
	metrics *metrics.Metrics
	agents  *agentset.Set
	// redactor scrubs secret values from what is posted to chat.
	redactor *redact.Redactor
	// files creates attached files in chats' working directories for the
	// agent user (isolation.go).
	files execution.WorkFiles
	deskState
	reloadState // SIGHUP (reload.go)

	// live is this replica's name and liveness timing; router routes answers
	// and cancels to other replicas (nil on SQLite). See replicas.go.
	live   replicaOptions
	router *store.Router
	// life heartbeats, sweeps and fences runs (agentcore/lifecycle).
	life *lifecycle.Liveness
	// workspaces are the chats' own clones and branches (workspaces.go).
	workspaces *worktrees.Manager

	liveCtx  context.Context
	stopLive context.CancelFunc
	liveDone chan struct{}
}

// openApp opens and migrates the store and wires the services.
func openApp(ctx context.Context, cfg *configs.Config, log *slog.Logger, approval agent.ApprovalPolicy, opts ...appOption) (*app, error) {
	o := appOptionsOf(opts)
	agents, err := loadAgents(cfg, log)
	if err != nil {
		return nil, err
	}
	if o.relay.Dir != "" {
		o.relay.Mask = append(cfg.Secrets(), agents.Secrets...) // relays scrub them from their journals
	}
	if o.sandboxed {
		if o.sandboxing, err = sandboxing(cfg, agents, o.isolation); err != nil {
			return nil, err
		}
	}
	st, err := store.OpenAndMigrate(ctx, cfg.Database.URL, log)
	if err != nil {
		return nil, err
	}
	live := o.replica.withDefaults()
	owner := live.owner
	router, err := openRouter(ctx, st, log)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	m := metrics.New()
	m.Known(agents.Runnable(), knownMethods(platformsOf(cfg)...))
	hub := runhub.New(st, log, runhub.Options{Owner: owner, Persisted: m.Persisted})
	chats := chatstore.Store{St: st}
	// Secrets of the config and of projects (added as runs load them) are
	// scrubbed from every event before it is persisted (so from replay, every
	// front-end and --events jsonl), from everything posted to chat, and from logs.
	red := cfg.Redactor()
	life := lifecycle.New(lifestore.Store{St: st}, hub, lifecycle.Config{Owner: owner, RelayDir: cmp.Or(o.relay.Dir, configs.RelayDir()),
		HeartbeatEvery: live.heartbeatEvery, StaleAfter: live.staleAfter, Log: log})
	versions := &agentset.VersionCheck{Log: log}
	popts := prompt.Options{Reclaimer: life, Versions: versions,
		Agents: agents.Configs, Approval: approval, Owner: owner, Ledger: chats, Observer: m,
		Preparer: newPreparer(cfg, st, log, red), Skills: cfg.Skills(), Relay: o.relay, Scrubber: red,
		Admit: admitStorage(cfg),
	}
	if router != nil {
		popts.Router = router
	}
	ws, err := newWorkspaces(cfg, st, log, owner, o.isolation, o.sandboxing)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	// The thread tools sit inside the isolation: they see the run's own
	// TMPDIR, where its socket goes.
	threads := &toolThreads{}
	popts.Trouble = func(ctx context.Context, chatID agent.ChatID, runID agent.RunID, text string) {
		a := threads.app.Load()
		if a == nil {
			return
		}
		if err := a.desk().TellChat(ctx, chatID, text); err != nil {
			log.Warn("tell a chat why its run stopped", logkey.ChatID, chatID, logkey.RunID, runID, logkey.Err, err)
		}
	}
	mcp, problem := runnableThreadTools(o.isolation)
	if problem != "" {
		log.Warn("runs go on without the thread tools (send_file, fetch_thread_file, the agent's images): " + problem)
	}
	tooled := threadtools.Wrap(agents.Providers, threadtools.Tools{Binary: mcp, Thread: threads.thread, Iso: o.isolation, Secrets: red, MaxBytes: cfg.FileBytes(), Logger: log})
	providers := outputcap.Wrap(ws.Wrap(execution.HostIsolated(tooled, o.isolation, o.sandboxing, o.workRoot)), cfg.Limits.RunOutputBytes, log)
	ps := prompt.New(hub, chats, st, providers, log, popts)
	a := &app{cfg: cfg, log: log, store: st, hub: hub, prompt: ps, owner: owner, metrics: m, agents: agents, redactor: red, live: live, router: router, life: life, workspaces: ws}
	versions.Table = a.agentTable
	threads.app.Store(a)
	a.files = execution.WorkFiles{Iso: o.isolation, Root: o.workRoot}
	a.bot = chatops.New(chats, ps, chatstore.Feed{Hub: hub, St: st}, a, log)
	a.bot.InteractionTimeout = cfg.Defaults.InteractionTimeout.Duration
	a.bot.Workspaces = chatWorkspaces{m: ws}
	a.bot.Redact = red
	var reattach lifecycle.Reattacher
	if o.relay.Dir != "" {
		reattach = ps
	}
	life.Recover(ctx, reattach)
	a.liveCtx, a.stopLive = context.WithCancel(context.WithoutCancel(ctx))
	a.liveDone = make(chan struct{})
	if err := ps.Listen(a.liveCtx); err != nil {
		a.stopLive()
		_ = router.Close() // ps.Listen fails only with a router
		_ = hub.Close()
		_ = st.Close()
		return nil, err
	}
	go func() {
		defer close(a.liveDone)
		life.Run(a.liveCtx, ps)
	}()
	return a, nil
}

func (a *app) Close() error {
	a.stopLive()
	<-a.liveDone
	a.workspaces.Shutdown()
	var rerr error
	if a.router != nil {
		rerr = a.router.Close()
	}
	return errors.Join(rerr, a.hub.Close(), a.store.Close())
}

// openStore loads the config file (configs.Load) and opens its migrated
// store, for the commands that need no more (migrate, chats, audit, project).
func openStore(ctx context.Context, config string, stderr io.Writer) (*configs.Config, *store.Store, error) {
	cfg, err := configs.Load(config)
	if err != nil {
		return nil, nil, err
	}
	st, err := store.OpenAndMigrate(ctx, cfg.Database.URL, newLogger(stderr, slog.LevelWarn, cfg))
	if err != nil {
		return nil, nil, err
	}
	return cfg, st, nil
}

// launch resolves an agent id to its definition and executable, as a run would.
func (a *app) launch(id string) (registry.Definition, string, error) {
	return a.agentTable().Launch(id)
}

// Agents reports every known agent; it implements chatops.Agents.
func (a *app) Agents(ctx context.Context) []chatops.AgentInfo {
	return chatops.AgentInfos(a.agentTable().Probe(ctx, a.log))
}

// defaultAgents are tried in this order when the config names no default.
var defaultAgents = agentset.DefaultOrder

// defaultAgent is the configured default, else the first installed agent.
func (a *app) defaultAgent() (string, error) { return a.agentTable().Default(a.cfg.Defaults.Agent) }
