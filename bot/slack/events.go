// events.go: Events API deliveries (Socket Mode or HTTP) to chatops messages.

package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/threadline-bot/threadline/chatops"
)

const maxBody = 1 << 20

// verify reads the request body and checks its Slack signature (HMAC over
// "v0:ts:body", timestamp within 5 minutes). It answers 401 itself and
// returns ok false when the request is forged or stale.
func (b *Bot) verify(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	select {
	case <-b.ready:
	default:
		// Not connected yet: Slack retries later.
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return nil, false
	}
	sv, err := slack.NewSecretsVerifier(r.Header, b.cfg.SigningSecret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		b.log.WarnContext(r.Context(), "refused an unsigned or stale slack request", "path", r.URL.Path, "err", err)
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

func (b *Bot) serveEvents(w http.ResponseWriter, r *http.Request) {
	body, ok := b.verify(w, r)
	if !ok {
		return
	}
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	if ev.Type == slackevents.URLVerification {
		if v, ok := ev.Data.(*slackevents.EventsAPIURLVerificationEvent); ok {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, v.Challenge)
			return
		}
	}
	// Ack first; the work happens after.
	w.WriteHeader(http.StatusOK)
	b.onEventsAPI(ev)
}

// onEventsAPI dispatches an Events API delivery after its ack.
func (b *Bot) onEventsAPI(ev slackevents.EventsAPIEvent) {
	if ev.Type == slackevents.AppRateLimited {
		b.log.Warn("slack is rate limiting the events sent to this app")
		return
	}
	if ev.Type != slackevents.CallbackEvent {
		return
	}
	outer, _ := ev.Data.(*slackevents.EventsAPICallbackEvent)
	eventID, team := "", ev.TeamID
	if outer != nil {
		eventID = outer.EventID
		if outer.TeamID != "" {
			team = outer.TeamID
		}
	}
	var m chatops.Message
	var files []slack.File
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		if e.BotID != "" {
			return
		}
		m = chatops.Message{Place: place(team, e.Channel, e.ThreadTimeStamp, e.TimeStamp), ID: e.TimeStamp,
			User: chatops.User{Platform: Platform, ID: e.User}, Text: e.Text, Mentioned: true}
		files = e.Files
	case *slackevents.MessageEvent:
		var ok bool
		if m, files, ok = b.message(team, e); !ok {
			return
		}
	default:
		return
	}
	botUser, _ := b.identity()
	if m.User.ID == "" || m.User.ID == botUser {
		return
	}
	m.Text = stripMention(m.Text, botUser)
	b.enqueue(m.Place.String(), func(ctx context.Context) {
		if eventID != "" {
			first, err := b.threads.FirstSeen(ctx, Platform, eventID)
			if err != nil {
				b.log.WarnContext(ctx, "dedup slack event", "event_id", eventID, "err", err)
			} else if !first {
				b.log.InfoContext(ctx, "dropped a repeated slack event", "event_id", eventID)
				return
			}
		}
		m.Files = b.download(ctx, files)
		if m.Mentioned || m.Direct {
			b.surface.asked(m.Place, m.User.ID)
		}
		b.report(ctx, "message", b.threads.HandleMessage(ctx, m))
	})
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
		Place: place(team, e.Channel, e.ThreadTimeStamp, e.TimeStamp), ID: e.TimeStamp,
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
func (b *Bot) download(ctx context.Context, files []slack.File) []chatops.File {
	var out []chatops.File
	for _, f := range files {
		u := f.URLPrivateDownload
		if u == "" {
			u = f.URLPrivate
		}
		if u == "" || f.Size > maxFileBytes {
			b.log.WarnContext(ctx, "skipped a file", "file", f.ID, "size", f.Size)
			continue
		}
		var buf bytes.Buffer
		dctx, cancel := context.WithTimeout(ctx, downloadLimit)
		err := b.api.GetFileContext(dctx, u, &buf)
		cancel()
		if err != nil {
			b.log.WarnContext(ctx, "download a file", "file", f.ID, "err", err)
			continue
		}
		name := f.Name
		if name == "" {
			name = f.ID
		}
		out = append(out, chatops.File{Name: name, MediaType: f.Mimetype, Data: buf.Bytes()})
	}
	return out
}
