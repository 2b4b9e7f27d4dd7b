// The run goroutine: provider call, event projection, session recovery, release.

package prompt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/runhub"
)

// TranscriptLimit bounds the visible history prepended when there is no native session.
const TranscriptLimit = chatlog.TranscriptLimit

// attempt collects what one provider call produced.
type attempt struct {
	terminal agent.EventType
	usage    *agent.Usage
	// held are run.failed events withheld while a resume may still be recovered.
	held []agent.Event
	// scrub holds back streamed text that could be the start of a secret.
	scrub *runScrub
}

func (s *Service) execute(ctx context.Context, run *Run, lease *runhub.Lease, prov agent.Provider, chat Chat, req agent.RunRequest, transcript string) {
	persistCtx := context.WithoutCancel(ctx)
	prov = s.inProject(prov, chat)
	started := time.Now()
	prompt := req.Prompt
	pid := string(prov.ID())
	ctx = s.relayContext(ctx, run, lease, req)
	if run.replay == nil {
		s.noticeVersion(persistCtx, run)
	}

	var (
		a   *attempt
		err error
	)
	for try := 0; ; try++ {
		req.Prompt = prompt
		if req.ResumeID == "" {
			req.Prompt = withHistory(transcript, prompt)
		}
		a = &attempt{scrub: newRunScrub(s.opts.Scrubber)}
		emit := s.emitter(persistCtx, run, pid, req.ResumeID != "", a)
		err = s.runProvider(ctx, run, prov, req, emit) // a panic becomes a failed run (recover.go)
		// What a provider that ended without a terminal event left held back.
		a.scrub.flushAll(func(ev agent.Event) { s.emitScrubbed(persistCtx, run, pid, req.ResumeID != "", a, ev) })
		if try == 0 && req.ResumeID != "" && errors.Is(err, agent.ErrSessionNotFound) && ctx.Err() == nil {
			s.log.InfoContext(ctx, "stale session, retrying without it", logkey.ChatID, run.ChatID, logkey.Agent, run.Agent, logkey.SessionID, req.ResumeID)
			if serr := s.chats.SetSession(persistCtx, run.ChatID, pid, ""); serr != nil {
				s.log.ErrorContext(ctx, "clear session", logkey.ChatID, run.ChatID, "err", serr)
			}
			s.appendEvent(persistCtx, run, agent.Event{
				Type: agent.EventSystem, Subtype: SubtypeSessionRecovered,
				Text: fmt.Sprintf("The saved %s session %s no longer exists; continuing in a new session with the visible history of this chat.", run.Agent, req.ResumeID),
			})
			if transcript, err = s.transcript(persistCtx, run.ChatID, run.ID); err != nil {
				s.log.WarnContext(ctx, "read transcript", logkey.ChatID, run.ChatID, "err", err)
			}
			req.ResumeID, req.Fork = "", false
			s.retryRelay(ctx, run, lease, req)
			continue
		}
		break
	}
	if s.endDetached(persistCtx, run, lease) {
		return
	}
	for _, ev := range a.held {
		s.persist(persistCtx, run, ev)
	}
	s.endInteractions(persistCtx, run)

	status, errText := runhub.StatusCompleted, ""
	switch {
	case ctx.Err() != nil:
		// A cancel is not an error, whatever the dying process said.
		status = runhub.StatusInterrupted
		if a.terminal != agent.EventRunInterrupted {
			s.appendEvent(persistCtx, run, agent.Event{Type: agent.EventRunInterrupted, Text: "Stopped."})
		}
	case err == nil && a.terminal == agent.EventRunCompleted:
	case err == nil && a.terminal == agent.EventRunInterrupted:
		status = runhub.StatusInterrupted
	case errors.Is(err, agent.ErrRunFailed):
		status, errText = runhub.StatusFailed, err.Error()
		if a.terminal != agent.EventRunFailed {
			s.appendEvent(persistCtx, run, agent.Event{Type: agent.EventRunFailed, Text: fmt.Sprintf("%s exit: %v", run.Agent, err)})
		}
	case err != nil:
		status, errText = runhub.StatusFailed, fmt.Sprintf("%s exit: %v", run.Agent, err)
		s.appendEvent(persistCtx, run, agent.Event{Type: agent.EventRunFailed, Text: errText})
	default:
		status, errText = runhub.StatusFailed, fmt.Sprintf("%s exit: the agent ended without reporting a result", run.Agent)
		s.appendEvent(persistCtx, run, agent.Event{Type: agent.EventRunFailed, Text: errText})
	}
	if s.opts.Scrubber != nil {
		errText = s.opts.Scrubber.Cut(errText) // stderr (a cut tail) may quote a secret
	}
	var usage json.RawMessage
	if a.usage != nil {
		usage, _ = json.Marshal(a.usage)
	}
	s.opts.Observer.RunEnded(run.Agent, string(status), time.Since(started))
	if rerr := lease.Release(persistCtx, status, usage, errText); rerr != nil {
		s.log.ErrorContext(persistCtx, "release run", logkey.ChatID, run.ChatID, logkey.RunID, run.ID, "err", rerr)
	}
	s.removeRelay(persistCtx, run)
	s.mu.Lock()
	if s.active[run.ChatID] == run {
		delete(s.active, run.ChatID)
	}
	s.mu.Unlock()
	run.mu.Lock()
	run.status = status
	if errText != "" {
		run.err = errors.New(errText)
	}
	run.mu.Unlock()
	run.cancel()
	run.endingOnce.Do(func() { close(run.ending) })
	close(run.done)
}

