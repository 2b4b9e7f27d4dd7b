// Interactions: the ledger of a run's requests, routing answers, timeouts.

package prompt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// InteractionRecord is what the ledger keeps of a request. Answer values are
// never part of it.
type InteractionRecord struct {
	RunID    agent.RunID
	ID       agent.InteractionID
	ChatID   agent.ChatID
	NativeID json.RawMessage
	Kind     string
	Payload  json.RawMessage
}

// Ledger persists interactions and their outcomes.
type Ledger interface {
	RecordInteraction(ctx context.Context, in InteractionRecord) error
	// ResolveInteraction moves a pending interaction to a final status.
	ResolveInteraction(ctx context.Context, runID agent.RunID, id agent.InteractionID, status, decision, by string) error
}

// LedgerReader is a Ledger that also reads a run's interactions back. A
// reattach asks it, since the ledger records a request or an outcome before
// the run's event of it is committed: a process killed in between left the
// ledger ahead of the events, and the reattached run neither records the
// request again nor loses the decision.
type LedgerReader interface {
	RunInteractions(ctx context.Context, chatID agent.ChatID, runID agent.RunID) ([]LedgerEntry, error)
}

// LedgerEntry is an interaction as the ledger has it; Status is "pending"
// until it is resolved.
type LedgerEntry struct {
	ID, Status, Decision, By string
}

// Errors of RespondInteraction.
var (
	// ErrUnknownInteraction is returned for an answer to a request the run never made.
	ErrUnknownInteraction = errors.New("no such interaction")
	// ErrInteractionResolved is returned for a second answer to the same request.
	ErrInteractionResolved = errors.New("interaction already answered")
	// ErrRunNotActive is returned for an answer to a run that has ended.
	ErrRunNotActive = errors.New("run is not active")
	// ErrNotAdmitted wraps Options.Admit's refusal of a run.
	ErrNotAdmitted = errors.New("the run was not started")
	// ErrAnswerKind is returned for a response that does not fit the request:
	// a free-text answer to an approval (which some agents would read as
	// "allow"), an approval of a question, or no decision at all. The request
	// stays pending; the user answers it with a fitting decision.
	ErrAnswerKind = errors.New("response does not fit the request")
	// ErrNotAnOption is returned for an answer to a question that takes only
	// its options (agent.Question.AllowOther false) that is none of them; for
	// a MultiSelect question, a line that is none of them. The error names
	// the question and its options, never the answer. The request stays
	// pending; the user answers it again.
	ErrNotAnOption = errors.New("answer is not one of the question's options")
	// ErrNotRecorded is returned for an answer given while the database
	// does not answer: a decision is recorded before it reaches the agent,
	// so nothing was sent and the request stays pending.
	ErrNotRecorded = errors.New("the answer could not be recorded and was not sent to the agent")
)

// recordCheckTimeout bounds asking the database whether it answers before
// an answer is delivered.
const recordCheckTimeout = 3 * time.Second

// maxInteractionPayload bounds the request copy kept in the ledger.
const maxInteractionPayload = 16 << 10

// interactionState is a request of a running run.
type interactionState struct {
	kind string
	// request is the kind and options of the request, for Accepts.
	request  agent.Interaction
	answered bool // a response was routed; the provider's resolution is awaited
	timedOut bool
	timer    *time.Timer
}

// RespondInteraction routes a user's answer to the run that asked, here or
// (through the Router, see route.go) on the replica that runs it. Answers to
// unknown ids, already-answered requests and ended runs are refused. A secret
// answer goes to the agent and nowhere else: for a run of another replica it
// is refused with ErrSecretNotRouted.
func (s *Service) RespondInteraction(ctx context.Context, chatID agent.ChatID, runID agent.RunID, resp agent.InteractionResponse) error {
	if r, ok := s.current(chatID); !ok || r.ID != runID {
		if routed, err := s.routeAnswer(ctx, chatID, runID, resp); routed {
			return err
		}
	}
	return s.respondLocal(ctx, chatID, runID, resp)
}

