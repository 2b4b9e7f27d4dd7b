// agentui.go: Slack's AI app surface in the fake: stream chunks (markdown
// text, task cards, plans, blocks) and what they build in a streamed
// message, assistant thread statuses, titles and suggested prompts, and the
// App Home tab (views.publish).

package slacktest

import (
	"encoding/json"
	"net/url"
	"strings"
)

// Chunk is one chunk a stream call carried, as sent.
type Chunk struct {
	Type string `json:"type"`
	// Text is a markdown_text chunk's text.
	Text string `json:"text,omitempty"`
	// ID, Title, Status, Details and Output are a task_update's; Title is
	// also a plan_update's.
	ID      string          `json:"id,omitempty"`
	Title   string          `json:"title,omitempty"`
	Status  string          `json:"status,omitempty"`
	Details string          `json:"details,omitempty"`
	Output  string          `json:"output,omitempty"`
	Blocks  json.RawMessage `json:"blocks,omitempty"`
}

// Task is a task card as a streamed message shows it: its latest state.
type Task struct {
	ID, Title, Status, Output string
	// After is how much of the message's Markdown came before the card
	// (bytes): where it sits between the paragraphs.
	After int
	// Updates counts the task_update chunks it got.
	Updates int
}

// StatusChange is one change of a thread's assistant status.
type StatusChange struct {
	Status string
	// ByReply marks a status Slack cleared because the app posted in the
	// thread.
	ByReply bool
}

// taskStatuses are the statuses Slack accepts on a task ("completed" is
// refused).
var taskStatuses = map[string]bool{"": true, "pending": true, "in_progress": true, "complete": true, "error": true}

// applyChunks validates a call's chunks and applies them to m, after its
// markdown_text; it returns the Slack error for a malformed one.
func applyChunks(m *Message, f url.Values) string {
	m.Markdown += f.Get("markdown_text")
	raw := f.Get("chunks")
	if raw == "" {
		return ""
	}
	var cs []Chunk
	if err := json.Unmarshal([]byte(raw), &cs); err != nil {
		return "invalid_chunks"
	}
	for _, c := range cs {
		switch c.Type {
		case "markdown_text":
			if c.Text == "" || len([]rune(c.Text)) > 12000 {
				return "invalid_chunks"
			}
		case "task_update":
			if c.ID == "" || c.Title == "" || !taskStatuses[c.Status] || len([]rune(c.Output)) > 256 || len([]rune(c.Details)) > 256 || len([]rune(c.Title)) > 256 {
				return "invalid_chunks"
			}
		case "plan_update":
			if c.Title == "" {
				return "invalid_chunks"
			}
		case "blocks":
			if len(c.Blocks) == 0 {
				return "invalid_chunks"
			}
		default:
			return "invalid_chunks"
		}
	}
	for _, c := range cs {
		m.Chunks = append(m.Chunks, c)
		switch c.Type {
		case "markdown_text":
			m.Markdown += c.Text
		case "task_update":
			found := false
			for i := range m.Tasks {
				if m.Tasks[i].ID == c.ID {
					t := &m.Tasks[i]
					t.Title, t.Updates = c.Title, t.Updates+1
					if c.Status != "" {
						t.Status = c.Status
					}
					if c.Output != "" {
						t.Output = c.Output
					}
					found = true
				}
			}
			if !found {
				m.Tasks = append(m.Tasks, Task{ID: c.ID, Title: c.Title, Status: c.Status, Output: c.Output, After: len(m.Markdown), Updates: 1})
			}
		case "plan_update":
			m.PlanTitle = c.Title
		}
	}
	return ""
}

// replied clears the thread's assistant status: Slack does when the app
// posts in the thread. s.mu is held.
func (s *Server) replied(channel, thread string) {
	if thread == "" {
		return
	}
	k := channel + "/" + thread
	if h := s.statuses[k]; len(h) > 0 && h[len(h)-1].Status != "" {
		s.statuses[k] = append(h, StatusChange{ByReply: true})
	}
}

