// format.go: chatops views as Matrix message content: a plain body and an HTML
// formatted_body rendered from the view's Markdown with goldmark (raw HTML in
// the agent's text is dropped, never passed through), kept under the event size
// limit.

package matrix

import (
	"bytes"
	"encoding/json"
	"html"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/chatops"
)

// markdown is the renderer, made on first use: a Slack-only bot never
// holds its half megabyte of parser tables.
var markdown = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(extension.Strikethrough, extension.Table, extension.Linkify, extension.TaskList),
		goldmark.WithRendererOptions(gmhtml.WithHardWraps()),
	)
})

// renderMarkdown returns md as HTML. Raw HTML in md is omitted by goldmark's
// safe default.
func renderMarkdown(md string) string {
	var buf bytes.Buffer
	if err := markdown().Convert([]byte(md), &buf); err != nil {
		return "<pre>" + html.EscapeString(md) + "</pre>"
	}
	return strings.TrimSpace(buf.String())
}

// Reaction keys users answer cards with.
const (
	KeyApprove        = "✅"
	KeyApproveSession = "🔁"
	KeyDecline        = "❌"
	KeyStop           = "⏹️"
)

// optionKeys are the reactions for a question's first options.
var optionKeys = []string{"1️⃣", "2️⃣", "3️⃣", "4️⃣", "5️⃣", "6️⃣", "7️⃣", "8️⃣", "9️⃣", "🔟"}

// reactionButton maps a reaction key to the button it presses; variation
// selectors are ignored so "⏹" and "⏹️" are the same key.
func reactionButton(key string) (string, bool) {
	switch normKey(key) {
	case normKey(KeyApprove): // only ✅: a 👍 or ✔️ is not a decision
		return chatops.ButtonApprove, true
	case normKey(KeyApproveSession):
		return chatops.ButtonApproveSession, true
	case normKey(KeyDecline), normKey("👎"):
		return chatops.ButtonDecline, true
	case normKey(KeyStop), normKey("🛑"):
		return chatops.ButtonStop, true
	}
	for i, k := range optionKeys {
		if normKey(k) == normKey(key) {
			return chatops.ButtonOptionPrefix + itoa(i), true
		}
	}
	return "", false
}

func normKey(k string) string { return strings.ReplaceAll(k, "\ufe0f", "") }

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// cardKeys returns the reactions that answer a view's buttons, in order.
func cardKeys(v chatops.View) []string {
	var out []string
	for _, b := range v.Buttons {
		switch {
		case b.ID == chatops.ButtonApprove:
			out = append(out, KeyApprove)
		case b.ID == chatops.ButtonApproveSession:
			out = append(out, KeyApproveSession)
		case b.ID == chatops.ButtonDecline:
			out = append(out, KeyDecline)
		case b.ID == chatops.ButtonCancel:
			out = append(out, KeyStop)
		case strings.HasPrefix(b.ID, chatops.ButtonOptionPrefix):
			if n := optionIndex(b.ID); n >= 0 && n < len(optionKeys) {
				out = append(out, optionKeys[n])
			}
		}
	}
	return out
}

func optionIndex(buttonID string) int {
	var n int
	if err := json.Unmarshal([]byte(strings.TrimPrefix(buttonID, chatops.ButtonOptionPrefix)), &n); err != nil {
		return -1
	}
	return n
}

// isCard reports whether the view asks the user for an answer (a final
// answer's ship actions do not: they are commands).
func isCard(v chatops.View) bool {
	for _, b := range v.Buttons {
		if b.ID != chatops.ButtonStop && !strings.HasPrefix(b.ID, chatops.ButtonShipPrefix) {
			return true
		}
	}
	return false
}

// shipHint tells how to run a final answer's ship actions in Matrix, which
// has no buttons: as commands in the thread.
func shipHint(v chatops.View) string {
	var cmds []string
	for _, b := range v.Buttons {
		if strings.HasPrefix(b.ID, chatops.ButtonShipPrefix) {
			cmds = append(cmds, "`"+strings.TrimPrefix(b.ID, chatops.ButtonShipPrefix)+"`")
		}
	}
	if len(cmds) == 0 {
		return ""
	}
	return "Reply " + strings.Join(cmds, ", ") + " in this thread (the diff, push, pull request)."
}

// hasStop reports whether the view is a running answer (it offers Stop).
func hasStop(v chatops.View) bool {
	for _, b := range v.Buttons {
		if b.ID == chatops.ButtonStop {
			return true
		}
	}
	return false
}

