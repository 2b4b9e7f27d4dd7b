// Package chatstore is the store as its consumers declare it: the chat
// settings of chatops.ChatStore and prompt.Chats, the thread bindings and
// rendered messages of chatops.Store, project access lists (chatops.Projects),
// the interaction ledger (prompt.Ledger) and the event feed (chatops.Feed).
// The store knows only its own row types; this package maps them, so store
// imports neither chatops nor the prompt service.
package chatstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/store"
)

// Store is a *store.Store seen through chatops' and the prompt service's
// interfaces.
type Store struct{ St *store.Store }

var (
	_ chatops.ChatStore     = Store{}
	_ chatops.Store         = Store{}
	_ chatops.ChatForker    = Store{}
	_ chatops.Projects      = Store{}
	_ prompt.Chats          = Store{}
	_ prompt.Ledger         = Store{}
	_ prompt.ModelRecorder  = Store{}
	_ prompt.VersionNoticer = Store{}
	_ chatops.Feed          = Feed{}
)

// CreateChat stores a new chat; an empty id gets a fresh one.
func (s Store) CreateChat(ctx context.Context, ch chatops.Chat) (chatops.Chat, error) {
	if ch.ID == "" {
		ch.ID = agent.ChatID(uuid.NewString())
	}
	sc := store.Chat{ID: string(ch.ID), Title: ch.Title, Agent: ch.Agent, Model: ch.Model, Effort: ch.Effort, Mode: ch.Mode, Project: ch.Project, Cwd: ch.Cwd}
	if err := s.St.CreateChat(ctx, &sc); err != nil {
		return chatops.Chat{}, err
	}
	return ch, nil
}

// GetChat returns a chat's settings.
func (s Store) GetChat(ctx context.Context, id agent.ChatID) (chatops.Chat, error) {
	sc, err := s.St.GetChat(ctx, string(id))
	if err != nil {
		return chatops.Chat{}, err
	}
	return chatops.Chat{ID: agent.ChatID(sc.ID), Title: sc.Title, Agent: sc.Agent, Model: sc.Model, Effort: sc.Effort, Mode: sc.Mode, Project: sc.Project, Cwd: sc.Cwd}, nil
}

// UpdateChat stores a chat's settings, keeping its sessions.
func (s Store) UpdateChat(ctx context.Context, ch chatops.Chat) error {
	sc, err := s.St.GetChat(ctx, string(ch.ID))
	if err != nil {
		return err
	}
	sc.Title, sc.Agent, sc.Model, sc.Effort, sc.Mode, sc.Project, sc.Cwd = ch.Title, ch.Agent, ch.Model, ch.Effort, ch.Mode, ch.Project, ch.Cwd
	return s.St.UpdateChat(ctx, sc)
}

// Chat returns what the prompt service needs of a chat.
func (s Store) Chat(ctx context.Context, id agent.ChatID) (prompt.Chat, error) {
	sc, err := s.St.GetChat(ctx, string(id))
	if err != nil {
		return prompt.Chat{}, err
	}
	return prompt.Chat{
		ID: agent.ChatID(sc.ID), Agent: sc.Agent, Model: sc.Model, Effort: sc.Effort, Mode: agent.Mode(sc.Mode),
		Project: sc.Project, Cwd: sc.Cwd, Sessions: sc.Sessions, ForkPending: sc.ForkPending,
		ForkedFrom: agent.ChatID(sc.ForkedFrom), ForkSeq: sc.ForkSeq, ForkSessions: sc.ForkSessions,
	}, nil
}

// SetAgentModel records the model the agent reported for a run
// (prompt.ModelRecorder).
func (s Store) SetAgentModel(ctx context.Context, runID agent.RunID, model string) error {
	return s.St.SetAgentModel(ctx, runID, model)
}

// LastAgentModel returns the model the agent reported in the chat's latest
// run that reported one (chatops.ReportedModels).
func (s Store) LastAgentModel(ctx context.Context, chatID agent.ChatID) (string, error) {
	return s.St.LastAgentModel(ctx, string(chatID))
}

