// Package prompt is the prompt service: it starts and cancels runs, builds the
// provider-neutral RunRequest, projects provider events into persisted chat events
// through the run hub, keeps native sessions per provider and recovers from stale
// ones.
package prompt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/agentcore/runhub"
)

// EventUserMessage is the type of the user's prompt in the chat log
// (chatlog.TypeUserMessage).
const EventUserMessage = chatlog.TypeUserMessage

// System event subtypes the service persists.
const (
	SubtypeSessionRecovered = "session_recovered"
	// SubtypeVersionNotice is the one-line notice that the agent's CLI is
	// outside its verified versions, at the first run of that agent and
	// version in the chat.
	SubtypeVersionNotice = "version_notice"
)

// Chat is the part of a chat the service needs.
type Chat struct {
	ID      agent.ChatID
	Agent   string
	Model   string
	Effort  string
	Mode    agent.Mode
	Project string
	Cwd     string
	// Sessions maps a provider id to its native session id.
	Sessions    map[string]string
	ForkPending bool
	// ForkedFrom is the chat this one was forked from, at the parent's event
	// ForkSeq: a run without a native session carries the parent's visible
	// history up to ForkSeq before the fork's own.
	ForkedFrom agent.ChatID
	ForkSeq    int64
	// ForkSessions are the parent's native sessions at the fork: on the
	// fork's first run (ForkPending) a provider whose agent forks natively
	// branches from its entry.
	ForkSessions map[string]string
}

// Chats reads chats and records their native sessions.
type Chats interface {
	Chat(ctx context.Context, id agent.ChatID) (Chat, error)
	// SetSession records the provider's native session; empty clears it.
	SetSession(ctx context.Context, chatID agent.ChatID, provider, sessionID string) error
}

// History reads a chat's persisted events.
type History interface {
	EventsAfter(ctx context.Context, chatID agent.ChatID, afterSeq int64, limit int) ([]runhub.Event, error)
	// EventsBefore returns up to limit events with seq < beforeSeq, newest
	// first; beforeSeq 0 reads from the end.
	EventsBefore(ctx context.Context, chatID agent.ChatID, beforeSeq int64, limit int) ([]runhub.Event, error)
}

// AgentConfig is the operator's configuration of one agent id.
type AgentConfig struct {
	// Provider is the provider implementing the agent (the id itself for built-ins).
	Provider agent.ProviderID
	Bin      string
	Args     []string
	Env      map[string]string
	Model    string
	// Skills is how the agent takes skills (slash commands, $-mentions,
	// instructions pointing at SKILL.md files, or none).
	Skills registry.SkillStrategy
	// IdleTimeout stops a run whose agent writes nothing for this long; 0
	// disables (agent.RunRequest.IdleTimeout).
	IdleTimeout time.Duration
	// NativeFork says the agent forks a native session itself
	// (registry.Definition.NativeFork): a fork's first run branches from the
	// parent's session. Without it a fork starts a fresh session with the
	// parent's visible transcript.
	NativeFork bool
}

