package slack_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/store"
)

const signingSecret = "8f742231b10e8888abcd99yyyzzz85a5"

type harness struct {
	fake    *slacktest.Server
	stack   *chatopstest.Stack
	threads *chatops.Desk
	bot     *slackbot.Bot
	http    *httptest.Server
	work    string
	// stop stops the bot (as a process exit would); it is also run at cleanup.
	stop func()
}

var testBudget = chatops.Budget{MinInterval: 20 * time.Millisecond,
	Post: chatops.Rate{PerMinute: 6000, Burst: 50}, Update: chatops.Rate{PerMinute: 6000, Burst: 50}, Append: chatops.Rate{PerMinute: 6000, Burst: 50}}

type options struct {
	mode      string
	streaming string
	budget    chatops.Budget
	render    chatops.RenderOptions
	channels  map[string]slackbot.ChannelConfig
	fake      *slacktest.Server
	// allowMentions is slack.allow_mentions.
	allowMentions bool
	// assistant and appHome are slack.assistant and slack.app_home.
	assistant slackbot.AssistantConfig
	appHome   bool
	// redact is the desk's redactor (chatops.DeskOptions.Redact).
	redact chatops.Redactor
	// contextBytes is context.max_bytes (chatops.DeskOptions.ContextBytes).
	contextBytes int
}

