package matrix

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/chatops"
)

// recordingDesk is a Desk that records what the bot hands it.
type recordingDesk struct {
	policy *chatops.Policy

	mu       sync.Mutex
	messages []chatops.Message
	clicks   []chatops.Click
	answers  []chatops.Answer
}

func (d *recordingDesk) Attach(string, chatops.Surface)             {}
func (d *recordingDesk) Resume(context.Context, string) error       { return nil }
func (d *recordingDesk) Policy() *chatops.Policy                    { return d.policy }
func (d *recordingDesk) MayAnswer(chatops.User, chatops.Place) bool { return true }
func (d *recordingDesk) Put(_ context.Context, in chatops.Inbound) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case in.Message != nil:
		m := *in.Message
		if m.Fetch != nil {
			m.Files = append(m.Files, m.Fetch(context.Background())...)
		}
		d.messages = append(d.messages, m)
	case in.Click != nil:
		d.clicks = append(d.clicks, *in.Click)
	case in.Answer != nil:
		d.answers = append(d.answers, *in.Answer)
	}
	return nil
}

// offlineSent records the bodies of the messages sent to offline homeservers.
var offlineSent struct {
	sync.Mutex
	bodies []string
}

// noAccounts keeps nothing; the offline bot never logs in.
type noAccounts struct{}

func (noAccounts) MatrixLogin(context.Context, string) ([]byte, bool, error)  { return nil, false, nil }
func (noAccounts) SaveMatrixLogin(context.Context, string, []byte) error      { return nil }
func (noAccounts) MatrixSync(context.Context, string) (string, string, error) { return "", "", nil }
func (noAccounts) SaveMatrixNextBatch(context.Context, string, string) error  { return nil }
func (noAccounts) SaveMatrixFilterID(context.Context, string, string) error   { return nil }

