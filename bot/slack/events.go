// events.go: Events API deliveries (Socket Mode or HTTP) to chatops messages.

package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops"
)

// maxBody bounds a request body from Slack (events, interactivity and slash
// commands are a few KiB; Slack itself caps payloads far below this).
const maxBody = 1 << 20

// queueWait is how long an HTTP delivery waits for room in its thread's desk
// queue before it is refused with 503 (not acked: Slack delivers it again
// later).
const queueWait = 2 * time.Second

// verify checks a request's Slack signature (HMAC over "v0:ts:body",
// timestamp within 5 minutes) and returns its body. The signature and
// timestamp headers are checked before a byte of the body is read; the body
// is then read through the verifier with a limit of maxBody. It answers the
// request itself (401, 413, 400, 503) and returns ok false when it refused.
func (b *Bot) verify(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	select {
	case <-b.ready:
	default:
		// Not connected yet: Slack retries later.
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return nil, false
	}
	sv, err := slack.NewSecretsVerifier(r.Header, b.cfg.SigningSecret)
	if err != nil {
		b.log.WarnContext(r.Context(), "refused an unsigned or stale slack request", "path", r.URL.Path, "err", err)
		w.Header().Set("Connection", "close") // the unread body is not drained
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return nil, false
	}
	if r.ContentLength > maxBody {
		w.Header().Set("Connection", "close")
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return nil, false
	}
	body, err := io.ReadAll(io.TeeReader(http.MaxBytesReader(w, r.Body, maxBody), &sv))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "bad body", http.StatusBadRequest)
		}
		return nil, false
	}
	if err := sv.Ensure(); err != nil {
		b.log.WarnContext(r.Context(), "refused a forged slack request", "path", r.URL.Path, "err", err)
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

// parseEventBody parses an Events API request body, as Socket Mode's client
// does an events_api envelope's payload.
func parseEventBody(body []byte) (slackevents.EventsAPIEvent, error) {
	return slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
}

func (b *Bot) serveEvents(w http.ResponseWriter, r *http.Request) {
	body, ok := b.verify(w, r)
	if !ok {
		return
	}
	ev, err := parseEventBody(body)
	if err != nil {
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	if ev.Type == slackevents.URLVerification {
		if v, ok := ev.Data.(*slackevents.EventsAPIURLVerificationEvent); ok && v != nil {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, v.Challenge)
			return
		}
	}
	// Queue first, ack after: a delivery that finds no room is refused and
	// Slack retries it.
	ctx, cancel := context.WithTimeout(r.Context(), queueWait)
	defer cancel()
	if !b.onEventsAPI(ctx, ev) {
		refuseBusy(w)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// refuseBusy answers a delivery that could not be queued: Slack retries it.
func refuseBusy(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "5")
	http.Error(w, "busy, retry later", http.StatusServiceUnavailable)
}

// delivery is the message an Events API callback brings, decoded from the
// payload alone.
type delivery struct {
	eventID string
	msg     chatops.Message
	files   []slack.File
	// reaction marks a command given by a reaction (⏹: stop).
	reaction bool
}

// stopReactions are the reactions that stop a thread's run: ⏹ and 🛑.
var stopReactions = map[string]bool{"black_square_for_stop": true, "octagonal_sign": true}

// decodeEvent turns an Events API delivery into a chatops message; ok is
// false for deliveries the bot ignores.
func (b *Bot) decodeEvent(ev slackevents.EventsAPIEvent) (delivery, bool) {
	if ev.Type != slackevents.CallbackEvent {
		return delivery{}, false
	}
	outer, _ := ev.Data.(*slackevents.EventsAPICallbackEvent)
	d, team := delivery{}, ev.TeamID
	if outer != nil {
		d.eventID = outer.EventID
		if outer.TeamID != "" {
			team = outer.TeamID
		}
	}
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		if e == nil || e.BotID != "" {
			return delivery{}, false
		}
		d.msg = chatops.Message{Place: place(team, e.Channel, e.ThreadTimeStamp, e.TimeStamp), ID: e.TimeStamp, Sent: tsTime(e.TimeStamp),
			User: chatops.User{Platform: Platform, ID: e.User}, Text: e.Text, Mentioned: true}
		d.files = e.Files
	case *slackevents.ReactionAddedEvent:
		// ⏹ on the bot's message (or a thread's first message) is `stop`
		// in its thread, checked like the command.
		if e == nil || !stopReactions[e.Reaction] || e.Item.Type != "message" {
			return delivery{}, false
		}
		p, ok := b.surface.threadOf(team, e.Item.Channel, e.Item.Timestamp)
		if !ok {
			return delivery{}, false
		}
		d.msg = chatops.Message{Place: p, ID: e.EventTimestamp, Sent: tsTime(e.EventTimestamp),
			User: chatops.User{Platform: Platform, ID: e.User}, Text: "stop", Mentioned: true}
		d.reaction = true
	case *slackevents.AgentSessionStoppedEvent:
		// Slack's own Stop on the thread's agent session: `stop` there,
		// checked like the command, as the Stop button and ⏹ are.
		if e == nil || e.ThreadTimestamp == "" {
			return delivery{}, false
		}
		d.msg = chatops.Message{Place: place(team, e.Channel, e.ThreadTimestamp, ""), ID: e.EventTimestamp, Sent: tsTime(e.EventTimestamp),
			User: chatops.User{Platform: Platform, ID: e.User}, Text: "stop", Mentioned: true}
		d.reaction = true
	case *slackevents.MessageEvent:
		if e == nil {
			return delivery{}, false
		}
		var ok bool
		if d.msg, d.files, ok = b.message(team, e); !ok {
			return delivery{}, false
		}
	default:
		return delivery{}, false
	}
	botUser, _ := b.identity()
	if d.msg.User.ID == "" || d.msg.User.ID == botUser || d.msg.Place.Channel == "" {
		return delivery{}, false
	}
	d.msg.Text = stripMention(d.msg.Text, botUser)
	return d, true
}

// onEventsAPI hands an Events API delivery to the desk. It returns false
// when ctx ended before there was room in the thread's queue.
func (b *Bot) onEventsAPI(ctx context.Context, ev slackevents.EventsAPIEvent) bool {
	if ev.Type == slackevents.AppRateLimited {
		b.log.WarnContext(ctx, "slack is rate limiting the events sent to this app")
		return true
	}
	if ev.Type == slackevents.CallbackEvent && (b.onAssistantEvent(ev) || b.onSessionEvent(ctx, ev)) {
		return true
	}
	d, ok := b.decodeEvent(ev)
	if !ok {
		return true
	}
	m := d.msg
	// Fetch runs in the thread's actor, in order, for a message the desk
	// acts on (after the repeat check by event id and the access check).
	m.Fetch = func(ctx context.Context) []chatops.File {
		if (m.Mentioned || m.Direct) && !d.reaction {
			b.surface.asked(m.Place, m.User.ID)
			scrubbed := b.threads.Scrub(m.Text)
			b.home.prompted(ctx, m.Place, scrubbed)
			b.surface.sessions.prompted(m.Place, m.User.ID, scrubbed)
		}
		files, skipped := b.download(ctx, d.files)
		if len(skipped) > 0 {
			// Said, not only logged: the person expects the agent to see them.
			text := "Not read, so the agent does not get them: " + strings.Join(skipped, "; ") + "."
			if _, err := b.surface.Post(ctx, m.Place, chatops.View{Body: text}); err != nil {
				b.log.WarnContext(ctx, "tell the thread of files not read", logkey.Err, err)
			}
		}
		return files
	}
	return b.put(ctx, chatops.Inbound{Message: &m, EventID: d.eventID})
}

// onSessionEvent takes what Slack says of an agent session: the streams its
// Stop halted (agent_session_stopped, which then goes on as `stop` in the
// thread) and a person's rename (agent_session_title_changed). It returns
// true when the event was taken whole.
func (b *Bot) onSessionEvent(ctx context.Context, ev slackevents.EventsAPIEvent) bool {
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AgentSessionStoppedEvent:
		if e != nil {
			b.surface.sessions.halt(e.Channel, e.StreamingMessageTimestamps)
		}
	case *slackevents.AgentSessionTitleChangedEvent:
		if e == nil || e.Channel == "" || e.ThreadTimestamp == "" {
			return true
		}
		team := cmpOr(e.TeamID, ev.TeamID)
		p := chatops.Place{Platform: Platform, Workspace: team, Channel: e.Channel, Thread: e.ThreadTimestamp}
		// chatops has no chat title to change: the session's title is kept
		// (not set again from a prompt) and logged.
		b.surface.sessions.renamed(p, e.Title)
		b.log.InfoContext(ctx, "slack agent session renamed", logkey.Channel, p.Channel, logkey.ThreadID, p.Thread,
			logkey.User, e.User, logkey.Changed, b.threads.Scrub(e.Title))
		return true
	}
	return false
}

