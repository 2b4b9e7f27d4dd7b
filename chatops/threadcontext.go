// threadcontext.go: the thread is the context. A chat that starts in a thread
// that already has messages gets them with its first prompt; later prompts
// get what others said in the thread since the bot's last prompt there
// ("meanwhile"). The front-end reads the thread (ThreadReader); the desk
// decides when, scrubs, bounds and words it.

package chatops

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// DefaultContextBytes bounds the thread context of one prompt when
// DeskOptions.ContextBytes is not set (config context.max_bytes).
const DefaultContextBytes = 16384

// ThreadMessage is one message of a thread as its platform holds it.
type ThreadMessage struct {
	// ID is the platform's id of the message (Slack ts, Matrix event id).
	ID string
	// Author is the sender's display name; AuthorID the platform's user id.
	Author, AuthorID string
	// Own marks a message this bot posted.
	Own bool
	// Time is when the platform received it (zero when unknown).
	Time time.Time
	Text string
	// Files are the names of the files attached to it.
	Files []string
}

// HistoryQuery says which messages of a thread ThreadHistory returns.
type HistoryQuery struct {
	// Before is the id of the message being handled: it and what came after
	// it are left out. When it is the thread's own first message, a platform
	// where a message can answer an earlier one outside threads (a Matrix
	// reply) returns the chain it answers.
	Before string
	// Until, when set, is Before's time: only messages sent before it.
	Until time.Time
	// Since, when set, leaves out messages sent at or before it.
	Since time.Time
}

// ThreadReader is an optional Surface capability: a thread's messages,
// oldest first, as far as the bot may read them (its own messages
// included, marked Own).
type ThreadReader interface {
	ThreadHistory(ctx context.Context, p Place, q HistoryQuery) ([]ThreadMessage, error)
}

// LastPrompts is an optional interface of the Store given to NewDesk: when
// the chat's latest run started (ok false when it has none). After a
// restart it stands in for the time of the bot's last prompt in a thread,
// which the desk otherwise remembers.
type LastPrompts interface {
	LastRunStart(ctx context.Context, chatID agent.ChatID) (at time.Time, ok bool, err error)
}

// Headers of the context blocks and of the request after them.
const (
	earlierHeader   = "Earlier in this thread (the messages before you were asked, oldest first):"
	meanwhileHeader = "Said in this thread since your last turn (by others, oldest first):"
	requestHeader   = "Request:"
	// ownAuthor marks the bot's own messages in the context.
	ownAuthor = "Threadline (you, earlier)"
)

// promptOrigin is the platform message a prompt came in.
type promptOrigin struct {
	id   string
	sent time.Time
	// fresh marks the first prompt of a chat created for it.
	fresh bool
}

// contextBytes is the bound of a prompt's thread context.
func (t *Desk) contextBytes() int {
	if t.opts.ContextBytes > 0 {
		return t.opts.ContextBytes
	}
	return DefaultContextBytes
}

// reader returns the platform's ThreadReader.
func (t *Desk) reader(platform string) (ThreadReader, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.readers[platform]
	return r, ok
}

// since returns where the thread's context starts for the chat's next
// prompt: zero with first set for its first prompt (the whole thread before
// it), else the time of the bot's last prompt in the thread. ok is false
// when that is unknown (nothing is added then).
func (t *Desk) since(ctx context.Context, p Place, chatID agent.ChatID, o promptOrigin) (at time.Time, first, ok bool) {
	if o.fresh {
		return time.Time{}, true, true
	}
	t.mu.Lock()
	at, ok = t.marks[p]
	t.mu.Unlock()
	if ok {
		return at, false, true
	}
	lp, isLP := t.store.(LastPrompts)
	if !isLP {
		return time.Time{}, false, false
	}
	at, ran, err := lp.LastRunStart(ctx, chatID)
	if err != nil {
		t.log.WarnContext(ctx, "read the chat's last run for the thread context", logkey.ChatID, chatID, "err", err)
		return time.Time{}, false, false
	}
	if !ran {
		return time.Time{}, true, true
	}
	return at, false, true
}

// prompted remembers that the chat got a prompt of the thread sent at
// (now when unknown): the next prompt's "meanwhile" starts after it.
func (t *Desk) prompted(p Place, at time.Time) {
	if at.IsZero() {
		at = time.Now()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.marks) > 10000 {
		clear(t.marks) // LastPrompts stands in for what is forgotten
	}
	if prev, ok := t.marks[p]; !ok || at.After(prev) {
		t.marks[p] = at
	}
}