func testLog() *slog.Logger {
	if os.Getenv("SLACK_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func start(t testing.TB, st *store.Store, o options) *harness {
	t.Helper()
	log := testLog()
	fake := o.fake
	if fake == nil {
		fake = slacktest.New(t)
	}
	stack := chatopstest.NewStack(t, st, log)
	if o.mode == "" {
		o.mode = slackbot.ModeSocket
	}
	if o.streaming == "" {
		o.streaming = "off"
	}
	if o.budget == (chatops.Budget{}) {
		o.budget = testBudget
	}
	if o.channels == nil {
		o.channels = map[string]slackbot.ChannelConfig{
			"C1": {Agent: "fake", Model: "m1", Allow: []string{"UALLOWED", "UAPPROVER"}, Approvers: []string{"UAPPROVER"}},
		}
	}
	cfg := slackbot.Config{Mode: o.mode, AppToken: slacktest.AppToken, BotToken: slacktest.BotToken,
		SigningSecret: signingSecret, APIURL: fake.APIURL(), Streaming: o.streaming, Channels: o.channels, AllowMentions: o.allowMentions,
		Assistant: o.assistant, AppHome: o.appHome}
	policy := &chatops.Policy{Admins: []string{"slack:UADMIN"}}
	cfg.Apply(policy)
	work := t.TempDir()
	threads := chatops.NewDesk(stack.Bot, chatstore.Store{St: st}, policy, chatops.DeskOptions{
		DefaultAgent: "fake", Workdir: work, Budget: o.budget, Render: o.render, IdleFollow: time.Second, Stream: o.streaming != "off", Redact: o.redact,
		ContextBytes: o.contextBytes,
	}, log)
	bot, err := slackbot.New(cfg, threads, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- bot.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Error("bot.Run did not return")
			}
			threads.Close()
		})
	}
	t.Cleanup(stop)
	select {
	case <-bot.Ready():
	case err := <-done:
		t.Fatalf("bot.Run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("bot not ready")
	}
	h := &harness{fake: fake, stack: stack, threads: threads, bot: bot, work: work, stop: stop}
	if o.mode == slackbot.ModeSocket {
		if err := fake.WaitConnected(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	} else {
		h.http = httptest.NewServer(bot.Handler())
		t.Cleanup(h.http.Close)
	}
	return h
}

var evSeq atomic.Int64

func eventID() string { return fmt.Sprintf("Ev%08d", evSeq.Add(1)) }

// callback wraps an inner event in an event_callback.
func callback(id string, inner map[string]any) map[string]any {
	return map[string]any{"token": "legacy", "team_id": slacktest.TeamID, "api_app_id": slacktest.AppID,
		"type": "event_callback", "event_id": id, "event_time": time.Now().Unix(), "event": inner,
		"authed_users": []string{slacktest.BotUserID}}
}

func mention(user, channel, ts, threadTS, text string) map[string]any {
	ev := map[string]any{"type": "app_mention", "user": user, "channel": channel, "ts": ts, "event_ts": ts,
		"text": "<@" + slacktest.BotUserID + "> " + text}
	if threadTS != "" {
		ev["thread_ts"] = threadTS
	}
	return ev
}

// blockActions is a button press on a message in a thread.
func blockActions(fake *slacktest.Server, user, channel, threadTS string, b chatops.Button) map[string]any {
	return map[string]any{
		"type": "block_actions", "team": map[string]any{"id": slacktest.TeamID}, "user": map[string]any{"id": user},
		"api_app_id": slacktest.AppID, "trigger_id": fake.NewTrigger(),
		"container": map[string]any{"type": "message", "message_ts": "1.1", "channel_id": channel, "thread_ts": threadTS},
		"channel":   map[string]any{"id": channel},
		"actions":   []map[string]any{{"action_id": b.ID, "block_id": "tl_actions", "value": b.Value, "type": "button", "action_ts": "1.2"}},
	}
}

type block struct {
	Type     string            `json:"type"`
	Text     json.RawMessage   `json:"text"`
	Elements []json.RawMessage `json:"elements"`
}

func parseBlocks(t testing.TB, m slacktest.Message) []block {
	t.Helper()
	if len(m.Blocks) == 0 {
		return nil
	}
	var bl []block
	if err := json.Unmarshal(m.Blocks, &bl); err != nil {
		t.Fatalf("blocks %s: %v", m.Blocks, err)
	}
	return bl
}

// buttons returns the buttons of a message's blocks.
func buttons(t testing.TB, m slacktest.Message) []chatops.Button {
	t.Helper()
	var out []chatops.Button
	for _, b := range parseBlocks(t, m) {
		if b.Type != "actions" {
			continue
		}
		for _, raw := range b.Elements {
			var e struct {
				ActionID string `json:"action_id"`
				Value    string `json:"value"`
				Text     struct {
					Text string `json:"text"`
				} `json:"text"`
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatalf("button %s: %v", raw, err)
			}
			out = append(out, chatops.Button{ID: e.ActionID, Value: e.Value, Label: e.Text.Text})
		}
	}
	return out
}

// blockText returns the markdown body (or the streamed markdown) and the
// context lines of a message.
func blockText(t testing.TB, m slacktest.Message) (body string, context []string) {
	t.Helper()
	hasBody := false
	for _, b := range parseBlocks(t, m) {
		switch b.Type {
		case "markdown":
			_ = json.Unmarshal(b.Text, &body)
			hasBody = true
		case "context":
			for _, raw := range b.Elements {
				var e struct {
					Text string `json:"text"`
				}
				_ = json.Unmarshal(raw, &e)
				context = append(context, e.Text)
			}
		}
	}
	if !hasBody && m.Markdown != "" {
		body = m.Markdown // streamed natively
	}
	return body, context
}

// answer returns the bot's answer message in the thread that has a footer.
func finalAnswer(t testing.TB, fake *slacktest.Server, channel, thread string) (slacktest.Message, string, bool) {
	for _, m := range fake.Thread(channel, thread) {
		body, ctx := blockText(t, m)
		for _, c := range ctx {
			if strings.HasPrefix(c, "Done") || strings.HasPrefix(c, "Stopped") || strings.HasPrefix(c, "The run failed") {
				return m, body, true
			}
		}
	}
	return slacktest.Message{}, "", false
}

// sign returns the Slack signature headers of body at time ts.
func sign(body []byte, ts time.Time) http.Header {
	h := http.Header{}
	s := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(signingSecret))
	fmt.Fprintf(mac, "v0:%s:%s", s, body)
	h.Set("X-Slack-Request-Timestamp", s)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return h
}

// post sends a signed request to the bot's HTTP handler.
func (h *harness) post(t testing.TB, path, contentType string, body []byte, hdr http.Header) (*http.Response, string, time.Duration) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.http.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", contentType)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp, b.String(), time.Since(start)
}

func formPayload(v any) []byte {
	raw, _ := json.Marshal(v)
	return []byte(url.Values{"payload": {string(raw)}}.Encode())
}