// NoticeVersion records a chat's version notice (prompt.VersionNoticer).
func (s Store) NoticeVersion(ctx context.Context, chatID agent.ChatID, what string) (bool, error) {
	return s.St.NoticeVersion(ctx, chatID, what)
}

// SetSession records a provider's native session of the chat.
func (s Store) SetSession(ctx context.Context, chatID agent.ChatID, provider, sessionID string) error {
	return s.St.SetSession(ctx, string(chatID), provider, sessionID)
}

// RecordInteraction stores a pending interaction.
func (s Store) RecordInteraction(ctx context.Context, in prompt.InteractionRecord) error {
	return s.St.CreateInteraction(ctx, store.Interaction{
		RunID: string(in.RunID), ID: string(in.ID), ChatID: string(in.ChatID), NativeID: in.NativeID, Kind: in.Kind, Payload: in.Payload,
	})
}

// RunInteractions returns the run's interactions as the ledger has them
// (prompt.LedgerReader).
func (s Store) RunInteractions(ctx context.Context, chatID agent.ChatID, runID agent.RunID) ([]prompt.LedgerEntry, error) {
	ins, err := s.St.ListInteractions(ctx, string(chatID))
	if err != nil {
		return nil, err
	}
	var out []prompt.LedgerEntry
	for _, in := range ins {
		if in.RunID == string(runID) {
			out = append(out, prompt.LedgerEntry{ID: in.ID, Status: in.Status, Decision: in.Decision, By: in.ResolvedBy})
		}
	}
	return out, nil
}

// ResolveInteraction stores an interaction's outcome.
func (s Store) ResolveInteraction(ctx context.Context, runID agent.RunID, id agent.InteractionID, status, decision, by string) error {
	return s.St.ResolveInteraction(ctx, runID, id, status, decision, by)
}

// ProjectAccess returns who may bind chats to the project. A project that
// does not exist is an error wrapping chatops.ErrNoProject and
// store.ErrNotFound.
func (s Store) ProjectAccess(ctx context.Context, name string) (chatops.ProjectAccess, error) {
	p, err := s.St.GetProject(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return chatops.ProjectAccess{}, fmt.Errorf("%w: %w", chatops.ErrNoProject, err)
	}
	if err != nil {
		return chatops.ProjectAccess{}, err
	}
	return chatops.ProjectAccess{Name: p.Name, Channels: p.Channels, Allow: p.Allow}, nil
}

// Binding returns the chat bound to the thread; ok is false when none is.
func (s Store) Binding(ctx context.Context, p chatops.Place) (chatops.Binding, bool, error) {
	b, ok, err := s.St.Binding(ctx, threadRef(p))
	return binding(b), ok, err
}

// Bind binds the thread to b.ChatID unless it is bound already and returns the
// binding in force; created reports whether b was stored.
func (s Store) Bind(ctx context.Context, b chatops.Binding) (chatops.Binding, bool, error) {
	in, created, err := s.St.Bind(ctx, store.Binding{ThreadRef: threadRef(b.Place), ChatID: string(b.ChatID), CreatedBy: b.CreatedBy, CreatedAt: b.CreatedAt})
	if err != nil {
		return chatops.Binding{}, false, err
	}
	return binding(in), created, nil
}

// BindingsOfChat returns the threads bound to the chat, oldest first.
func (s Store) BindingsOfChat(ctx context.Context, chatID agent.ChatID) ([]chatops.Binding, error) {
	bs, err := s.St.BindingsOfChat(ctx, string(chatID))
	if err != nil {
		return nil, err
	}
	out := make([]chatops.Binding, len(bs))
	for i, b := range bs {
		out[i] = binding(b)
	}
	return out, nil
}

// FirstSeen records the platform event id and reports whether it is new.
func (s Store) FirstSeen(ctx context.Context, platform, eventID string) (bool, error) {
	return s.St.FirstSeen(ctx, platform, eventID)
}