// withThreadContext returns the prompt text with the thread's context before
// it, when the channel takes it and the platform can read threads: the
// earlier messages for a chat's first prompt, what others said since the
// bot's last prompt otherwise. A thread that cannot be read costs the
// context, never the prompt: the failure is logged and said in one line.
func (t *Desk) withThreadContext(ctx context.Context, p Place, chatID agent.ChatID, o promptOrigin, text string) string {
	if o.id == "" || t.policy.Channel(p).ThreadContext == "off" {
		return text
	}
	r, ok := t.reader(p.Platform)
	if !ok {
		return text
	}
	since, first, ok := t.since(ctx, p, chatID, o)
	if !ok {
		t.log.DebugContext(ctx, "no thread context: the bot's last prompt in the thread is unknown", logkey.Place, p.String())
		return text
	}
	msgs, err := r.ThreadHistory(ctx, p, HistoryQuery{Before: o.id, Until: o.sent, Since: since})
	if err != nil {
		t.log.WarnContext(ctx, "read the thread for the prompt's context", logkey.Place, p.String(), logkey.ChatID, chatID, "err", err)
		what := "this thread's earlier messages"
		if !first {
			what = "what was said in this thread since my last turn"
		}
		if nerr := t.notice(ctx, p, "I could not read "+what+", so the agent goes on without them."); nerr != nil {
			t.log.WarnContext(ctx, "post the thread context notice", "err", nerr)
		}
		return text
	}
	header := earlierHeader
	if !first {
		header = meanwhileHeader
	}
	block := t.contextBlock(header, keepContext(msgs, o, since, first), t.contextBytes())
	if block == "" {
		return text
	}
	return block + "\n\n" + requestHeader + "\n" + text
}

// keepContext leaves out of msgs what the context does not carry: the
// prompt's own message and what came after it, what came before since, and
// in a "meanwhile" the bot's own messages (the agent's answers).
func keepContext(msgs []ThreadMessage, o promptOrigin, since time.Time, first bool) []ThreadMessage {
	var out []ThreadMessage
	for _, m := range msgs {
		switch {
		case m.ID == o.id:
			return out // the messages after it come later than the prompt
		case !o.sent.IsZero() && !m.Time.IsZero() && m.Time.After(o.sent):
			continue
		case !since.IsZero() && !m.Time.After(since):
			continue
		case m.Own && !first:
			continue
		case strings.TrimSpace(m.Text) == "" && len(m.Files) == 0:
			continue
		}
		out = append(out, m)
	}
	return out
}

// contextBlock words msgs under header, scrubbed, in at most max bytes: the
// newest are kept and the cut is said ("[12 earlier messages left out]"); a
// newest message too long on its own keeps its beginning.
func (t *Desk) contextBlock(header string, msgs []ThreadMessage, max int) string {
	if len(msgs) == 0 {
		return ""
	}
	entries := make([]string, len(msgs))
	for i, m := range msgs {
		entries[i] = t.Scrub(contextEntry(m))
	}
	const cutReserve = len("[1000000 earlier messages left out]\n\n")
	budget := max - len(header) - 2 - cutReserve
	used, from := 0, len(entries)
	for from > 0 && used+len(entries[from-1])+2 <= budget {
		from--
		used += len(entries[from]) + 2
	}
	kept := entries[from:]
	if len(kept) == 0 {
		// The newest message alone is over the bound: its beginning.
		kept = []string{cutBytes(entries[len(entries)-1], budget-len(" […cut]")) + " […cut]"}
		from = len(entries) - 1
	}
	var sb strings.Builder
	sb.WriteString(header + "\n\n")
	if from > 0 {
		fmt.Fprintf(&sb, "[%s left out]\n\n", plural(from, "earlier message"))
	}
	sb.WriteString(strings.Join(kept, "\n\n"))
	return sb.String()
}

// contextEntry words one message: who, when, the text and the names of its
// files.
func contextEntry(m ThreadMessage) string {
	who := strings.TrimSpace(m.Author)
	switch {
	case m.Own:
		who = ownAuthor
	case who == "":
		who = m.AuthorID
	case m.AuthorID != "" && who != m.AuthorID:
		who += " (" + m.AuthorID + ")"
	}
	if who == "" {
		who = "someone"
	}
	var sb strings.Builder
	sb.WriteString(who)
	if !m.Time.IsZero() {
		sb.WriteString(", " + m.Time.UTC().Format("2006-01-02 15:04 UTC"))
	}
	sb.WriteString(":\n")
	sb.WriteString(strings.TrimSpace(m.Text))
	if len(m.Files) > 0 {
		if strings.TrimSpace(m.Text) != "" {
			sb.WriteString("\n")
		}
		sb.WriteString("(attached: " + strings.Join(m.Files, ", ") + ")")
	}
	return sb.String()
}

// cutBytes returns s's first n bytes at most, not splitting a character.
func cutBytes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
