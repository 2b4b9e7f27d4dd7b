// sessions.go: Slack's agent sessions in the fake: agents.sessions.setStatus
// and agents.sessions.rename (form-encoded, Tier 3), refused with
// not_authorized unless the app declared agent_view, and the events a
// person's actions on a session send: agent_session_stopped (Slack's Stop
// button, which halts the thread's streams) and agent_session_title_changed.

package slacktest

import (
	"fmt"
	"time"
)

// sessionStatuses are the statuses agents.sessions.setStatus takes (not
// free text).
var sessionStatuses = map[string]bool{"active": true, "processing": true, "suspended": true, "closed": true}

// SessionCall is one change of an agent session: a status set, or a rename.
type SessionCall struct {
	// Status is the status set ("" for a rename).
	Status string
	// Title is the title the call carried ("" when none).
	Title string
	// Initiator is the initiator_user_id the call carried.
	Initiator string
}

// session is a thread's agent session.
type session struct {
	status, title string
	calls         []SessionCall
}

// AgentSessions makes agents.sessions.* answer err ("not_authorized",
// "unknown_method", "missing_scope"), as a workspace or app without agent
// sessions does, or accept them (""), as for an app that declared
// agent_view. By default they are refused with not_authorized: the fake's
// app has not declared agent_view until this is called with "".
func (s *Server) AgentSessions(err string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noSessions = err
	s.sessionsSet = true
}

// sessionsRefusal is the error agents.sessions.* answer now ("" when they
// are accepted). s.mu is held.
func (s *Server) sessionsRefusal() string {
	if !s.sessionsSet {
		return "not_authorized"
	}
	return s.noSessions
}

// handleSessions answers agents.sessions.setStatus and .rename; ok is false
// for other methods. s.mu is held.
func (s *Server) handleSessions(method string, c *Call) (int, response, bool) {
	if method != "agents.sessions.setStatus" && method != "agents.sessions.rename" {
		return 0, nil, false
	}
	if e := s.sessionsRefusal(); e != "" {
		return st(fail(e))
	}
	f := c.Form
	ch, th, title := f.Get("channel_id"), f.Get("thread_ts"), f.Get("title")
	if ch == "" || th == "" {
		return st(fail("invalid_arguments"))
	}
	if _, ok := s.messages[ch+"/"+th]; !ok {
		return st(fail("thread_not_found"))
	}
	if len([]rune(title)) > 255 {
		return st(fail("invalid_arguments"))
	}
	k := ch + "/" + th
	se := s.sessions[k]
	if method == "agents.sessions.rename" {
		if se == nil {
			return st(fail("session_not_found"))
		}
		if title == "" {
			return st(fail("invalid_arguments"))
		}
		se.title = title
		se.calls = append(se.calls, SessionCall{Title: title})
		return http200(response{"ok": true, "title": title})
	}
	status := f.Get("status")
	if !sessionStatuses[status] {
		return st(fail("invalid_status"))
	}
	if se == nil {
		// The call creates the session; title and initiator only count then.
		se = &session{title: title}
		s.sessions[k] = se
	}
	se.status = status
	se.calls = append(se.calls, SessionCall{Status: status, Title: title, Initiator: f.Get("initiator_user_id")})
	return http200(response{"ok": true, "status": status, "agent_status": status, "title": se.title})
}

// SessionStatus returns a thread's agent session status ("" when it has no
// session).
func (s *Server) SessionStatus(channel, thread string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se := s.sessions[channel+"/"+thread]; se != nil {
		return se.status
	}
	return ""
}

// SessionTitle returns a thread's agent session title.
func (s *Server) SessionTitle(channel, thread string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se := s.sessions[channel+"/"+thread]; se != nil {
		return se.title
	}
	return ""
}

// SessionCalls returns the calls that changed a thread's agent session
// (accepted ones), oldest first.
func (s *Server) SessionCalls(channel, thread string) []SessionCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se := s.sessions[channel+"/"+thread]; se != nil {
		return append([]SessionCall(nil), se.calls...)
	}
	return nil
}

// SessionStatuses returns the statuses a thread's agent session was set to,
// in order.
func (s *Server) SessionStatuses(channel, thread string) []string {
	var out []string
	for _, c := range s.SessionCalls(channel, thread) {
		if c.Status != "" {
			out = append(out, c.Status)
		}
	}
	return out
}

// sessionEvent wraps an agent session event in an event_callback.
func (s *Server) sessionEvent(inner map[string]any) map[string]any {
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("EvS%08d", s.seq)
	s.mu.Unlock()
	return map[string]any{"token": "legacy", "team_id": TeamID, "api_app_id": AppID, "type": "event_callback",
		"event_id": id, "event_time": time.Now().Unix(), "event": inner, "authed_users": []string{BotUserID}}
}

// StopSession is a person pressing Slack's own Stop button on the thread's
// agent session: the thread's streams are halted (no longer streaming) and
// agent_session_stopped is delivered over Socket Mode with their ts in
// streaming_message_ts. It returns the envelope id and the halted streams.
func (s *Server) StopSession(channel, thread, user string) (string, []string, error) {
	s.mu.Lock()
	var halted []string
	for _, k := range s.order {
		m := s.messages[k]
		if m.Channel == channel && m.ThreadTS == thread && m.Streaming {
			m.Streaming = false
			halted = append(halted, m.TS)
		}
	}
	ts := s.nextTS()
	s.mu.Unlock()
	ev := map[string]any{"type": "agent_session_stopped", "channel": channel, "thread_ts": thread, "user": user, "event_ts": ts}
	if len(halted) > 0 {
		ev["streaming_message_ts"] = halted
	}
	id, err := s.Envelope("events_api", s.sessionEvent(ev), 0)
	return id, halted, err
}

// RenameSession is a person renaming the thread's agent session: its title
// changes and agent_session_title_changed is delivered over Socket Mode.
func (s *Server) RenameSession(channel, thread, user, title string) (string, error) {
	s.mu.Lock()
	k := channel + "/" + thread
	se := s.sessions[k]
	if se == nil {
		se = &session{}
		s.sessions[k] = se
	}
	prev := se.title
	se.title = title
	ts := s.nextTS()
	s.mu.Unlock()
	ev := map[string]any{"type": "agent_session_title_changed", "channel": channel, "thread_ts": thread, "user": user,
		"team_id": TeamID, "title": title, "event_ts": ts}
	if prev != "" {
		ev["previous_title"] = prev
	}
	return s.Envelope("events_api", s.sessionEvent(ev), 0)
}