// respondLocal delivers an answer to a run of this replica.
func (s *Service) respondLocal(ctx context.Context, chatID agent.ChatID, runID agent.RunID, resp agent.InteractionResponse) error {
	r, ok := s.current(chatID)
	if !ok || r.ID != runID {
		return fmt.Errorf("%w: run %s of chat %s has ended", ErrRunNotActive, runID, chatID)
	}
	// The answer's resolution is recorded before the agent gets it; with
	// the database away it could not be (it would wait), so the person is
	// told now and the request stays pending.
	cctx, cancel := context.WithTimeout(ctx, recordCheckTimeout)
	err := s.hub.Reachable(cctx, chatID)
	cancel()
	if err != nil {
		s.log.WarnContext(ctx, "answer refused: the database is unreachable", logkey.ChatID, chatID, logkey.RunID, runID, "err", err)
		return fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	claimed, err := r.claimOrAwait(ctx, resp)
	if err != nil {
		return err
	}
	return r.send(ctx, claimed)
}

// claimOrAwait claims resp; an answer clicked right after a restart, to a
// request the reattached run has not re-emitted yet, waits for it first.
func (r *Run) claimOrAwait(ctx context.Context, resp agent.InteractionResponse) (agent.InteractionResponse, error) {
	claimed, err := r.claim(resp)
	if errors.Is(err, ErrUnknownInteraction) && r.awaitRequest(ctx, resp.InteractionID) {
		claimed, err = r.claim(resp)
	}
	return claimed, err
}

// claim marks the interaction answered, refusing unknown and answered ones,
// a response whose decision does not fit the request's kind and an answer
// that is none of an options-only question's options (which leave the
// request pending). It returns the response as the agent gets it: an
// option named by its number or in another case is the option's text.
func (r *Run) claim(resp agent.InteractionResponse) (agent.InteractionResponse, error) {
	id := resp.InteractionID
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.interactions[id]
	switch {
	case !ok && r.resolved[id]:
		return resp, fmt.Errorf("%w: %s", ErrInteractionResolved, id)
	case !ok:
		return resp, fmt.Errorf("%w: %s in run %s", ErrUnknownInteraction, id, r.ID)
	case st.answered:
		return resp, fmt.Errorf("%w: %s", ErrInteractionResolved, id)
	case !st.request.Accepts(resp.Decision):
		return resp, fmt.Errorf("%w: %q for a %s request %s", ErrAnswerKind, string(resp.Decision), st.kind, id)
	}
	if resp.Decision == agent.DecisionAnswer {
		answers, bad := chosenOptions(st.request.Questions, resp.Answers)
		if bad != nil {
			return resp, fmt.Errorf("%w (request %s): %s", ErrNotAnOption, id, optionsDetail(*bad))
		}
		resp.Answers = answers
	}
	st.answered = true
	if st.timer != nil {
		st.timer.Stop()
	}
	return resp, nil
}

// chosenOptions checks the answers to the questions that take only their
// options (Options set, AllowOther false): each must name one of them, by
// its text in any case or by its number from 1; a MultiSelect answer names
// one per line. It returns the answers with each such answer spelled as its
// options are (a copy; answers itself is not changed). An empty answer is
// left to the provider (an Optional question is skipped, a required one is
// its to refuse), as are questions without options or with AllowOther.
// The first question whose answer names none of its options is returned
// as bad (and no answers).
func chosenOptions(qs []agent.Question, answers map[string]string) (_ map[string]string, bad *agent.Question) {
	var out map[string]string
	for _, q := range qs {
		a, ok := answers[q.ID]
		if !ok || len(q.Options) == 0 || q.AllowOther || strings.TrimSpace(a) == "" {
			continue
		}
		parts := []string{a}
		if q.MultiSelect {
			parts = strings.Split(a, "\n")
		}
		picked := make([]string, 0, len(parts))
		for _, p := range parts {
			if q.MultiSelect && strings.TrimSpace(p) == "" {
				continue
			}
			o, ok := optionNamed(q.Options, p)
			if !ok {
				return nil, &q
			}
			picked = append(picked, o)
		}
		canon := strings.Join(picked, "\n")
		if canon == a {
			continue
		}
		if out == nil {
			out = maps.Clone(answers)
		}
		out[q.ID] = canon
	}
	if out == nil {
		return answers, nil
	}
	return out, nil
}

// optionNamed is the option text names: the option itself, the option in
// another case, or its number from 1 (a label wins over a number).
func optionNamed(options []string, text string) (string, bool) {
	text = strings.TrimSpace(text)
	for _, o := range options {
		if o == text {
			return o, true
		}
	}
	for _, o := range options {
		if strings.EqualFold(strings.TrimSpace(o), text) {
			return o, true
		}
	}
	if n, err := strconv.Atoi(text); err == nil && n >= 1 && n <= len(options) {
		return options[n-1], true
	}
	return "", false
}

// optionsDetail says, for the user, what q takes, naming its options in
// order; it is the last part of an ErrNotAnOption error.
func optionsDetail(q agent.Question) string {
	named := make([]string, len(q.Options))
	for i, o := range q.Options {
		named[i] = fmt.Sprintf("%d. %s", i+1, o)
	}
	what := "one of its options"
	if q.MultiSelect {
		what = "only its options, one per line"
	}
	name := q.Header
	if name == "" {
		name = q.Text
	}
	return fmt.Sprintf("%q takes %s: %s", name, what, strings.Join(named, " · "))
}

// NotAnOptionDetail returns what an ErrNotAnOption error says of the
// question and its options, for a front-end to tell the user (answered
// here or by the replica running the run). ok is false for other errors.
func NotAnOptionDetail(err error) (detail string, ok bool) {
	if !errors.Is(err, ErrNotAnOption) {
		return "", false
	}
	return detailOf(err.Error()), true
}

// detailOf is the optionsDetail part of an ErrNotAnOption error's text
// ("…options (request q1): detail"), "" when it has none.
func detailOf(text string) string {
	_, rest, found := strings.Cut(text, ErrNotAnOption.Error())
	if !found {
		return ""
	}
	_, detail, _ := strings.Cut(rest, "): ")
	return detail
}

func (r *Run) send(ctx context.Context, resp agent.InteractionResponse) error {
	select {
	case r.responses <- resp:
		return nil
	case <-r.ending:
		return fmt.Errorf("%w: run %s ended before the answer was delivered", ErrRunNotActive, r.ID)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// requested records a new request of the run and arms its timeout.
func (s *Service) requested(ctx context.Context, r *Run, in *agent.Interaction) {
	if r.interactionTimeout > 0 {
		in.ExpiresAt = time.Now().Add(r.interactionTimeout).UTC().Truncate(time.Second)
	}
	st := &interactionState{kind: string(in.Kind), request: agent.Interaction{Kind: in.Kind, Options: in.Options, Questions: in.Questions}}
	r.mu.Lock()
	if _, dup := r.interactions[in.ID]; dup {
		r.mu.Unlock()
		s.log.WarnContext(ctx, "duplicate interaction id from provider", logkey.RunID, r.ID, logkey.InteractionID, in.ID)
		return
	}
	r.interactions[in.ID] = st
	if r.interactionTimeout > 0 {
		id := in.ID
		st.timer = time.AfterFunc(r.interactionTimeout, func() { s.expire(r, id) })
	}
	r.mu.Unlock()
	s.opts.Observer.InteractionOpened(st.kind)
	if s.ledger == nil || (r.replay != nil && r.replay.recorded[in.ID]) {
		return // a reattached run's request the ledger has (its event was lost)
	}
	payload, _ := json.Marshal(in)
	if len(payload) > maxInteractionPayload {
		payload = nil
	}
	err := s.ledger.RecordInteraction(ctx, InteractionRecord{
		RunID: r.ID, ID: agent.InteractionID(in.ID), ChatID: r.ChatID, NativeID: in.NativeID, Kind: string(in.Kind), Payload: payload,
	})
	if err != nil {
		s.log.ErrorContext(ctx, "record interaction", logkey.RunID, r.ID, logkey.InteractionID, in.ID, "err", err)
	}
}

// expire declines an interaction nobody answered in time, as timed_out.
func (s *Service) expire(r *Run, id string) {
	r.mu.Lock()
	st, ok := r.interactions[id]
	if !ok || st.answered {
		r.mu.Unlock()
		return
	}
	st.answered, st.timedOut = true, true
	r.mu.Unlock()
	s.log.Info("interaction timed out, declining", logkey.RunID, r.ID, logkey.InteractionID, id)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = r.send(ctx, agent.InteractionResponse{InteractionID: id, Decision: agent.DecisionDecline, By: "timeout"})
}

// resolved records a provider's resolution; a timed-out decline is recorded as
// timed_out, distinct from a user's decline.
func (s *Service) resolved(ctx context.Context, r *Run, res *agent.Resolution) {
	r.mu.Lock()
	st, ok := r.interactions[res.InteractionID]
	if ok {
		if st.timer != nil {
			st.timer.Stop()
		}
		if st.timedOut && res.Status == agent.StatusDeclined {
			res.Status, res.By = agent.StatusTimedOut, "timeout"
		}
		delete(r.interactions, res.InteractionID)
		r.resolved[res.InteractionID] = true
	}
	r.mu.Unlock()
	if !ok {
		s.log.WarnContext(ctx, "resolution of an unknown interaction", logkey.RunID, r.ID, logkey.InteractionID, res.InteractionID)
		return
	}
	s.opts.Observer.InteractionClosed(st.kind, res.Status)
	if s.ledger != nil && (r.replay == nil || !r.replay.ledgerResolved[res.InteractionID]) {
		if err := s.ledger.ResolveInteraction(ctx, r.ID, agent.InteractionID(res.InteractionID), res.Status, string(res.Decision), res.By); err != nil {
			s.log.ErrorContext(ctx, "resolve interaction", logkey.RunID, r.ID, logkey.InteractionID, res.InteractionID, "err", err)
		}
	}
}

// endInteractions resolves what the provider left open when the run ended.
func (s *Service) endInteractions(ctx context.Context, r *Run) {
	r.mu.Lock()
	var open []string
	for id := range r.interactions {
		open = append(open, id)
	}
	r.mu.Unlock()
	for _, id := range open {
		ev := agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: id, Status: agent.StatusTurnEnded}}
		s.resolved(ctx, r, ev.Resolution)
		s.appendEvent(ctx, r, ev)
	}
}