// hint tells how to answer the view's buttons in Matrix, which shows none:
// by a reaction or a reply (a queued prompt's Run now gets none: its text
// names the command). onlyOptions is set when the view's question takes only
// its options (Bot.onlyOptions).
func hint(v chatops.View, onlyOptions bool) string {
	if len(v.Buttons) == 0 {
		return ""
	}
	if s := shipHint(v); s != "" && !isCard(v) {
		return s
	}
	var parts []string
	options := 0
	for _, b := range v.Buttons {
		switch {
		case b.ID == chatops.ButtonStop:
			parts = append(parts, KeyStop+" stop")
		case b.ID == chatops.ButtonApprove:
			parts = append(parts, KeyApprove+" approve")
		case b.ID == chatops.ButtonApproveSession:
			parts = append(parts, KeyApproveSession+" approve for the session")
		case b.ID == chatops.ButtonDecline:
			parts = append(parts, KeyDecline+" decline")
		case b.ID == chatops.ButtonCancel:
			parts = append(parts, KeyStop+" stop the turn")
		case strings.HasPrefix(b.ID, chatops.ButtonOptionPrefix):
			options++
		}
	}
	if options > 0 {
		parts = append([]string{optionKeys[0] + "… an option"}, parts...)
	}
	s := ""
	if len(parts) > 0 {
		s = "React " + strings.Join(parts, " · ")
		if options > 0 {
			s = "Vote in the poll below, or react " + strings.Join(parts, " · ")
		}
	}
	if !isCard(v) {
		return s
	}
	var reply string
	switch free := hasButton(v, chatops.ButtonAnswer) && !onlyOptions; {
	case options > 0 && free:
		reply = "reply in this thread with an option's number or with your own answer (free text is accepted)."
	case options > 0:
		reply = "reply in this thread with an option's number."
	case free:
		reply = "reply in this thread with your answer."
	case len(parts) > 0:
		reply = "reply in this thread: approve, approve session, deny or stop."
	default:
		return "" // a queued prompt's Run now: its text names the command (`now N`)
	}
	if s == "" {
		return "R" + reply[1:]
	}
	return s + ", or " + reply
}

func hasButton(v chatops.View, id string) bool {
	for _, b := range v.Buttons {
		if b.ID == id {
			return true
		}
	}
	return false
}

// buttonWords are chatops' platform-neutral phrases that send people to a
// card's buttons, and what Element's users do instead: Element shows no
// buttons, so a card on Matrix is answered by a reaction or a reply.
var buttonWords = strings.NewReplacer(
	"press Approve, Approve for session or Decline on the card, or reply to it with",
	"react "+KeyApprove+", "+KeyApproveSession+" or "+KeyDecline+" on the card, or reply to it with",
	"use the buttons on its card", "react on its card or reply to it",
	"press the card's button, or reply", "react on the card, or reply",
	"press the button on the one you mean", "react on the one you mean, or reply to it",
	"press a button, or reply", "react on this message, or reply",
	"That button belongs to another chat.", "That card belongs to another chat.",
)

// elementWords is s with chatops' words about buttons put as Element's users
// answer a card: with a reaction or a reply.
func elementWords(s string) string { return buttonWords.Replace(s) }

// content is the message content of a view: the plain body and the HTML body.
func content(v chatops.View, mentions []id.UserID) *event.MessageEventContent {
	return cardContent(v, mentions, false, false)
}

// secretHint replaces the hint of a card whose question asks a secret
// (agent.Question.Secret): a reply in the room is seen by every member and
// stays in its history, so the card does not invite one.
const secretHint = "This question asks for a secret: do not reply with it in this room, where every member would see it " +
	"(I would remove such a reply and not pass it on). React " + KeyDecline + " or reply \"decline\" to decline it, " +
	"and give the agent the secret another way, e.g. run the task from `threadline chat` on the machine, which reads it without echo."

