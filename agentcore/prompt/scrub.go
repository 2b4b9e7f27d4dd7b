// Scrubbing: every event a run persists is cleaned of configured secret values
// first, streamed text with a held-back tail per stream.

package prompt

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// Scrubber removes configured secret values from text
// (agentcore/redact.Redactor implements it).
type Scrubber interface {
	// String returns s with every secret replaced.
	String(s string) string
	// Cut is String for text that may have been cut short ("…" where a
	// provider truncated it): it also masks the piece of a secret just before
	// or after each cut mark.
	Cut(s string) string
	// JSON returns raw with every secret inside its strings replaced, still valid JSON.
	JSON(raw json.RawMessage) json.RawMessage
	// Release scrubs a stream's pending text: out can be persisted now, held
	// (raw) could still begin a secret and waits for the stream's next piece.
	Release(text string) (out, held string)
}

// streamKey names one text stream of a run: the assistant's text, its
// reasoning, or one tool's output.
type streamKey struct {
	typ  agent.EventType
	tool string
}

// heldText is a stream's text held back ("" for none), and the event it came with.
type heldText struct {
	text string
	ev   agent.Event
}

// runScrub is one run attempt's scrubbing state.
type runScrub struct {
	sc Scrubber

	mu   sync.Mutex // a provider may emit from more than one goroutine
	held map[streamKey]*heldText
	// order lists the keys of held in the order their text was held, so a
	// flush keeps the order text arrived in.
	order []streamKey
}

func newRunScrub(sc Scrubber) *runScrub {
	return &runScrub{sc: sc, held: map[streamKey]*heldText{}}
}

// isStream reports whether ev is a piece of a text stream, and which.
func isStream(ev agent.Event) (streamKey, bool) {
	switch ev.Type {
	case agent.EventAssistantDelta, agent.EventReasoningDelta:
		return streamKey{typ: ev.Type}, true
	case agent.EventToolOutput:
		if ev.Text == "" {
			return streamKey{}, false // output carried in Tool.Output only
		}
		k := streamKey{typ: ev.Type}
		if ev.Tool != nil {
			k.tool = ev.Tool.ID
		}
		return k, true
	}
	return streamKey{}, false
}

// events passes to emit what to persist for ev, scrubbed, in order: first
// the text that ev's arrival decides to release from other streams (the
// assistant's and reasoning text before any other event, a tool's output
// before that tool's next event, everything before an event of no tool),
// then ev itself, unless its text is all held back.
func (rs *runScrub) events(ev agent.Event, emit func(agent.Event)) {
	if rs == nil || rs.sc == nil {
		emit(ev)
		return
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	k, stream := isStream(ev)
	if !stream {
		rs.flush(emit, func(h streamKey) bool {
			switch {
			case h.typ != agent.EventToolOutput:
				return true
			case ev.Tool == nil:
				return true
			default:
				return h.tool == ev.Tool.ID
			}
		})
		emit(scrubEvent(rs.sc, ev))
		return
	}
	h := rs.held[k]
	had := h != nil && h.text != ""
	pending := ev.Text
	if had {
		pending = h.text + ev.Text
	}
	text, rest := rs.sc.Release(pending)
	switch {
	case rest == "" && had:
		h.text, h.ev = "", agent.Event{}
		if i := slices.Index(rs.order, k); i >= 0 {
			rs.order = slices.Delete(rs.order, i, i+1)
		}
	case rest != "":
		if h == nil {
			h = &heldText{} // kept for the stream's next holds
			rs.held[k] = h
		}
		if !had {
			rs.order = append(rs.order, k)
		}
		h.text, h.ev = rest, ev
	}
	if text == "" {
		return
	}
	// A piece cut short (a tool's output bounded by its provider) may end in
	// the head of a secret before its cut mark; the released text holds all
	// of it.
	text = rs.sc.Cut(text)
	changed := text != ev.Text
	ev.Text = "" // scrubbed above, with the stream's held text
	ev = scrubEvent(rs.sc, ev)
	ev.Text = text
	if changed && ev.Native != nil && len(ev.Native.Payload) > 0 {
		// The native copy of a piece whose text was cut or masked would keep
		// what the text no longer shows (half a secret).
		n := *ev.Native
		n.Payload = nil
		ev.Native = &n
	}
	emit(ev)
}

// flushAll releases every stream's held text (the run's end).
func (rs *runScrub) flushAll(emit func(agent.Event)) {
	if rs == nil {
		return
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.flush(emit, func(streamKey) bool { return true })
}

// flush releases the held text of the streams that match, as events of
// their streams, in the order the text was held.
func (rs *runScrub) flush(emit func(agent.Event), match func(streamKey) bool) {
	if len(rs.order) == 0 {
		return
	}
	kept := rs.order[:0]
	for _, k := range rs.order {
		if !match(k) {
			kept = append(kept, k)
			continue
		}
		h := rs.held[k]
		ev := scrubEvent(rs.sc, h.ev)
		ev.Text = rs.sc.Cut(h.text)
		h.text, h.ev = "", agent.Event{}
		if ev.Native != nil {
			n := *ev.Native
			n.Payload = nil
			ev.Native = &n
		}
		emit(ev)
	}
	clear(rs.order[len(kept):])
	rs.order = kept
}

// scrubEvent returns a copy of ev with every secret removed from its text
// fields and JSON payloads. Text is scrubbed with Cut: providers shorten
// summaries, titles, outputs and stderr tails before the event gets here, and
// the piece of a secret a cut leaves must go too. Ids (session, tool, interaction, native) are kept
// as they are: they correlate, and no secret is worth breaking them for. The
// original event is never modified: a provider may hold on to its pointers.
func scrubEvent(sc Scrubber, ev agent.Event) agent.Event {
	if sc == nil {
		return ev
	}
	ev.Text = sc.Cut(ev.Text)
	ev.Subtype = sc.Cut(ev.Subtype)
	ev.Model = sc.Cut(ev.Model)
	if t := ev.Tool; t != nil {
		c := *t
		c.Name, c.Summary, c.Output = sc.Cut(c.Name), sc.Cut(c.Summary), sc.Cut(c.Output)
		c.Input = sc.JSON(c.Input)
		ev.Tool = &c
	}
	if in := ev.Interaction; in != nil {
		c := *in
		c.Title, c.Command, c.Cwd, c.Reason, c.Diff = sc.Cut(c.Title), sc.Cut(c.Command), sc.Cut(c.Cwd), sc.Cut(c.Reason), sc.Cut(c.Diff)
		c.Payload = sc.JSON(c.Payload)
		if len(c.Options) > 0 {
			c.Options = slices.Clone(c.Options)
			for i := range c.Options {
				c.Options[i].Label = sc.Cut(c.Options[i].Label)
			}
		}
		if len(c.Questions) > 0 {
			c.Questions = slices.Clone(c.Questions)
			for i := range c.Questions {
				q := &c.Questions[i]
				q.Header, q.Text = sc.Cut(q.Header), sc.Cut(q.Text)
				if len(q.Options) > 0 {
					q.Options = slices.Clone(q.Options)
					for j := range q.Options {
						q.Options[j] = sc.Cut(q.Options[j])
					}
				}
			}
		}
		ev.Interaction = &c
	}
	if r := ev.Resolution; r != nil {
		c := *r
		c.By = sc.Cut(c.By)
		ev.Resolution = &c
	}
	if n := ev.Native; n != nil {
		c := *n
		c.Kind = sc.Cut(c.Kind)
		c.Payload = sc.JSON(c.Payload)
		ev.Native = &c
	}
	return ev
}
