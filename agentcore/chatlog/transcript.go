// transcript.go: the visible transcript, the one fold of a chat's log into what
// the user and the assistant said.

package chatlog

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// TranscriptLimit bounds the visible transcript handed to an agent without a
// native session, in bytes.
const TranscriptLimit = 24000

// Role says who spoke a turn.
type Role string

// The roles of the visible transcript.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Turn is one stretch of the visible conversation.
type Turn struct {
	Role Role
	Text string
}

// Fold folds a chat's events, oldest first, into its visible turns: the
// user's prompts and the assistant's text, no tool output, reasoning or system
// notes. Text before and after a tool call are separate paragraphs of one
// turn. Payloads that do not decode are left out. The zero Fold is empty.
type Fold struct {
	turns []turn
	last  Role // the role of the last turn (or the state a Backward starts from)
}

type turn struct {
	role Role
	text []byte
	cont bool // continues a turn that began before the window (no heading)
}

// Add folds the next event.
func (f *Fold) Add(typ string, payload []byte) {
	switch typ {
	case TypeUserMessage:
		var m UserMessage
		if json.Unmarshal(payload, &m) == nil {
			f.user(m.Text)
		}
	case string(agent.EventToolStarted):
		f.toolStarted()
	case string(agent.EventAssistantDelta):
		var e agent.Event
		if json.Unmarshal(payload, &e) == nil {
			f.assistant(e.Text)
		}
	}
}

func (f *Fold) user(text string) {
	f.turns = append(f.turns, turn{role: RoleUser, text: []byte(text)})
	f.last = RoleUser
}

func (f *Fold) toolStarted() {
	if f.last != RoleAssistant {
		return
	}
	if n := len(f.turns); n > 0 {
		f.turns[n-1].text = append(f.turns[n-1].text, '\n')
	} else {
		f.turns = append(f.turns, turn{role: RoleAssistant, text: []byte{'\n'}, cont: true})
	}
}

func (f *Fold) assistant(text string) {
	if n := len(f.turns); f.last == RoleAssistant && n > 0 {
		f.turns[n-1].text = append(f.turns[n-1].text, text...)
		return
	}
	if f.last == RoleAssistant { // a Backward's window starts inside this turn
		f.turns = append(f.turns, turn{role: RoleAssistant, text: []byte(text), cont: true})
		return
	}
	f.turns = append(f.turns, turn{role: RoleAssistant, text: []byte(text)})
	f.last = RoleAssistant
}

// Turns returns the turns folded so far.
func (f *Fold) Turns() []Turn {
	out := make([]Turn, len(f.turns))
	for i, t := range f.turns {
		out[i] = Turn{Role: t.role, Text: string(t.text)}
	}
	return out
}

// Transcript returns the turns as text ("User: …" and "Assistant: …"
// paragraphs), trimmed and cut to its last TranscriptLimit bytes at a rune
// boundary.
func (f *Fold) Transcript() string {
	return Tail(strings.TrimSpace(f.text()), TranscriptLimit)
}

func (f *Fold) text() string {
	var b strings.Builder
	for _, t := range f.turns {
		if !t.cont {
			switch t.role {
			case RoleUser:
				b.WriteString("\n\nUser: ")
			case RoleAssistant:
				b.WriteString("\n\nAssistant: ")
			}
		}
		b.Write(t.text)
	}
	return b.String()
}

// Backward builds the transcript Fold would build, from events given newest
// first, and says when it has read enough: it keeps only what the last
// TranscriptLimit bytes can hold, plus one page of decoding, whatever the
// length of the chat.
type Backward struct {
	rev       []item // decodable visible events, newest first
	size      int    // text bytes in rev
	nextCheck int    // size at which to try to close the window
	done      bool
	start     int  // with done: rev[:start] is the window
	state     Role // with done: the role in force before the window
}

type item struct {
	typ  byte // 'u' user, 'a' assistant, 't' tool started
	text string
}

// Add takes the next older event and reports whether the transcript is
// complete: no older event can change it. Events after that are ignored.
func (b *Backward) Add(typ string, payload []byte) bool {
	if b.done {
		return true
	}
	var it item
	switch typ {
	case TypeUserMessage:
		var m UserMessage
		if json.Unmarshal(payload, &m) != nil {
			return false
		}
		it = item{typ: 'u', text: m.Text}
	case string(agent.EventToolStarted):
		it = item{typ: 't'}
	case string(agent.EventAssistantDelta):
		var e agent.Event
		if json.Unmarshal(payload, &e) != nil {
			return false
		}
		it = item{typ: 'a', text: e.Text}
	default:
		return false
	}
	if it.typ != 't' && b.size >= max(b.nextCheck, TranscriptLimit) {
		// Everything newer than this event is known, and so is the state
		// it leaves: its role. Enough text after it closes the window.
		state := RoleUser
		if it.typ == 'a' {
			state = RoleAssistant
		}
		if len(strings.TrimSpace(b.fold(len(b.rev), state).text())) > TranscriptLimit {
			b.done, b.start, b.state = true, len(b.rev), state
			return true
		}
		b.nextCheck = 2 * b.size // mostly blank: try again when it has doubled
	}
	b.rev = append(b.rev, it)
	b.size += len(it.text)
	return false
}

// fold folds rev[:n] oldest first, starting from the state given.
func (b *Backward) fold(n int, state Role) *Fold {
	f := &Fold{last: state}
	for i := n - 1; i >= 0; i-- {
		switch it := b.rev[i]; it.typ {
		case 'u':
			f.user(it.text)
		case 't':
			f.toolStarted()
		case 'a':
			f.assistant(it.text)
		}
	}
	return f
}

// Transcript returns what Fold.Transcript returns for the whole chat.
func (b *Backward) Transcript() string {
	if b.done {
		return b.fold(b.start, b.state).Transcript()
	}
	return b.fold(len(b.rev), "").Transcript()
}

// Tail returns the last n bytes of s, cut at a rune boundary.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}
