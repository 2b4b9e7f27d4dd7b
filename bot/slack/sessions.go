// sessions.go: each thread's chat as a Slack agent session. Its lifecycle
// status (agents.sessions.setStatus) follows what the thread shows:
// processing while a turn runs (the outbox sets the turn's status, or a
// message shows the Stop button), suspended while an approval or a question
// waits (a message shows their buttons), active once the answer is final
// (its footer, or the outbox clearing the status). On start, a thread whose
// answer ends without this process having seen its turn (a run resumed
// after a restart or a crash) is set active, as its session may still show
// processing. The session is created
// with the first prompt as title (scrubbed). A workspace that refuses agent
// sessions is told apart on its first refusal and remembered: there the
// thread status is assistant.threads.setStatus, as before agent sessions.
//
// Only changes are sent (the last status Slack took is remembered per
// thread), one call at a time per thread, so they arrive in order.

package slack

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/render"
)

// sessionsMode is what a workspace does with agent sessions.
type sessionsMode int

const (
	sessionsUnknown sessionsMode = iota // not tried yet
	sessionsOn                          // agents.sessions.setStatus works
	sessionsRefused                     // refused: assistant.threads.setStatus instead
)

// sessionsRefusals are the errors of agents.sessions.setStatus that mean the
// workspace or app has no agent sessions (the app did not declare
// agent_view, the method or its scope is missing).
var sessionsRefusals = map[string]bool{
	"not_authorized": true, "unknown_method": true, "missing_scope": true,
	"not_allowed_token_type": true, "feature_not_enabled": true, "team_not_allowed": true, "method_deprecated": true,
}

// maxThreadSessions bounds the threads remembered.
const maxThreadSessions = 10000

// threadSession is what a thread's agent session shows and should show.
type threadSession struct {
	send sync.Mutex // held while a call for the thread is made

	// Under sessions.mu:
	running   bool
	pending   map[string]bool // the bot's messages showing approval or question buttons
	closed    bool
	stale     bool   // may show a status an earlier process left: set active even if none was sent
	sent      string // the last status Slack took ("" none)
	title     string // the title to create the session with
	titled    bool   // the session has its title (sent, or renamed by a person)
	initiator string
	// assistant says the assistant status was set in place of a session
	// status Slack put off: it is cleared with the turn's end.
	assistant bool
	// prompted says someone prompted in the thread since this process
	// started; a turn running in a thread that was not (resumed after a
	// restart) keeps the processing the earlier process set.
	prompted bool
}

// sessions keeps the agent sessions of the threads.
type sessions struct {
	api  *slack.Client
	log  *slog.Logger
	wg   *sync.WaitGroup
	base context.Context

	// detecting is held while a workspace's first call finds out whether
	// it has agent sessions, so that it is found out once.
	detecting sync.Mutex

	mu      sync.Mutex
	teams   map[string]sessionsMode
	threads map[chatops.Place]*threadSession
	// halted are the streams Slack halted (agent_session_stopped), by
	// channel + "/" + ts: nothing more is appended to them.
	halted map[string]bool
}

func newSessions(api *slack.Client, log *slog.Logger, wg *sync.WaitGroup, base context.Context) *sessions {
	return &sessions{api: api, log: log, wg: wg, base: base, teams: map[string]sessionsMode{},
		threads: map[chatops.Place]*threadSession{}, halted: map[string]bool{}}
}

// thread returns p's state; s.mu is held.
func (s *sessions) thread(p chatops.Place) *threadSession {
	t := s.threads[p]
	if t == nil {
		if len(s.threads) >= maxThreadSessions {
			clear(s.threads)
		}
		t = &threadSession{pending: map[string]bool{}}
		s.threads[p] = t
	}
	return t
}

// mode returns what the workspace does with agent sessions.
func (s *sessions) mode(team string) sessionsMode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.teams[team]
}

// prompted notes a prompt in the thread: the first one (scrubbed) is the
// session's title, and its sender the initiator.
func (s *sessions) prompted(p chatops.Place, user, scrubbed string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.thread(p)
	t.prompted = true
	if t.title == "" && !t.titled {
		t.title = oneLineTitle(scrubbed)
	}
	if t.initiator == "" {
		t.initiator = user
	}
}

// standIn notes whether the thread's assistant status stands in for its
// session status (set in place of a status Slack put off) and reports
// whether it did before.
func (s *sessions) standIn(p chatops.Place, on bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.thread(p)
	was := t.assistant
	t.assistant = on
	return was
}

// renamed notes that a person renamed the session (agent_session_title_changed).
func (s *sessions) renamed(p chatops.Place, title string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.thread(p)
	t.title, t.titled = title, true
}

// activity notes the outbox setting the turn's status (running) or clearing
// it (the answer is final, or a restart clears what a run left).
func (s *sessions) activity(p chatops.Place, running bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.thread(p)
	t.running = running
	if !running {
		clear(t.pending)
		t.stale = true
	}
}

// waitingButtons are the buttons of an approval or a question.
func waiting(b chatops.Button) bool {
	switch b.ID {
	case render.ButtonApprove, render.ButtonApproveSession, render.ButtonAnswer:
		return true
	}
	return strings.HasPrefix(b.ID, render.ButtonOptionPrefix)
}