// PruneSeen forgets the event ids seen before t.
func (s Store) PruneSeen(ctx context.Context, before time.Time) (int64, error) {
	return s.St.PruneSeen(ctx, before)
}

// RenderedMessages returns the run's rendered messages ordered by slot.
func (s Store) RenderedMessages(ctx context.Context, runID agent.RunID) ([]chatops.RenderedMessage, error) {
	return messages(s.St.RenderedMessages(ctx, string(runID)))
}

// OpenRenders returns the platform's rendered messages not yet final.
func (s Store) OpenRenders(ctx context.Context, platform string) ([]chatops.RenderedMessage, error) {
	return messages(s.St.OpenRenders(ctx, platform))
}

// SaveRenderedMessage inserts or replaces the row of (RunID, Slot).
func (s Store) SaveRenderedMessage(ctx context.Context, m chatops.RenderedMessage) error {
	return s.St.SaveRenderedMessage(ctx, store.RenderedMessage{
		RunID: string(m.RunID), Slot: m.Slot, ChatID: string(m.ChatID), ThreadRef: threadRef(m.Place),
		MessageID: m.MessageID, FirstSeq: m.FirstSeq, LastSeq: m.LastSeq, Hash: m.Hash, Final: m.Final,
	})
}

// ForkChat copies chat fromID's settings as newID, forked from it at its
// last event (chatops.ChatForker); the parent is not changed.
func (s Store) ForkChat(ctx context.Context, fromID, newID agent.ChatID) error {
	return s.St.ForkChat(ctx, string(fromID), string(newID))
}

// EnqueuePrompt appends q to its thread's queue.
func (s Store) EnqueuePrompt(ctx context.Context, q chatops.QueuedPrompt) error {
	sq := store.QueuedPrompt{ID: q.ID, ChatID: string(q.ChatID), ThreadRef: threadRef(q.Place), MessageID: q.MessageID,
		Sender: q.Sender, Text: q.Text, Files: q.Files, Sent: q.Sent}
	for _, im := range q.Images {
		sq.Images = append(sq.Images, store.QueuedImage{MediaType: im.MediaType, Name: im.Name, Data: im.Data})
	}
	return s.St.EnqueuePrompt(ctx, sq)
}

// QueuedPrompts returns the prompts queued in the platform's threads.
func (s Store) QueuedPrompts(ctx context.Context, platform string) ([]chatops.QueuedPrompt, error) {
	qs, err := s.St.QueuedPrompts(ctx, platform)
	if err != nil {
		return nil, err
	}
	out := make([]chatops.QueuedPrompt, len(qs))
	for i, q := range qs {
		out[i] = chatops.QueuedPrompt{ID: q.ID, ChatID: agent.ChatID(q.ChatID), Place: place(q.ThreadRef), MessageID: q.MessageID,
			Sender: q.Sender, Text: q.Text, Files: q.Files, Sent: q.Sent, Queued: q.CreatedAt}
		for _, im := range q.Images {
			out[i].Images = append(out[i].Images, agent.Image{MediaType: im.MediaType, Name: im.Name, Data: im.Data})
		}
	}
	return out, nil
}

// DeleteQueuedPrompt removes a queued prompt.
func (s Store) DeleteQueuedPrompt(ctx context.Context, id string) error {
	return s.St.DeleteQueuedPrompt(ctx, id)
}

// ClearQueue removes the thread's queued prompts.
func (s Store) ClearQueue(ctx context.Context, p chatops.Place) (int, error) {
	n, err := s.St.ClearQueue(ctx, threadRef(p))
	return int(n), err
}

// QueuePromptFirst moves a queued prompt to the head of its thread's queue.
func (s Store) QueuePromptFirst(ctx context.Context, p chatops.Place, id string) error {
	return s.St.QueuePromptFirst(ctx, threadRef(p), id)
}

func threadRef(p chatops.Place) store.ThreadRef {
	return store.ThreadRef{Platform: p.Platform, Workspace: p.Workspace, Channel: p.Channel, Thread: p.Thread}
}