// emitter projects provider events into persisted chat events, scrubbed of
// secret values first (scrub.go).
func (s *Service) emitter(ctx context.Context, run *Run, provider string, resuming bool, a *attempt) func(agent.Event) {
	emit := func(ev agent.Event) { s.emitScrubbed(ctx, run, provider, resuming, a, ev) }
	return func(ev agent.Event) { a.scrub.events(ev, emit) }
}

// emitScrubbed applies a scrubbed provider event to the run and persists it.
// A reattached run matches re-emitted events against persisted ones after
// scrubbing, so that both sides are the same text cut the same way.
func (s *Service) emitScrubbed(ctx context.Context, run *Run, provider string, resuming bool, a *attempt, ev agent.Event) {
	if s.replayed(ctx, run, ev, a) {
		return
	}
	switch ev.Type {
	case agent.EventSessionUpdated:
		if ev.SessionID != "" {
			if err := s.chats.SetSession(ctx, run.ChatID, provider, ev.SessionID); err != nil {
				s.log.ErrorContext(ctx, "save session", logkey.ChatID, run.ChatID, "err", err)
			}
		}
		if ev.Model != "" {
			s.recordModel(ctx, run, ev.Model)
		}
	case agent.EventUsageUpdated:
		a.usage = ev.Usage
	case agent.EventInteractionRequested:
		if ev.Interaction != nil {
			s.requested(ctx, run, ev.Interaction)
		}
	case agent.EventInteractionResolved:
		if ev.Resolution != nil {
			s.resolved(ctx, run, ev.Resolution)
		}
	}
	if ev.Type.Terminal() {
		a.terminal = ev.Type
	}
	if ev.Type == agent.EventRunFailed && resuming {
		// Held back until Run returns: a stale session is recovered, not reported.
		a.held = append(a.held, ev)
		return
	}
	s.persist(ctx, run, ev)
	if ev.Type.Terminal() {
		run.endingOnce.Do(func() { close(run.ending) })
	}
}

// appendEvent persists one of the service's own events, scrubbed.
func (s *Service) appendEvent(ctx context.Context, run *Run, ev agent.Event) {
	s.persist(ctx, run, scrubEvent(s.opts.Scrubber, ev))
}

// persist appends an event that is already scrubbed. The run's reader does not
// wait for the commit (runhub.Hub.Enqueue: its events are pipelined, in order,
// each broadcast once committed) except for a terminal event, after which the
// run is ending, and an interaction's request or resolution, which a reattach
// matches against the ledger and the agent's answers (procrun writes an answer
// to the agent only after its resolution was emitted): those return once they
// and all before them are committed. Lease.Release waits for the rest.
func (s *Service) persist(ctx context.Context, run *Run, ev agent.Event) {
	b, err := json.Marshal(ev)
	if err != nil {
		s.log.ErrorContext(ctx, "encode event", "type", ev.Type, "err", err)
		return
	}
	if ev.Type.Terminal() || ev.Type == agent.EventInteractionRequested || ev.Type == agent.EventInteractionResolved {
		if _, err := s.hub.Append(ctx, run.ChatID, run.ID, string(ev.Type), b); err != nil {
			s.lost(ctx, run, ev.Type, err)
		}
		return
	}
	err = s.hub.Enqueue(ctx, run.ChatID, run.ID, string(ev.Type), b, func(_ runhub.Event, err error) {
		if err != nil {
			s.lost(ctx, run, ev.Type, err)
		}
	})
	if err != nil {
		s.log.ErrorContext(ctx, "persist event", logkey.ChatID, run.ChatID, logkey.RunID, run.ID, "type", ev.Type, "err", err)
	}
}

