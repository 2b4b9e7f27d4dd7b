// Relayed runs: starting runs under a relay, detaching them at shutdown and
// reattaching them after a restart without persisting anything twice.
//
// With Options.Relay set, the first process of every run runs under a
// procrun relay that outlives this process. Detach (at shutdown) stops
// following those runs without interrupting their agents and leaves them
// running in the store; a process killed outright leaves them the same way.
//
// Reattach continues such a run in a new process: it adopts the run's lock
// (the run stays running, with this process as owner) and calls the
// provider's Run again, against the same relay. procrun replays the agent's
// journal from the start and suppresses the stdin writes the relay already
// made, so the provider's deterministic parser rebuilds its state and emits
// the run's events again. The service drops every emitted event that it had
// already persisted for the run (matched as a multiset of type and payload,
// so that a different interleaving of answers and output does not matter)
// and persists the rest. Interactions the run had already answered are
// answered again with the recorded decision (the write is suppressed, the
// resolution is dropped); pending ones become answerable again, with their
// original deadline. What the original process needs to rebuild the
// provider's request (resume id, policies) is the relay's note.
//
// Limits: the answer text of a question is not recorded, so a replayed
// answer carries the decision only (its write is suppressed anyway); a
// provider whose output depends on anything but its stdout and the answers
// (clocks, randomness) may emit events that are not matched, which are then
// persisted again.

package prompt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/runhub"
)

// StatusDetached is the status of a run this process stopped following at
// shutdown; its agent runs on under its relay and the run stays running in
// the store.
const StatusDetached runhub.RunStatus = "detached"

// ErrNoRelay is returned by Reattach when the service has no relay configured.
var ErrNoRelay = errors.New("prompt: no relay configured")

// relayNote is what a relayed run's directory keeps for a reattach. No secrets.
type relayNote struct {
	Agent              string               `json:"agent"`
	Model              string               `json:"model,omitempty"`
	By                 string               `json:"by,omitempty"`
	Resume             string               `json:"resume,omitempty"`
	Fork               bool                 `json:"fork,omitempty"`
	Approval           agent.ApprovalPolicy `json:"approval"`
	Interactive        bool                 `json:"interactive,omitempty"`
	InteractionTimeout time.Duration        `json:"interaction_timeout,omitempty"`
}

// replayState is what a reattached run already persisted, consumed by its
// emitter (the run goroutine only).
type replayState struct {
	left        map[string]int // persisted provider events not yet re-emitted, by key
	n           int
	requests    map[string]*agent.Interaction
	resolutions map[string]agent.Resolution
	prompt      string
	// recorded and ledgerResolved are the ids whose request, and outcome,
	// the ledger already has (LedgerReader): not recorded again.
	recorded, ledgerResolved map[string]bool
	// caughtUp is closed once every persisted event was re-emitted: an
	// answer to a request still open arriving before then waits for it
	// (awaitRequest) instead of being refused as unknown.
	caughtUp     chan struct{}
	caughtUpOnce sync.Once
}

// awaitTimeout bounds how long an answer waits for a reattached run to
// re-emit the request it answers.
const awaitTimeout = 30 * time.Second

// awaitHook, set by tests, is called when an answer starts waiting.
var awaitHook func()

// awaitsRequest reports whether id is a request the run persisted and left
// open before the restart (read-only maps after loadReplay).
func (rp *replayState) awaitsRequest(id string) bool {
	if rp == nil || rp.requests[id] == nil || rp.ledgerResolved[id] {
		return false
	}
	_, resolved := rp.resolutions[id]
	return !resolved
}

// markCaughtUp closes caughtUp once.
func (rp *replayState) markCaughtUp() {
	rp.caughtUpOnce.Do(func() { close(rp.caughtUp) })
}

// awaitRequest waits until the reattached run r has re-emitted what it had
// persisted (so that an open request is registered again), r ends, ctx is
// done or awaitTimeout passes. It reports whether it waited at all.
func (r *Run) awaitRequest(ctx context.Context, id string) bool {
	rp := r.replay
	if !rp.awaitsRequest(id) {
		return false
	}
	t := time.NewTimer(awaitTimeout)
	defer t.Stop()
	if awaitHook != nil {
		awaitHook()
	}
	select {
	case <-rp.caughtUp:
	case <-r.ending:
	case <-r.done:
	case <-ctx.Done():
	case <-t.C:
	}
	return true
}

// newRelayRun returns the relay claim of a new run, or nil without a relay.
func (s *Service) newRelayRun(runID string) *procrun.RelayRun {
	if s.opts.Relay.Dir == "" {
		return nil
	}
	return s.opts.Relay.Run(runID)
}