// offlineBot is a Bot whose homeserver answers every call with M_NOT_FOUND
// at once, holding an open card in thread $root of !room.
func offlineBot(t testing.TB) (*Bot, *recordingDesk) {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/send/m.room.message/") {
			var c event.MessageEventContent
			_ = json.NewDecoder(r.Body).Decode(&c)
			offlineSent.Lock()
			offlineSent.bodies = append(offlineSent.bodies, c.Body)
			offlineSent.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"errcode":"M_NOT_FOUND","error":"offline"}`))
	}))
	t.Cleanup(hs.Close)
	policy := &chatops.Policy{}
	policy.Set(chatops.Scope{Platform: Platform}, chatops.Rules{Allow: []string{"*"}})
	desk := &recordingDesk{policy: policy}
	b, err := New(Config{Homeserver: hs.URL, UserID: "@bot:fuzz.test", AccessToken: "t", MaxFileBytes: 1 << 10}, desk, noAccounts{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := mautrix.NewClient(hs.URL, b.me, "t")
	if err != nil {
		t.Fatal(err)
	}
	cli.StateStore = mautrix.NewMemoryStateStore()
	cli.DefaultHTTPRetries = 0
	b.cli = cli
	b.displayName = "bot"
	ref := chatops.Ref{ChatID: "c", RunID: "r", InteractionID: "i"}.Encode()
	b.cards.put("$card", b.place("!room:fuzz.test", "$root"), []chatops.Button{
		{ID: chatops.ButtonApprove, Value: ref}, {ID: chatops.ButtonDecline, Value: ref}, {ID: chatops.ButtonAnswer, Value: ref},
		{ID: chatops.ButtonOptionPrefix + "0", Value: ref}})
	b.polls.put("$card", "$poll")
	return b, desk
}

// FuzzInbound: any message, reaction or poll response content (a prompt, a
// reply to a card, a file, a reaction on a card, a vote in its poll) is
// handled without a panic, and what reaches the desk names the event's room
// and sender.
func FuzzInbound(f *testing.F) {
	for _, s := range []struct {
		typ     string
		content string
	}{
		{"m.room.message", `{"msgtype":"m.text","body":"@bot:fuzz.test hello","m.mentions":{"user_ids":["@bot:fuzz.test"]}}`},
		{"m.room.message", `{"msgtype":"m.text","body":"approve","m.relates_to":{"rel_type":"m.thread","event_id":"$root","m.in_reply_to":{"event_id":"$card"}}}`},
		{"m.room.message", `{"msgtype":"m.text","body":"> <@bot:fuzz.test> card\n\nred","m.relates_to":{"rel_type":"m.thread","event_id":"$root"}}`},
		{"m.room.message", `{"msgtype":"m.file","body":"a.txt","filename":"a.txt","url":"mxc://fuzz.test/abc","info":{"size":99999999,"mimetype":"text/plain"},"m.mentions":{"user_ids":["@bot:fuzz.test"]}}`},
		{"m.room.message", `{"msgtype":"m.image","body":"x","file":{"url":"mxc://fuzz.test/x","key":{"k":"bad"},"iv":"","hashes":{}},"m.mentions":{"user_ids":["@bot:fuzz.test"]}}`},
		{"m.room.message", `{"msgtype":"m.text","body":"!threadline stop","m.new_content":{"body":"x"},"m.relates_to":{"rel_type":"m.replace","event_id":"$x"}}`},
		{"m.reaction", `{"m.relates_to":{"rel_type":"m.annotation","event_id":"$card","key":"✅"}}`},
		{"m.reaction", `{"m.relates_to":{"rel_type":"m.annotation","event_id":"$other","key":"⏹️"}}`},
		{"m.room.message", `{"msgtype":"m.text","body":null,"m.relates_to":null}`},
		{"org.matrix.msc3381.poll.response", `{"m.relates_to":{"rel_type":"m.reference","event_id":"$poll"},"org.matrix.msc3381.poll.response":{"answers":["tl_option_0"]}}`},
		{"m.poll.response", `{"m.relates_to":{"rel_type":"m.reference","event_id":"$poll"},"m.selections":["tl_approve",null]}`},
		{"m.poll.response", `{"m.relates_to":{"rel_type":"m.reference","event_id":"$other"},"m.selections":"x"}`},
	} {
		f.Add(s.typ, []byte(s.content))
	}
	b, desk := offlineBot(f)
	const room = id.RoomID("!room:fuzz.test")
	const sender = id.UserID("@alice:fuzz.test")
	f.Fuzz(func(t *testing.T, typ string, content []byte) {
		evType := event.EventMessage
		switch typ {
		case event.EventReaction.Type:
			evType = event.EventReaction
		case event.EventUnstablePollResponse.Type:
			evType = event.EventUnstablePollResponse
		case EventPollResponseStable.Type:
			evType = EventPollResponseStable
		}
		evt := &event.Event{Type: evType, Sender: sender, RoomID: room, ID: "$evt"}
		if err := json.Unmarshal(content, &evt.Content); err != nil {
			return
		}
		if err := evt.Content.ParseRaw(evType); err != nil && evType != EventPollResponseStable {
			return
		}
		desk.mu.Lock()
		desk.messages, desk.clicks, desk.answers = nil, nil, nil
		desk.mu.Unlock()
		switch evType {
		case event.EventReaction:
			b.onReaction(t.Context(), evt)
		case event.EventUnstablePollResponse, EventPollResponseStable:
			b.onPollResponse(t.Context(), evt)
		default:
			b.onMessage(t.Context(), evt)
		}
		desk.mu.Lock()
		defer desk.mu.Unlock()
		for _, m := range desk.messages {
			if m.Place.Channel != string(room) || m.User.ID != string(sender) || m.ID != "$evt" || m.Place.Thread == "" {
				t.Fatalf("message %+v from %s", m, content)
			}
			for _, file := range m.Files {
				if int64(len(file.Data)) > b.cfg.MaxFileBytes {
					t.Fatalf("a %d-byte attachment passed the %d-byte bound", len(file.Data), b.cfg.MaxFileBytes)
				}
			}
		}
		for _, c := range desk.clicks {
			if c.Place.Channel != string(room) || c.User.ID != string(sender) {
				t.Fatalf("click %+v from %s", c, content)
			}
		}
		for _, a := range desk.answers {
			if a.Place.Channel != string(room) || a.User.ID != string(sender) {
				t.Fatalf("answer %+v from %s", a, content)
			}
		}
	})
}

// TestHandlePanic: a handler that panics is logged and the sender is told;
// the next event of the room is still handled.
func TestHandlePanic(t *testing.T) {
	b, _ := offlineBot(t)
	evt := &event.Event{Type: event.EventMessage, Sender: "@alice:fuzz.test", RoomID: "!room:fuzz.test", ID: "$e"}
	b.handle(t.Context(), queued{evt: evt, fn: func(context.Context, *event.Event) {
		var c *event.MessageEventContent
		_ = c.Body
	}})
	if b.Panics() != 1 {
		t.Fatalf("%d panics recorded", b.Panics())
	}
	offlineSent.Lock()
	told := slices.ContainsFunc(offlineSent.bodies, func(s string) bool {
		return strings.Contains(s, "@alice:fuzz.test") && strings.Contains(s, failureNote)
	})
	offlineSent.Unlock()
	if !told {
		t.Fatalf("the sender was not told; sent %q", offlineSent.bodies)
	}
	ran := false
	b.handle(t.Context(), queued{evt: evt, fn: func(context.Context, *event.Event) { ran = true }})
	if !ran {
		t.Fatal("the next event did not run")
	}
}
