package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops"
)

// parseBot is a Bot that is never run: enough to decode payloads.
func parseBot(t testing.TB, apiURL string, log *slog.Logger) *Bot {
	t.Helper()
	if apiURL == "" {
		apiURL = "http://127.0.0.1:1/api/"
	}
	b, err := New(Config{AppToken: slacktest.AppToken, BotToken: slacktest.BotToken, APIURL: apiURL}, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	b.botUser, b.team = slacktest.BotUserID, slacktest.TeamID
	t.Cleanup(b.cancel)
	return b
}

func checkPlace(t *testing.T, what string, p chatops.Place, u chatops.User) {
	t.Helper()
	if p.Platform != Platform || p.Channel == "" || u.Platform != Platform || u.ID == "" {
		t.Fatalf("%s decoded to place %+v user %+v", what, p, u)
	}
}

// FuzzEventsPayload: an Events API body (HTTP) or events_api envelope
// payload (Socket Mode) is parsed and decoded into a chatops message without
// a panic, and what it decodes to names a Slack thread and user.
func FuzzEventsPayload(f *testing.F) {
	for _, s := range []string{
		`{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"app_mention","user":"U1","channel":"C1","ts":"1.1","text":"<@UBOT0001> hi"}}`,
		`{"type":"event_callback","event":{"type":"message","channel":"D1","channel_type":"im","user":"U1","ts":"1.2","thread_ts":"1.1","text":"x","files":[{"id":"F1","name":"a.txt"}]}}`,
		`{"type":"event_callback","event":{"type":"message","subtype":"file_share","message":{"files":[{}]}}}`,
		`{"type":"event_callback","event":null}`,
		`{"type":"url_verification","challenge":"c"}`,
		`{"type":"app_rate_limited"}`,
		`{"type":"event_callback","event":{"type":"app_mention"}}`,
	} {
		f.Add([]byte(s))
	}
	b := parseBot(f, "", nil)
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := parseEventBody(body)
		if err != nil {
			return
		}
		d, ok := b.decodeEvent(ev)
		if ok {
			checkPlace(t, "event", d.msg.Place, d.msg.User)
			if strings.Contains(d.msg.Text, "<@"+slacktest.BotUserID+">") {
				t.Fatalf("the bot's mention left in %q", d.msg.Text)
			}
		}
		_ = b.whoOf(ev)
	})
}