// cardContent is content with the hint of a question that takes only its
// options when onlyOptions is set, and with secretHint when secret is set.
func cardContent(v chatops.View, mentions []id.UserID, onlyOptions, secret bool) *event.MessageEventContent {
	if len(v.Tasks) == 0 { // the steps' places are offsets into the body
		v.Body = elementWords(v.Body)
	}
	v.Footer = elementWords(v.Footer)
	var plain, htmlParts []string
	if v.Status != "" {
		plain = append(plain, v.Status)
		htmlParts = append(htmlParts, "<p><em>"+html.EscapeString(v.Status)+"</em></p>")
	}
	bp, bh := bodyParts(v)
	plain, htmlParts = append(plain, bp...), append(htmlParts, bh...)
	if pp, ph := planParts(v.Plan); pp != "" {
		plain, htmlParts = append(plain, pp), append(htmlParts, ph)
	}
	if notes := stepNotes(v); len(notes) > 0 {
		plain = append(plain, strings.Join(notes, "\n"))
		var b strings.Builder
		b.WriteString("<ul>")
		for _, s := range notes {
			b.WriteString("<li>" + html.EscapeString(s) + "</li>")
		}
		b.WriteString("</ul>")
		htmlParts = append(htmlParts, b.String())
	}
	if v.Footer != "" {
		plain = append(plain, v.Footer)
		htmlParts = append(htmlParts, "<p><em>"+html.EscapeString(v.Footer)+"</em></p>")
	}
	h := hint(v, onlyOptions)
	if secret && isCard(v) {
		h = secretHint
	}
	if h != "" {
		plain = append(plain, h)
		htmlParts = append(htmlParts, "<p><sub>"+html.EscapeString(h)+"</sub></p>")
	}
	c := &event.MessageEventContent{
		MsgType:       event.MsgNotice,
		Body:          strings.Join(plain, "\n\n"),
		Format:        event.FormatHTML,
		FormattedBody: strings.Join(htmlParts, "\n"),
		Mentions:      &event.Mentions{UserIDs: mentions},
	}
	if c.Body == "" {
		c.Body = "…"
		c.Format, c.FormattedBody = "", ""
	}
	return c
}

// outgoing is one message the bot sends for a view: a new message in a thread
// or an edit of one of its messages.
type outgoing struct {
	v        chatops.View
	mentions []id.UserID
	// onlyOptions: v's question takes only its options (Bot.onlyOptions).
	onlyOptions bool
	// secret: v's question asks a secret (Bot.secretQuestion).
	secret bool
	// thread is the thread a new message goes to; edit the message an edit
	// replaces (always the original event).
	thread, edit id.EventID
	// threadRel is the thread's relation (m.thread when empty).
	threadRel event.RelationType
}

// build turns the content into what is sent: the relation and the buttons
// (in m.new_content too, for an edit).
func (o outgoing) build(c *event.MessageEventContent) (any, error) {
	if o.thread != "" {
		setThread(c.GetRelatesTo(), o.thread, o.thread, o.threadRel)
	}
	if o.edit != "" {
		c.SetEdit(o.edit)
		c.Body = editFallback(c.NewContent.Body)
	}
	if len(o.v.Buttons) > 0 {
		return withButtons(c, o.v.Buttons)
	}
	return c, nil
}

// How fitWire shrank a message.
const (
	shrunkNone = ""
	shrunkHTML = "without its HTML body"
	shrunkCut  = "cut"
)

// cutSuffix ends a message cut to fit one event.
const cutSuffix = "\n\n… (cut: the message is too long for one Matrix event)"

// fitWire returns what to send for o within limit bytes (wireSize): the whole
// view; else without the HTML body (the plain body still has all of the
// text); else with the plain body cut. It is deterministic, so a replay sends
// the same bytes; shrunk says what it did.
func fitWire(o outgoing, limit int, encrypted bool) (wire any, shrunk string, err error) {
	if wire, err = o.build(cardContent(o.v, o.mentions, o.onlyOptions, o.secret)); err != nil || wireSize(wire, encrypted) <= limit {
		return wire, shrunkNone, err
	}
	plain := func(body string) (any, error) {
		c := cardContent(o.v, o.mentions, o.onlyOptions, o.secret)
		c.Format, c.FormattedBody = "", ""
		if body != "" {
			c.Body = body
		}
		return o.build(c)
	}
	if wire, err = plain(""); err != nil || wireSize(wire, encrypted) <= limit {
		return wire, shrunkHTML, err
	}
	orig := cardContent(o.v, o.mentions, o.onlyOptions, o.secret).Body
	n := len(orig)
	for n > 0 {
		// JSON escaping (and Megolm's base64) make the event grow faster
		// than the text: cut by the measured overshoot and measure again.
		over := wireSize(wire, encrypted) - limit
		if over <= 0 {
			break
		}
		n = max(n-over-len(cutSuffix), 0)
		for n > 0 && !utf8RuneStart(orig[n]) {
			n--
		}
		if wire, err = plain(orig[:n] + cutSuffix); err != nil {
			return nil, shrunkCut, err
		}
	}
	return wire, shrunkCut, nil
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Bounds of an edit's fallback body, as mautrix's SetEdit has them: a body
// over editFallbackMax bytes is cut to editFallbackCut.
const (
	editFallbackMax = 100
	editFallbackCut = 50
)

// editFallback is the body of an m.replace for clients without edits: "* "
// and the new body, cut within editFallbackCut bytes on a character boundary
// when long. (mautrix's SetEdit cuts at byte 50, which can fall inside a
// UTF-8 character and leave invalid text.)
func editFallback(body string) string {
	s := "* " + body
	if len(s) <= editFallbackMax {
		return s
	}
	n := editFallbackCut
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "[edit fallback cut…]"
}