// Options configure a Service.
type Options struct {
	// Agents maps an agent id to its configuration. An id without an entry uses
	// the provider of the same id with no overrides.
	Agents map[string]AgentConfig
	// Trouble, when set, tells a run's chat, outside its events, why the
	// run was stopped when its events could not be stored (a full disk, a
	// database away past the hub's outage limit): the chat's surfaces
	// follow the store and would show nothing. Once per run.
	Trouble func(ctx context.Context, chatID agent.ChatID, runID agent.RunID, text string)
	// Admit, when set, is asked before a run starts; its error refuses the
	// run (storage.min_free: the disk the database and the workspaces are
	// on is nearly full).
	Admit func(ctx context.Context) error
	// Approval applies to runs started without an interactive front-end.
	Approval agent.ApprovalPolicy
	// Owner names this replica in run rows.
	Owner string
	// Ledger records interactions; nil keeps them in events only.
	Ledger Ledger
	// Observer, when set, is told about runs and interactions (for metrics).
	Observer Observer
	// Preparer readies project chats' containers; nil runs every chat on the host.
	Preparer Preparer
	// Skills apply to every run (the config's defaults.skills).
	Skills []registry.Skill
	// Relay, when its Dir is set, runs every run's agent under a relay that
	// outlives this process (see reattach.go).
	Relay procrun.Relay
	// Router, when set, routes answers and cancels for runs of other replicas
	// to their owner (route.go); Listen starts it.
	Router Router
	// RouteTimeout bounds a routed request (default DefaultRouteTimeout).
	RouteTimeout time.Duration
	// Scrubber, when set, removes configured secret values from every event
	// before it is persisted (so from replay and every front-end too),
	// streamed text included (scrub.go). Nil persists events as they come.
	Scrubber Scrubber
	// Versions, when set, tells whether an agent's CLI is outside the
	// versions it was verified with; the chat is told once per agent and
	// version (notice.go).
	Versions VersionChecker
	// Reclaimer, when set, is asked to free a chat whose run lock another
	// process holds (see Reclaimer); nil leaves such a chat busy until the
	// lock is released or swept.
	Reclaimer Reclaimer
}

// Reclaimer frees a chat held by a run whose process is known to be gone
// (lifecycle.Liveness).
type Reclaimer interface {
	// Reclaim ends the chat's running run when its owner is dead and reports
	// whether it did.
	Reclaim(ctx context.Context, chatID string) (bool, error)
}

// Observer watches runs and interactions. Calls come from run goroutines and
// must not block.
type Observer interface {
	RunStarted(agent string)
	RunEnded(agent, status string, took time.Duration)
	InteractionOpened(kind string)
	InteractionClosed(kind, status string)
}

// nopObserver is the Observer when none is configured.
type nopObserver struct{}

func (nopObserver) RunStarted(string)                      {}
func (nopObserver) RunEnded(string, string, time.Duration) {}
func (nopObserver) InteractionOpened(string)               {}
func (nopObserver) InteractionClosed(string, string)       {}

// Service starts, cancels and answers runs.
type Service struct {
	hub       *runhub.Hub
	chats     Chats
	history   History
	ledger    Ledger
	providers map[agent.ProviderID]agent.Provider
	opts      Options
	log       *slog.Logger
	// live, once Reconfigure was called, replaces opts.Agents and opts.Skills.
	live atomic.Pointer[liveOptions]

	mu     sync.Mutex
	active map[agent.ChatID]*Run

	routeMu sync.Mutex
	routing bool                     // listening on this replica's channel
	waiting map[string]chan routeMsg // routed requests awaiting their reply, by id
}