// handleAgentUI answers the assistant.* and views.publish methods; ok is
// false for other methods. s.mu is held.
func (s *Server) handleAgentUI(method string, c *Call) (int, response, bool) {
	f := c.Form
	switch method {
	case "assistant.threads.setStatus":
		ch, th := f.Get("channel_id"), f.Get("thread_ts")
		if ch == "" || th == "" {
			return st(fail("invalid_arguments"))
		}
		if _, ok := s.messages[ch+"/"+th]; !ok {
			return st(fail("thread_not_found"))
		}
		if len([]rune(f.Get("status"))) > 250 {
			return st(fail("invalid_arguments"))
		}
		k := ch + "/" + th
		s.statuses[k] = append(s.statuses[k], StatusChange{Status: f.Get("status")})
		return st(okResp())
	case "assistant.threads.setTitle":
		ch, th, title := f.Get("channel_id"), f.Get("thread_ts"), f.Get("title")
		if ch == "" || th == "" || title == "" {
			return st(fail("invalid_arguments"))
		}
		s.titles[ch+"/"+th] = title
		return st(okResp())
	case "assistant.threads.setSuggestedPrompts":
		ch, th := f.Get("channel_id"), f.Get("thread_ts")
		var prompts []struct {
			Title   string `json:"title"`
			Message string `json:"message"`
		}
		// Without thread_ts: the Messages tab of agent messaging.
		if ch == "" || json.Unmarshal([]byte(f.Get("prompts")), &prompts) != nil || len(prompts) == 0 || len(prompts) > 4 {
			return st(fail("invalid_arguments"))
		}
		var out []Prompt
		for _, p := range prompts {
			if p.Title == "" || p.Message == "" {
				return st(fail("invalid_arguments"))
			}
			out = append(out, Prompt{Title: p.Title, Message: p.Message})
		}
		s.prompts[ch+"/"+th] = SuggestedPrompts{Title: f.Get("title"), Prompts: out}
		return st(okResp())
	case "views.publish":
		var req struct {
			UserID string          `json:"user_id"`
			View   json.RawMessage `json:"view"`
		}
		if json.Unmarshal(c.JSON, &req) != nil || req.UserID == "" || len(req.View) == 0 {
			return st(fail("invalid_arguments"))
		}
		var v struct {
			Type   string            `json:"type"`
			Blocks []json.RawMessage `json:"blocks"`
		}
		if json.Unmarshal(req.View, &v) != nil || v.Type != "home" {
			return st(fail("invalid_arguments"))
		}
		if len(v.Blocks) > 100 || len(req.View) > 250_000 {
			return st(fail("invalid_blocks"))
		}
		s.homes[req.UserID] = append(s.homes[req.UserID], req.View)
		s.seq++
		return http200(response{"ok": true, "view": response{"id": "VHOME" + req.UserID, "hash": strings.Repeat("h", 3)}})
	}
	return 0, nil, false
}

func okResp() (int, response) { return 200, response{"ok": true} }

func st(code int, r response) (int, response, bool) { return code, r, true }

func http200(r response) (int, response, bool) { return 200, r, true }

// Prompt is one suggested prompt.
type Prompt struct{ Title, Message string }

// SuggestedPrompts are an assistant thread's suggested prompts.
type SuggestedPrompts struct {
	Title   string
	Prompts []Prompt
}

// Status returns a thread's assistant status now ("" when none).
func (s *Server) Status(channel, thread string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.statuses[channel+"/"+thread]
	if len(h) == 0 {
		return ""
	}
	return h[len(h)-1].Status
}

// StatusHistory returns every change of a thread's assistant status, oldest
// first.
func (s *Server) StatusHistory(channel, thread string) []StatusChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]StatusChange(nil), s.statuses[channel+"/"+thread]...)
}

// Title returns an assistant thread's title.
func (s *Server) Title(channel, thread string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.titles[channel+"/"+thread]
}

// Prompts returns an assistant thread's suggested prompts (thread "": the
// channel's Messages tab).
func (s *Server) Prompts(channel, thread string) SuggestedPrompts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prompts[channel+"/"+thread]
}

// Home returns every App Home view published for user, oldest first.
func (s *Server) Home(user string) []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.homes[user]...)
}

// Tiers are Slack's documented rate limits of the methods the bot calls, per
// workspace: chat.update and chat.delete Tier 3, chat.appendStream Tier 4,
// chat.stopStream Tier 2, views.* Tier 4, chat.postMessage about one a
// second. chat.startStream, the assistant.threads.* methods ("special") and
// setTitle/setSuggestedPrompts have no number in Slack's docs: the fake
// gives them Tier 3 (startStream, setTitle, setSuggestedPrompts) and Tier 4
// (setStatus); agents.sessions.setStatus is Tier 3, and so is
// agents.sessions.rename here.
var Tiers = map[string]Rate{
	"chat.postMessage":                      {PerMinute: 60, Burst: 10},
	"chat.update":                           Tier3,
	"chat.delete":                           Tier3,
	"chat.startStream":                      Tier3,
	"chat.appendStream":                     Tier4,
	"chat.stopStream":                       Tier2,
	"assistant.threads.setStatus":           Tier4,
	"assistant.threads.setTitle":            Tier3,
	"assistant.threads.setSuggestedPrompts": Tier3,
	"agents.sessions.setStatus":             Tier3,
	"agents.sessions.rename":                Tier3,
	"views.publish":                         Tier4,
	"views.open":                            Tier4,
}

// SetTiers enforces Tiers on every method, time-compressed by scale (1 is
// real time; 10 allows ten times the calls per minute).
func (s *Server) SetTiers(scale float64) {
	for m, r := range Tiers {
		s.SetLimit(m, Rate{PerMinute: r.PerMinute * scale, Burst: r.Burst})
	}
}