// FuzzInteractionPayload: an interactivity body (HTTP form) or interactive
// envelope payload (Socket Mode JSON) is parsed, validated and decoded into
// actions without a panic.
func FuzzInteractionPayload(f *testing.F) {
	ref := chatops.Ref{ChatID: "c", RunID: "r", InteractionID: "i"}.Encode()
	meta := `{\"ref\":\"` + ref + `\",\"place\":{\"platform\":\"slack\",\"workspace\":\"T1\",\"channel\":\"C1\",\"thread\":\"1.1\"}}`
	for _, s := range []string{
		`{"type":"block_actions","team":{"id":"T1"},"user":{"id":"U1"},"container":{"channel_id":"C1","thread_ts":"1.1"},"actions":[{"action_id":"tl_approve","value":"` + ref + `"}]}`,
		`{"type":"block_actions","user":{"id":"U1"},"channel":{"id":"C1"},"actions":[{"action_id":"tl_answer","value":"` + ref + `"},null]}`,
		`{"type":"view_submission","user":{"id":"U1"},"view":{"callback_id":"tl_answer","private_metadata":"` + meta + `","state":{"values":{"q:a":{"answer":{"type":"plain_text_input","value":"yes"}}}}}}`,
		`{"type":"view_submission","user":{"id":"U1"},"view":{"callback_id":"tl_answer","private_metadata":"` + meta + `"}}`,
		`{"type":"view_submission","user":{"id":"U1"},"view":{"callback_id":"tl_answer","state":{"values":{"q:a":null}}}}`,
		`{"type":"view_submission","view":null}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(url.Values{"payload": {s}}.Encode()), true)
	}
	b := parseBot(f, "", nil)
	f.Fuzz(func(t *testing.T, body []byte, form bool) {
		parse := parseInteractionPayload
		if form {
			parse = parseInteractionBody
		}
		cb, err := parse(body)
		if err != nil {
			return
		}
		_ = validateSubmission(cb)
		for _, a := range b.decodeInteraction(cb) {
			checkPlace(t, "interaction", a.who.place, a.who.user)
			if a.click == nil && a.answer == nil && a.modal == nil && a.note == "" {
				t.Fatalf("an empty action from %q", body)
			}
		}
		_ = b.whoOf(cb)
	})
}

// FuzzSlashPayload: a slash command body (HTTP form) or slash_commands
// envelope payload (Socket Mode JSON) is parsed and decoded without a panic.
func FuzzSlashPayload(f *testing.F) {
	f.Add([]byte("command=%2Fthreadline&text=status&team_id=T1&channel_id=C1&user_id=U1"), true)
	f.Add([]byte("text=%ZZ&&=;"), true)
	f.Add([]byte(`{"command":"/threadline","text":"agents","team_id":"T1","channel_id":"C1","user_id":"U1"}`), false)
	f.Fuzz(func(t *testing.T, body []byte, form bool) {
		parse := parseSlashPayload
		if form {
			parse = parseSlashBody
		}
		cmd, err := parse(body)
		if err != nil {
			return
		}
		sc := decodeSlash(cmd)
		if sc.Place.Platform != Platform || sc.Text != cmd.Text {
			t.Fatalf("slash command %+v decoded to %+v", cmd, sc)
		}
	})
}

// logBuffer is a slog handler target safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRescue: a panic in background work or an HTTP handler is logged with
// its stack, the person is told in the thread, and the next work runs.
func TestRescue(t *testing.T) {
	fake := slacktest.New(t)
	var logs logBuffer
	b := parseBot(t, fake.APIURL(), slog.New(slog.NewJSONHandler(&logs, nil)))
	p := chatops.Place{Platform: Platform, Workspace: slacktest.TeamID, Channel: "C1", Thread: "1.1"}
	u := chatops.User{Platform: Platform, ID: "U1"}

	t.Run("background work", func(t *testing.T) {
		ran := make(chan struct{})
		b.goSafely("test", who{place: p, user: u}, func(context.Context) {
			var st *chatops.Place
			_ = st.Channel // a nil dereference, as a state-less view_submission did
		})
		b.goSafely("test", who{place: p, user: u}, func(context.Context) { close(ran) })
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Fatal("the next work did not run after a panic")
		}
		waitFor(t, "the note in the thread", func() bool {
			for _, c := range fake.Calls("chat.postEphemeral") {
				if c.Form.Get("user") == "U1" && c.Form.Get("channel") == "C1" && c.Form.Get("thread_ts") == "1.1" && c.Form.Get("text") == failureNote {
					return true
				}
			}
			return false
		})
		out := logs.String()
		if !strings.Contains(out, `"msg":"slack handler panicked"`) || !strings.Contains(out, `"stack":"goroutine `) || !strings.Contains(out, "fuzz_test.go") {
			t.Fatalf("the panic was not logged with its stack:\n%s", out)
		}
	})

	t.Run("http handler", func(t *testing.T) {
		srv := httptest.NewServer(b.guardHTTP(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })))
		defer srv.Close()
		before := b.Panics()
		res, err := http.Post(srv.URL, "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusInternalServerError || b.Panics() != before+1 {
			t.Fatalf("status %d, panics %d", res.StatusCode, b.Panics()-before)
		}
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// parseSlashPayload parses the JSON payload of a Socket Mode
// "slash_commands" envelope as slack-go's socketmode client does before it
// hands the bot a slack.SlashCommand.
func parseSlashPayload(payload []byte) (slack.SlashCommand, error) {
	var cmd slack.SlashCommand
	err := json.Unmarshal(payload, &cmd)
	return cmd, err
}