// relayContext records the run's note and puts its relay claim in ctx.
func (s *Service) relayContext(ctx context.Context, run *Run, lease *runhub.Lease, req agent.RunRequest) context.Context {
	if run.relay == nil {
		return ctx
	}
	if run.replay == nil {
		b, _ := json.Marshal(relayNote{
			Agent: run.Agent, Model: req.Model, By: lease.Run().StartedBy,
			Resume: req.ResumeID, Fork: req.Fork, Approval: req.Approval,
			Interactive: req.Responses != nil, InteractionTimeout: run.interactionTimeout,
		})
		run.relay.SetNote(b)
	}
	return procrun.WithRelay(ctx, run.relay)
}

// retryRelay lets a retried attempt (stale session) run under a fresh relay,
// with a note for the retried request.
func (s *Service) retryRelay(ctx context.Context, run *Run, lease *runhub.Lease, req agent.RunRequest) {
	if run.relay == nil || run.replay != nil {
		return
	}
	if err := run.relay.Reset(); err != nil {
		s.log.WarnContext(ctx, "reset relay", logkey.RunID, run.ID, "err", err)
	}
	s.relayContext(ctx, run, lease, req)
}

// detached reports whether the run was detached from its relayed agent.
func (r *Run) detached() bool {
	return r.relay != nil && r.relay.Detached() && r.relay.Relayed()
}