// lost handles an event the hub could not store: logged as an error; when
// the database stayed away past the hub's outage limit the run is stopped,
// since what it does next could not be recorded either (the hub already
// held its events that long).
func (s *Service) lost(ctx context.Context, run *Run, typ agent.EventType, err error) {
	s.log.ErrorContext(ctx, "persist event", logkey.ChatID, run.ChatID, logkey.RunID, run.ID, "type", typ, "err", err)
	var why string
	switch {
	case errors.Is(err, runhub.ErrStoreFull):
		why = "This run was stopped: the database's disk is full, so nothing more of it could be recorded. An operator must free space on it; until then new runs are refused."
	case errors.Is(err, runhub.ErrStoreUnavailable):
		why = "This run was stopped: the database stayed unreachable, so nothing more of it could be recorded."
	default:
		return
	}
	run.lostOnce.Do(func() {
		if run.cancel != nil {
			run.cancel()
		}
		if s.opts.Trouble != nil {
			// Not here: an Enqueue's callback runs on the hub's writer.
			go s.opts.Trouble(context.WithoutCancel(ctx), run.ChatID, run.ID, why)
		}
	})
}

// transcriptPage is how many events the transcript reads per query.
const transcriptPage = 500

// maxForkDepth bounds how many parents a fork's transcript follows (forks of
// forks), so that no chain of rows can loop it.
const maxForkDepth = 32

// transcript returns the chat's visible history (chatlog.Fold: user prompts and
// assistant text, no tool output or reasoning), bounded to the last
// TranscriptLimit bytes. It reads the chat backwards from its end and stops as
// soon as older events cannot change the result, so its cost and memory follow
// the limit, not the chat's length. A fork's history goes on, older, with its
// parent's up to the fork (ForkedFrom, ForkSeq), and so on up the forks.
// Events of the run excludeRun are left out.
func (s *Service) transcript(ctx context.Context, chat agent.ChatID, excludeRun ...agent.RunID) (string, error) {
	var (
		chatID  = chat
		fold    chatlog.Backward
		before  int64 // 0: from the end
		skipRun agent.RunID
	)
	if len(excludeRun) > 0 {
		skipRun = excludeRun[0]
	}
	for depth := 0; ; depth++ {
		full, err := s.foldBack(ctx, &fold, chatID, before, skipRun)
		if err != nil {
			return "", err
		}
		if full || depth == maxForkDepth {
			return fold.Transcript(), nil
		}
		c, err := s.chats.Chat(ctx, chatID)
		if err != nil {
			// A parent deleted since: the history is what was read.
			s.log.WarnContext(ctx, "read a chat for its fork's history", logkey.ChatID, chatID, "err", err)
			return fold.Transcript(), nil
		}
		if c.ForkedFrom == "" {
			return fold.Transcript(), nil
		}
		chatID, before = c.ForkedFrom, c.ForkSeq+1
	}
}

// foldBack adds the chat's events with seq < before (0: all) to fold, newest
// first, and reports whether the fold is full (older events cannot change it).
func (s *Service) foldBack(ctx context.Context, fold *chatlog.Backward, chatID agent.ChatID, before int64, skipRun agent.RunID) (bool, error) {
	for {
		evs, err := s.history.EventsBefore(ctx, chatID, before, transcriptPage)
		if err != nil {
			return false, err
		}
		for _, ev := range evs {
			before = ev.Seq
			if skipRun != "" && ev.RunID == skipRun {
				continue
			}
			if fold.Add(ev.Type, ev.Payload) {
				return true, nil
			}
		}
		if len(evs) < transcriptPage || before <= 1 {
			return false, nil
		}
	}
}

func withHistory(transcript, prompt string) string {
	if transcript == "" {
		return prompt
	}
	return "Earlier conversation in this chat, for context:\n<history>\n" + transcript +
		"\n</history>\n\nNew message:\n" + prompt
}