// put hands an event to the desk; false when ctx ended (or the desk closed)
// before it was queued.
func (b *Bot) put(ctx context.Context, in chatops.Inbound) bool {
	if err := b.threads.Put(ctx, in); err != nil {
		b.log.WarnContext(ctx, "could not queue a slack event", "err", err)
		return false
	}
	return true
}

// message turns a message event into a chatops message; ok is false for
// messages the bot ignores (its own, edits, deletions, mentions that arrive
// as app_mention too).
func (b *Bot) message(team string, e *slackevents.MessageEvent) (chatops.Message, []slack.File, bool) {
	switch e.SubType {
	case "", "file_share", "thread_broadcast":
	default:
		return chatops.Message{}, nil, false
	}
	if e.BotID != "" {
		return chatops.Message{}, nil, false
	}
	botUser, _ := b.identity()
	direct := e.ChannelType == "im"
	mentioned := botUser != "" && strings.Contains(e.Text, "<@"+botUser+">")
	if mentioned && !direct {
		return chatops.Message{}, nil, false // the app_mention event carries it
	}
	var files []slack.File
	if e.Message != nil {
		files = e.Message.Files
	}
	return chatops.Message{
		Place: place(team, e.Channel, e.ThreadTimeStamp, e.TimeStamp), ID: e.TimeStamp, Sent: tsTime(e.TimeStamp),
		User: chatops.User{Platform: Platform, ID: e.User}, Text: e.Text,
		Mentioned: mentioned, Direct: direct,
	}, files, true
}