func place(t store.ThreadRef) chatops.Place {
	return chatops.Place{Platform: t.Platform, Workspace: t.Workspace, Channel: t.Channel, Thread: t.Thread}
}

func binding(b store.Binding) chatops.Binding {
	return chatops.Binding{Place: place(b.ThreadRef), ChatID: agent.ChatID(b.ChatID), CreatedBy: b.CreatedBy, CreatedAt: b.CreatedAt}
}

func messages(ms []store.RenderedMessage, err error) ([]chatops.RenderedMessage, error) {
	if err != nil {
		return nil, err
	}
	out := make([]chatops.RenderedMessage, len(ms))
	for i, m := range ms {
		out[i] = chatops.RenderedMessage{
			RunID: agent.RunID(m.RunID), Slot: m.Slot, ChatID: agent.ChatID(m.ChatID), Place: place(m.ThreadRef),
			MessageID: m.MessageID, FirstSeq: m.FirstSeq, LastSeq: m.LastSeq, Hash: m.Hash, Final: m.Final,
		}
	}
	return out, nil
}

// Feed is a run hub over the store as chatops.Feed.
type Feed struct {
	Hub *runhub.Hub
	St  *store.Store
}

// Subscribe follows a chat's events after a seq.
func (f Feed) Subscribe(ctx context.Context, chatID agent.ChatID, afterSeq int64) <-chan chatops.Event {
	return f.Hub.Subscribe(ctx, chatID, afterSeq)
}

// LastSeq is the chat's newest persisted seq.
func (f Feed) LastSeq(ctx context.Context, chatID agent.ChatID) (int64, error) {
	return f.St.LastSeq(ctx, chatID)
}

// Capabilities is the store's capability_cache as registry.CacheStore: the
// probe cache of `agents`, `/agents` and `doctor`, shared by every process
// over the database.
type Capabilities struct{ St *store.Store }

var _ registry.CacheStore = Capabilities{}

// The prompt service finds these optional interfaces by a type assertion:
// this keeps their signatures checked.
var (
	_ prompt.LedgerReader   = Store{}
	_ prompt.ModelRecorder  = Store{}
	_ prompt.VersionNoticer = Store{}
)

// LoadCache returns the probes recorded at or after since; a row whose entry
// does not decode is skipped (it is probed again).
func (c Capabilities) LoadCache(ctx context.Context, since time.Time) ([]registry.CacheRecord, error) {
	rows, err := c.St.Capabilities(ctx, since)
	if err != nil {
		return nil, err
	}
	out := make([]registry.CacheRecord, 0, len(rows))
	for _, r := range rows {
		var e registry.CacheEntry
		if json.Unmarshal(r.Entry, &e) != nil {
			continue
		}
		out = append(out, registry.CacheRecord{
			Key:   registry.CacheKey{ID: r.AgentID, Path: r.Path, Version: r.Version, ModTime: r.ModTime},
			Entry: e, At: r.ProbedAt,
		})
	}
	return out, nil
}

// SaveCache records one probe.
func (c Capabilities) SaveCache(ctx context.Context, r registry.CacheRecord) error {
	b, err := json.Marshal(r.Entry)
	if err != nil {
		return fmt.Errorf("encode capability of %s: %w", r.Key.ID, err)
	}
	return c.St.SaveCapability(ctx, store.Capability{AgentID: r.Key.ID, Path: r.Key.Path, ModTime: r.Key.ModTime,
		Version: r.Key.Version, Entry: b, ProbedAt: r.At})
}

var _ chatops.LastPrompts = Store{}

// LastRunStart returns when the chat's latest run started
// (chatops.LastPrompts).
func (s Store) LastRunStart(ctx context.Context, chatID agent.ChatID) (time.Time, bool, error) {
	runs, err := s.St.ListRuns(ctx, string(chatID))
	if err != nil || len(runs) == 0 {
		return time.Time{}, false, err
	}
	return runs[len(runs)-1].StartedAt, true, nil
}