// New returns a Service.
func New(hub *runhub.Hub, chats Chats, history History, providers []agent.Provider, logger *slog.Logger, opts Options) *Service {
	m := make(map[agent.ProviderID]agent.Provider, len(providers))
	for _, p := range providers {
		m[p.ID()] = p
	}
	if opts.Approval == "" {
		opts.Approval = agent.ApprovalAsk
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	return &Service{
		hub: hub, chats: chats, history: history, ledger: opts.Ledger, providers: m, opts: opts,
		log: logger, active: map[agent.ChatID]*Run{}, waiting: map[string]chan routeMsg{},
	}
}

// StartRequest is one prompt from a user.
type StartRequest struct {
	ChatID agent.ChatID
	Prompt string
	Images []agent.Image
	// By names the user ("console", "slack:U123").
	By string
	// Interactive says a front-end can answer interactions; otherwise the
	// service's approval policy applies.
	Interactive bool
	// InteractionTimeout, when positive, declines requests nobody answered in
	// time (recorded as timed_out); zero waits for an answer.
	InteractionTimeout time.Duration
	// Skills are applied to the prompt in the agent's declared way, after the
	// service's default skills.
	Skills []registry.Skill
}

// Run is a started run.
type Run struct {
	ID     agent.RunID
	ChatID agent.ChatID
	Agent  string

	cancel    context.CancelFunc
	lostOnce  sync.Once // the run's events stopped being stored
	responses chan agent.InteractionResponse
	done      chan struct{}
	// ending is closed once the run's terminal event is persisted; the lease is
	// released right after.
	ending     chan struct{}
	endingOnce sync.Once

	mu                 sync.Mutex
	status             runhub.RunStatus
	err                error
	interactions       map[string]*interactionState // open requests by id
	resolved           map[string]bool              // ids resolved earlier in the run
	interactionTimeout time.Duration

	relay *procrun.RelayRun // nil without a relay
	// model is the model the agent last reported (run goroutine only).
	model  string
	replay *replayState // set on a reattached run
}

// Done is closed when the run has ended and its lease is released.
func (r *Run) Done() <-chan struct{} { return r.done }

// Status is the final status (completed, failed or interrupted; StatusDetached
// for a run this process stopped following) once Done.
func (r *Run) Status() runhub.RunStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// Err is the run's error once Done (nil for completed and interrupted runs).
func (r *Run) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// liveOptions are the options Reconfigure replaces.
type liveOptions struct {
	agents map[string]AgentConfig
	skills []registry.Skill
}

// Reconfigure replaces Options.Agents and Options.Skills (a config reload):
// runs started after it use them, running runs keep what they started with.
// It is safe to call while runs start; the caller must not change the map
// afterwards.
func (s *Service) Reconfigure(agents map[string]AgentConfig, skills []registry.Skill) {
	s.live.Store(&liveOptions{agents: agents, skills: skills})
}

// liveOpts returns the agents and skills in force.
func (s *Service) liveOpts() liveOptions {
	if l := s.live.Load(); l != nil {
		return *l
	}
	return liveOptions{agents: s.opts.Agents, skills: s.opts.Skills}
}

// Provider returns the provider that runs the agent id, and its configuration.
func (s *Service) Provider(agentID string) (agent.Provider, AgentConfig, error) {
	cfg, ok := s.liveOpts().agents[agentID]
	if !ok || cfg.Provider == "" {
		cfg.Provider = agent.ProviderID(agentID)
	}
	p, ok := s.providers[cfg.Provider]
	if !ok {
		return nil, cfg, fmt.Errorf("unknown agent %q", agentID)
	}
	return p, cfg, nil
}

// Active returns the chat's running run, if any. A run that has persisted its
// terminal event no longer counts, though it may hold the chat for a moment more.
func (s *Service) Active(chatID agent.ChatID) (*Run, bool) {
	r, ok := s.current(chatID)
	if !ok {
		return nil, false
	}
	select {
	case <-r.ending:
		return nil, false
	default:
		return r, true
	}
}

func (s *Service) current(chatID agent.ChatID) (*Run, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.active[chatID]
	return r, ok
}

// Start takes the chat's run lock, persists the prompt and runs the agent in the
// background. A busy chat returns an error wrapping agent.ErrPromptAlreadyRunning
// and persists nothing.
func (s *Service) Start(ctx context.Context, req StartRequest) (*Run, error) {
	chat, err := s.chats.Chat(ctx, req.ChatID)
	if err != nil {
		return nil, fmt.Errorf("load chat %s: %w", req.ChatID, err)
	}
	prov, cfg, err := s.Provider(chat.Agent)
	if err != nil {
		return nil, err
	}
	if s.opts.Admit != nil {
		if err := s.opts.Admit(ctx); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotAdmitted, err)
		}
	}
	model := chat.Model
	if model == "" {
		model = cfg.Model
	}
	text, err := registry.ApplySkills(req.Prompt, cfg.Skills, append(slices.Clone(s.liveOpts().skills), req.Skills...))
	if err != nil {
		return nil, err
	}
	runID := agent.RunID(uuid.NewString())
	run := &Run{
		ID: runID, ChatID: chat.ID, Agent: chat.Agent,
		responses: make(chan agent.InteractionResponse, 8),
		done:      make(chan struct{}),
		ending:    make(chan struct{}),

		interactions:       map[string]*interactionState{},
		resolved:           map[string]bool{},
		interactionTimeout: req.InteractionTimeout,
		relay:              s.newRelayRun(string(runID)),
	}
	s.awaitEnding(ctx, chat.ID)
	lease, err := s.acquire(ctx, runhub.RunRecord{
		ID: run.ID, ChatID: run.ChatID, Agent: chat.Agent, Model: model,
		Owner: s.opts.Owner, StartedBy: req.By,
	})
	if err != nil {
		return nil, err
	}
	// History is read before this prompt is appended so that it is not repeated.
	transcript := ""
	if resume, _ := resumeOf(chat, string(prov.ID()), cfg); resume == "" {
		if transcript, err = s.transcript(ctx, run.ChatID); err != nil {
			s.log.WarnContext(ctx, "read transcript", logkey.ChatID, chat.ID, "err", err)
		}
	}
	if _, err := s.appendJSON(ctx, run.ChatID, run.ID, EventUserMessage, chatlog.UserMessage{Text: req.Prompt, By: req.By, Images: len(req.Images)}); err != nil {
		_ = lease.Release(context.WithoutCancel(ctx), runhub.StatusFailed, nil, err.Error())
		return nil, fmt.Errorf("persist prompt: %w", err)
	}
	if _, err := s.appendJSON(ctx, run.ChatID, run.ID, chatlog.TypeRunStarted, chatlog.RunStarted{Type: agent.EventRunStarted, Agent: chat.Agent, Model: model, By: req.By}); err != nil {
		_ = lease.Release(context.WithoutCancel(ctx), runhub.StatusFailed, nil, err.Error())
		return nil, fmt.Errorf("persist run start: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	run.cancel = cancel
	s.mu.Lock()
	s.active[chat.ID] = run
	s.mu.Unlock()

	areq := agent.RunRequest{
		ChatID: string(chat.ID), RunID: string(run.ID),
		Prompt: text, Images: req.Images,
		Model: model, Effort: chat.Effort, Mode: chat.Mode,
		Cwd: chat.Cwd, Project: chat.Project,
		Bin: cfg.Bin, Args: cfg.Args, Env: cfg.Env,
		Approval: s.opts.Approval, IdleTimeout: cfg.IdleTimeout,
	}
	if req.Interactive {
		areq.Approval = agent.ApprovalAsk
		areq.Responses = run.responses
	} else if areq.Approval == agent.ApprovalAsk {
		areq.Approval = agent.ApprovalDeny
	}
	areq.ResumeID, areq.Fork = resumeOf(chat, string(prov.ID()), cfg)
	if areq.Fork && chat.ForkedFrom != "" {
		areq.ForkOf = string(chat.ForkedFrom)
	}
	s.opts.Observer.RunStarted(run.Agent)
	go s.executeSafely(runCtx, run, lease, prov, chat, areq, transcript)
	return run, nil
}

// resumeOf returns the native session a run of the chat continues with the
// provider, and whether it forks it. A chat's own session is resumed. A fork's
// first run (ForkPending) branches from the parent's session where the agent
// forks natively; any other agent starts a fresh session, given the visible
// transcript (the parent's then the fork's), and never resumes the parent's
// session, which would change it.
func resumeOf(chat Chat, provider string, cfg AgentConfig) (string, bool) {
	if id := chat.Sessions[provider]; id != "" {
		return id, chat.ForkPending && chat.ForkedFrom == "" // a fork made before fork_sessions existed
	}
	if id := chat.ForkSessions[provider]; id != "" && chat.ForkPending && cfg.NativeFork {
		return id, true
	}
	return "", false
}

// acquire takes the chat's run lock. When another process holds it in the
// database, the Reclaimer may find that process gone and free the chat; the
// lock is then tried once more.
func (s *Service) acquire(ctx context.Context, rec runhub.RunRecord) (*runhub.Lease, error) {
	rec.StartedAt = time.Now().UTC()
	lease, err := s.hub.Acquire(ctx, rec)
	if err == nil || s.opts.Reclaimer == nil || !errors.Is(err, agent.ErrPromptAlreadyRunning) {
		return lease, err
	}
	if _, here := s.hub.Running(rec.ChatID); here {
		return nil, err // this process's own run
	}
	freed, rerr := s.opts.Reclaimer.Reclaim(ctx, string(rec.ChatID))
	if rerr != nil {
		s.log.WarnContext(ctx, "reclaim a busy chat", logkey.ChatID, rec.ChatID, "err", rerr)
	}
	if !freed {
		return nil, err
	}
	rec.StartedAt = time.Now().UTC()
	return s.hub.Acquire(ctx, rec)
}

// endingGrace bounds how long a new prompt waits for a run that has already
// reported its end to release the chat.
const endingGrace = 5 * time.Second

// awaitEnding waits for the chat's active run to finish when it has already
// persisted its terminal event, so that a prompt sent right after an answer
// appeared is not refused as busy.
func (s *Service) awaitEnding(ctx context.Context, chatID agent.ChatID) {
	r, ok := s.current(chatID)
	if !ok {
		return
	}
	select {
	case <-r.ending:
	default:
		return
	}
	t := time.NewTimer(endingGrace)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// Shutdown cancels every running run and waits until they have ended (each
// persists its run.interrupted and releases its lock) or ctx ends.
func (s *Service) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	runs := make([]*Run, 0, len(s.active))
	for _, r := range s.active {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	for _, r := range runs {
		r.cancel()
	}
	for _, r := range runs {
		select {
		case <-r.done:
		case <-ctx.Done():
			return fmt.Errorf("shutdown: run %s of chat %s still ending: %w", r.ID, r.ChatID, ctx.Err())
		}
	}
	return nil
}

// Fence stops this process's runs that owned reports it no longer owns (the
// database gave them to another replica, or marked them interrupted while this
// process could not reach it), so that a chat never runs twice. It returns the
// ids of the runs it stopped.
func (s *Service) Fence(ctx context.Context, owned func(ctx context.Context, runID string) (bool, error)) []string {
	s.mu.Lock()
	runs := make([]*Run, 0, len(s.active))
	for _, r := range s.active {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	var stopped []string
	for _, r := range runs {
		ok, err := owned(ctx, string(r.ID))
		if err != nil || ok {
			continue // unknown: keep running rather than stop on a database hiccup
		}
		s.log.WarnContext(ctx, "run no longer ours in the database, stopping it here", logkey.ChatID, r.ChatID, logkey.RunID, r.ID)
		r.cancel()
		stopped = append(stopped, string(r.ID))
	}
	return stopped
}

// Cancel stops the chat's running run, here or (routed, see Stop) on the
// replica that owns it. It reports whether a run was stopped.
func (s *Service) Cancel(chatID agent.ChatID) bool {
	r, ok := s.Active(chatID)
	if ok {
		r.cancel()
		return true
	}
	if s.opts.Router == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.routeTimeout()+time.Second)
	defer cancel()
	if err := s.Stop(ctx, chatID); err != nil {
		if !errors.Is(err, ErrRunNotActive) {
			s.log.WarnContext(ctx, "cancel a run of another replica", logkey.ChatID, chatID, "err", err)
		}
		return false
	}
	return true
}

func (s *Service) appendJSON(ctx context.Context, chatID agent.ChatID, runID agent.RunID, typ string, v any) (runhub.Event, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return runhub.Event{}, err
	}
	if s.opts.Scrubber != nil {
		b = s.opts.Scrubber.JSON(b) // the user's own prompt may hold a secret
	}
	return s.hub.Append(ctx, chatID, runID, typ, b)
}