// place is the thread of a message: its thread_ts, or its own ts when it is
// top-level (the bot answers in a thread under it).
func place(team, channel, threadTS, ts string) chatops.Place {
	if threadTS == "" {
		threadTS = ts
	}
	return chatops.Place{Platform: Platform, Workspace: team, Channel: channel, Thread: threadTS}
}

var mentionRE = regexp.MustCompile(`<@[A-Z0-9]+(\|[^>]*)?>`)

// stripMention removes the bot's mention (and leading mentions) from text.
func stripMention(text, botUser string) string {
	if botUser != "" {
		text = strings.ReplaceAll(text, "<@"+botUser+">", "")
	}
	t := strings.TrimSpace(text)
	for {
		loc := mentionRE.FindStringIndex(t)
		if loc == nil || loc[0] != 0 {
			break
		}
		t = strings.TrimSpace(t[loc[1]:])
	}
	return t
}

const (
	maxFileBytes  = 20 << 20
	downloadLimit = 30 * time.Second
)

// download fetches a message's files with the bot token.
func (b *Bot) download(ctx context.Context, files []slack.File) (out []chatops.File, skipped []string) {
	for _, f := range files {
		name := f.Name
		if name == "" {
			name = f.ID
		}
		if f.URLPrivateDownload == "" && f.URLPrivate == "" {
			b.log.WarnContext(ctx, "skipped a file without a download URL", logkey.File, f.ID, logkey.Size, f.Size)
			skipped = append(skipped, name+" (no download link)")
			continue
		}
		// Read within the limit while it downloads, whatever size it declares.
		dctx, cancel := context.WithTimeout(ctx, downloadLimit)
		data, err := b.surface.fetch(dctx, f, maxFileBytes)
		cancel()
		if err != nil {
			b.log.WarnContext(ctx, "download a file", logkey.File, f.ID, logkey.Size, f.Size, logkey.Err, err)
			why := "it could not be downloaded"
			if errors.Is(err, ErrFileTooLarge) {
				why = fmt.Sprintf("over the %d MB limit", maxFileBytes>>20)
			}
			skipped = append(skipped, name+" ("+why+")")
			continue
		}
		out = append(out, chatops.File{Name: name, MediaType: f.Mimetype, Data: data})
	}
	return out, skipped
}

// tsTime returns the time a Slack message ts ("1700000000.123456", seconds
// and microseconds) stands for, or zero for a ts that is not one.
func tsTime(ts string) time.Time {
	sec, frac, ok := strings.Cut(ts, ".")
	if !ok || len(frac) != 6 {
		return time.Time{}
	}
	s, err1 := strconv.ParseInt(sec, 10, 64)
	us, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || s <= 0 || us < 0 {
		return time.Time{}
	}
	return time.Unix(s, us*1000).UTC()
}