// view notes what the bot's message id in the thread shows now: the Stop
// button (a turn runs), an approval's or a question's buttons (it waits),
// the answer's footer (the turn ended). It reports whether that changed
// what the session should show.
func (s *sessions) view(p chatops.Place, id string, v chatops.View) bool {
	stop, wait := false, false
	for _, b := range v.Buttons {
		stop = stop || b.ID == render.ButtonStop
		wait = wait || waiting(b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.threads[p]
	if t == nil && !stop && !wait {
		if v.Footer == "" {
			return false
		}
		// An answer ends in a thread this process has not seen run: a
		// turn resumed after a restart, whose session may still show
		// processing.
		s.thread(p).stale = true
		return true
	}
	t = s.thread(p)
	before := t.want()
	switch {
	case wait && id != "":
		t.pending[id] = true
	case id != "":
		delete(t.pending, id)
	}
	if stop {
		t.running = true
	} else if v.Footer != "" {
		t.running = false
		clear(t.pending)
	}
	return t.want() != before
}

// gone notes that the bot's message id in the thread was deleted.
func (s *sessions) gone(p chatops.Place, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.threads[p]
	if t == nil || !t.pending[id] {
		return false
	}
	delete(t.pending, id)
	return true
}

// halt notes the streams Slack halted in the thread (agent_session_stopped).
func (s *sessions) halt(channel string, ts []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.halted) > maxThreadSessions {
		clear(s.halted)
	}
	for _, x := range ts {
		s.halted[channel+"/"+x] = true
	}
}

// isHalted reports whether Slack halted the stream ts in channel.
func (s *sessions) isHalted(channel, ts string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.halted[channel+"/"+ts]
}

// want is the status the session should show ("" none); sessions.mu is held.
func (t *threadSession) want() string {
	switch {
	case t.closed:
		return slack.AgentSessionStatusClosed
	case t.running && len(t.pending) > 0:
		return slack.AgentSessionStatusSuspended
	case t.running && (t.prompted || t.sent != ""):
		return slack.AgentSessionStatusProcessing
	case t.running:
		return "" // resumed: as the earlier process left it
	case t.sent != "" || t.stale:
		return slack.AgentSessionStatusActive
	}
	return ""
}

// kick brings the thread's session up to date off the caller.
func (s *sessions) kick(p chatops.Place) {
	if s.mode(p.Workspace) == sessionsRefused {
		return
	}
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(s.base, 30*time.Second)
		defer cancel()
		_ = s.sync(ctx, p)
	})
}

// sync sends the thread's status while it differs from what Slack shows,
// one call at a time. A rate limit puts the call off (limited is true); a
// refusal marks the workspace as without agent sessions.
func (s *sessions) sync(ctx context.Context, p chatops.Place) (limited bool) {
	s.mu.Lock()
	t := s.thread(p)
	s.mu.Unlock()
	t.send.Lock()
	defer t.send.Unlock()
	for {
		s.mu.Lock()
		want, mode := t.want(), s.teams[p.Workspace]
		if want == t.sent || want == "" || mode == sessionsRefused {
			if want == t.sent {
				t.stale = false
			}
			s.mu.Unlock()
			return false
		}
		params := slack.AgentSessionSetStatusParameters{Status: want, ChannelID: p.Channel, ThreadTS: p.Thread}
		if !t.titled {
			params.Title, params.InitiatorUserID = t.title, t.initiator
		}
		s.mu.Unlock()
		found := func() {}
		if mode == sessionsUnknown {
			s.detecting.Lock()
			if s.mode(p.Workspace) != sessionsUnknown {
				s.detecting.Unlock()
				continue // found out meanwhile
			}
			found = s.detecting.Unlock
		}

		_, err := s.api.SetAgentSessionStatusContext(ctx, params)
		var se slack.SlackErrorResponse
		var rl *slack.RateLimitedError
		switch {
		case err == nil:
			s.mu.Lock()
			s.teams[p.Workspace] = sessionsOn
			t.sent, t.stale = want, false
			if params.Title != "" {
				t.titled = true
			}
			s.mu.Unlock()
			found()
		case errors.As(err, &se) && sessionsRefusals[se.Err]:
			s.mu.Lock()
			first := s.teams[p.Workspace] != sessionsRefused
			s.teams[p.Workspace] = sessionsRefused
			s.mu.Unlock()
			found()
			if first {
				s.log.InfoContext(ctx, "slack agent sessions refused in this workspace: the assistant thread status instead",
					logkey.Team, p.Workspace, logkey.Err, err)
			}
			return false
		case errors.As(err, &rl):
			found()
			// Tier 3: try again when Slack says, off this caller.
			s.wg.Go(func() {
				select {
				case <-s.base.Done():
					return
				case <-time.After(rl.RetryAfter):
				}
				ctx, cancel := context.WithTimeout(s.base, 30*time.Second)
				defer cancel()
				_ = s.sync(ctx, p)
			})
			return true
		default:
			found()
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "set the agent session status", logkey.Channel, p.Channel, logkey.Status, want, logkey.Err, err)
			}
			return false
		}
	}
}