// Detach stops following every relayed run without interrupting its agent
// (the runs stay running in the store, for Reattach after a restart) and
// cancels the others, as Shutdown does. It waits until all have ended here or
// ctx ends, and returns how many runs were detached.
func (s *Service) Detach(ctx context.Context) (int, error) {
	s.mu.Lock()
	runs := make([]*Run, 0, len(s.active))
	for _, r := range s.active {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	n := 0
	for _, r := range runs {
		if r.relay != nil && r.relay.Detach() {
			n++
			continue
		}
		r.cancel()
	}
	for _, r := range runs {
		select {
		case <-r.done:
		case <-ctx.Done():
			return n, fmt.Errorf("detach: run %s of chat %s still ending: %w", r.ID, r.ChatID, ctx.Err())
		}
	}
	return n, nil
}

// endDetached ends a detached run here: the chat is freed in this process,
// nothing is persisted and the run stays running in the store.
func (s *Service) endDetached(ctx context.Context, run *Run, lease *runhub.Lease) bool {
	if !run.detached() {
		return false
	}
	s.log.InfoContext(ctx, "run detached, its agent runs on under its relay", logkey.ChatID, run.ChatID, logkey.RunID, run.ID)
	lease.Abandon()
	s.mu.Lock()
	if s.active[run.ChatID] == run {
		delete(s.active, run.ChatID)
	}
	s.mu.Unlock()
	run.mu.Lock()
	for _, st := range run.interactions {
		if st.timer != nil {
			st.timer.Stop()
		}
	}
	run.status = StatusDetached
	run.mu.Unlock()
	run.cancel()
	run.endingOnce.Do(func() { close(run.ending) })
	close(run.done)
	return true
}

// removeRelay deletes the run's relay directory once its end is persisted.
func (s *Service) removeRelay(ctx context.Context, run *Run) {
	if run.relay == nil {
		return
	}
	if err := run.relay.Remove(); err != nil {
		s.log.WarnContext(ctx, "remove relay", logkey.RunID, run.ID, "err", err)
	}
}

// Reattach continues a run that an earlier process started under a relay:
// see the file comment. The run must still be running in the store. The
// returned Run behaves like one from Start.
func (s *Service) Reattach(ctx context.Context, chatID agent.ChatID, runID agent.RunID) (*Run, error) {
	if s.opts.Relay.Dir == "" {
		return nil, ErrNoRelay
	}
	b, err := s.opts.Relay.Note(string(runID))
	if err != nil {
		return nil, err
	}
	var note relayNote
	if err := json.Unmarshal(b, &note); err != nil {
		return nil, fmt.Errorf("reattach %s: note: %w", runID, err)
	}
	chat, err := s.chats.Chat(ctx, chatID)
	if err != nil {
		return nil, fmt.Errorf("load chat %s: %w", chatID, err)
	}
	prov, cfg, err := s.Provider(note.Agent)
	if err != nil {
		return nil, err
	}
	rp, err := s.loadReplay(ctx, chatID, runID)
	if err != nil {
		return nil, err
	}
	run := &Run{
		ID: runID, ChatID: chatID, Agent: note.Agent,
		responses:          make(chan agent.InteractionResponse, 8),
		done:               make(chan struct{}),
		ending:             make(chan struct{}),
		interactions:       map[string]*interactionState{},
		resolved:           map[string]bool{},
		interactionTimeout: note.InteractionTimeout,
		relay:              s.opts.Relay.Reattach(string(runID)),
		replay:             rp,
	}
	lease, err := s.hub.Adopt(ctx, runhub.RunRecord{
		ID: runID, ChatID: chatID, Agent: note.Agent, Model: note.Model, Owner: s.opts.Owner, StartedBy: note.By,
	})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	run.cancel = cancel
	s.mu.Lock()
	s.active[chatID] = run
	s.mu.Unlock()
	areq := agent.RunRequest{
		ChatID: string(chatID), RunID: string(runID), Prompt: rp.prompt,
		Model: note.Model, Effort: chat.Effort, Mode: chat.Mode,
		Cwd: chat.Cwd, Project: chat.Project,
		Bin: cfg.Bin, Args: cfg.Args, Env: cfg.Env,
		Approval: note.Approval, ResumeID: note.Resume, Fork: note.Fork,
		IdleTimeout: cfg.IdleTimeout,
	}
	if note.Interactive {
		areq.Responses = run.responses
	}
	s.log.InfoContext(ctx, "reattaching run", logkey.ChatID, chatID, logkey.RunID, runID, logkey.Agent, note.Agent, "persisted", rp.n)
	s.opts.Observer.RunStarted(run.Agent)
	go s.executeSafely(runCtx, run, lease, prov, chat, areq, "")
	return run, nil
}

// replayReadPage is how many events loadReplay reads per query.
const replayReadPage = 1000

// loadReplay reads what the run already persisted: the chat backwards from
// its last persisted seq down to the run's prompt (its first event), so that
// its cost follows the run, not the whole chat before it.
func (s *Service) loadReplay(ctx context.Context, chatID agent.ChatID, runID agent.RunID) (*replayState, error) {
	rp := &replayState{left: map[string]int{}, requests: map[string]*agent.Interaction{}, resolutions: map[string]agent.Resolution{}, caughtUp: make(chan struct{})}
	var (
		run    []runhub.Event // the run's events, newest first
		before int64          // 0: from the end
	)
read:
	for {
		evs, err := s.history.EventsBefore(ctx, chatID, before, replayReadPage)
		if err != nil {
			return nil, fmt.Errorf("reattach %s: read events: %w", runID, err)
		}
		for _, e := range evs {
			before = e.Seq
			if e.RunID != runID {
				continue
			}
			run = append(run, e)
			if e.Type == chatlog.TypeUserMessage {
				break read
			}
		}
		if len(evs) < replayReadPage || before <= 1 {
			break
		}
	}
	slices.Reverse(run)
	for _, e := range run {
		en, err := chatlog.Decode(e.Type, e.Payload)
		switch {
		case e.Type == chatlog.TypeUserMessage:
			rp.prompt = ""
			if en.User != nil {
				rp.prompt = en.User.Text
			}
			continue
		case e.Type == chatlog.TypeRunStarted:
			continue // the service's own
		case err != nil:
			s.log.WarnContext(ctx, "reattach: undecodable event", logkey.RunID, runID, "seq", e.Seq, "err", err)
			continue
		}
		ev := en.Agent
		if ev.Type == agent.EventSystem && ev.Subtype == SubtypeSessionRecovered {
			continue // the service's own
		}
		if ev.Interaction != nil {
			rp.requests[ev.Interaction.ID] = ev.Interaction
		}
		if ev.Resolution != nil {
			rp.resolutions[ev.Resolution.InteractionID] = *ev.Resolution
		}
		rp.left[replayKey(ev)]++
		rp.n++
	}
	if err := s.loadLedger(ctx, rp, chatID, runID); err != nil {
		return nil, err
	}
	if rp.n == 0 {
		rp.markCaughtUp()
	}
	return rp, nil
}

// loadLedger adds what the ledger recorded of the run to rp: the ledger is
// written before the run's events are committed, so a process killed in
// between left requests and decisions there only. A decision found only there
// is answered again like a persisted one (the agent has not seen it: procrun
// writes an answer once its resolution was persisted).
func (s *Service) loadLedger(ctx context.Context, rp *replayState, chatID agent.ChatID, runID agent.RunID) error {
	lr, ok := s.ledger.(LedgerReader)
	if !ok {
		return nil
	}
	ins, err := lr.RunInteractions(ctx, chatID, runID)
	if err != nil {
		return fmt.Errorf("reattach %s: read interactions: %w", runID, err)
	}
	rp.recorded, rp.ledgerResolved = map[string]bool{}, map[string]bool{}
	for _, in := range ins {
		rp.recorded[in.ID] = true
		if in.Status == "" || in.Status == "pending" {
			continue
		}
		rp.ledgerResolved[in.ID] = true
		if _, ok := rp.resolutions[in.ID]; !ok {
			rp.resolutions[in.ID] = agent.Resolution{InteractionID: in.ID, Status: in.Status, Decision: agent.Decision(in.Decision), By: in.By}
		}
	}
	return nil
}

// replayKey identifies an event for the match of re-emitted and persisted
// events: its type and payload, without what the service adds (a deadline)
// or rewrites (a timed-out decline).
func replayKey(ev agent.Event) string {
	if ev.Interaction != nil && !ev.Interaction.ExpiresAt.IsZero() {
		in := *ev.Interaction
		in.ExpiresAt = time.Time{}
		ev.Interaction = &in
	}
	if ev.Resolution != nil && ev.Resolution.By == "timeout" && ev.Resolution.Status == agent.StatusDeclined {
		res := *ev.Resolution
		res.Status = agent.StatusTimedOut
		ev.Resolution = &res
	}
	b, _ := json.Marshal(ev)
	return string(b)
}

// replayed reports whether the emitter must drop ev: after a detach, and for
// an event a reattached run had already persisted (whose side effects on the
// run's state are applied here instead).
func (s *Service) replayed(ctx context.Context, run *Run, ev agent.Event, a *attempt) bool {
	if run.detached() {
		return true
	}
	rp := run.replay
	if rp == nil || rp.n == 0 {
		return false
	}
	k := replayKey(ev)
	if rp.left[k] == 0 {
		return false
	}
	rp.left[k]--
	rp.n--
	switch ev.Type {
	case agent.EventUsageUpdated:
		a.usage = ev.Usage
	case agent.EventInteractionRequested:
		if ev.Interaction != nil {
			s.rerequested(ctx, run, ev.Interaction.ID)
		}
	case agent.EventInteractionResolved:
		if ev.Resolution != nil {
			run.mu.Lock()
			if st, ok := run.interactions[ev.Resolution.InteractionID]; ok && st.timer != nil {
				st.timer.Stop()
			}
			delete(run.interactions, ev.Resolution.InteractionID)
			run.resolved[ev.Resolution.InteractionID] = true
			run.mu.Unlock()
		}
	}
	if ev.Type.Terminal() {
		a.terminal = ev.Type
		run.endingOnce.Do(func() { close(run.ending) })
	}
	if rp.n == 0 {
		s.log.InfoContext(ctx, "reattached run caught up", logkey.ChatID, run.ChatID, logkey.RunID, run.ID)
		rp.markCaughtUp()
	}
	return true
}

// rerequested registers a replayed request: answered again with its recorded
// decision, or open again with its original deadline.
func (s *Service) rerequested(ctx context.Context, run *Run, id string) {
	rp := run.replay
	st := &interactionState{}
	if in := rp.requests[id]; in != nil {
		st.kind = string(in.Kind)
		st.request = agent.Interaction{Kind: in.Kind, Options: in.Options, Questions: in.Questions}
	}
	res, resolved := rp.resolutions[id]
	answer := resolved && res.Status != agent.StatusTurnEnded && res.Status != agent.StatusExpired
	run.mu.Lock()
	run.interactions[id] = st
	if answer {
		st.answered = true
		st.timedOut = res.Status == agent.StatusTimedOut
	} else if in := rp.requests[id]; in != nil && !in.ExpiresAt.IsZero() {
		st.timer = time.AfterFunc(max(time.Until(in.ExpiresAt), 0), func() { s.expire(run, id) })
	}
	run.mu.Unlock()
	if !answer {
		s.log.InfoContext(ctx, "reattached run: interaction open again", logkey.RunID, run.ID, logkey.InteractionID, id)
		return
	}
	resp := agent.InteractionResponse{InteractionID: id, Decision: decisionOf(res), By: res.By}
	select {
	case run.responses <- resp:
	default:
		go func() { _ = run.send(context.Background(), resp) }()
	}
}

// decisionOf is the decision behind a recorded resolution.
func decisionOf(res agent.Resolution) agent.Decision {
	if res.Decision != "" {
		return res.Decision
	}
	switch res.Status {
	case agent.StatusApproved:
		return agent.DecisionApprove
	case agent.StatusApprovedForSession:
		return agent.DecisionApproveSession
	case agent.StatusCancelled:
		return agent.DecisionCancel
	case agent.StatusAnswered:
		return agent.DecisionAnswer
	}
	return agent.DecisionDecline
}
