package slacktest_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
)

func client(s *slacktest.Server, token string) *slack.Client {
	return slack.New(token, slack.OptionAPIURL(s.APIURL()))
}

func slackErr(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return ""
}

// TestFake checks the fake against slack-go itself: the wire forms, ids and
// errors the bot relies on.
func TestFake(t *testing.T) {
	s := slacktest.New(t)
	api := client(s, slacktest.BotToken)
	ctx := t.Context()

	t.Run("auth", func(t *testing.T) {
		a, err := api.AuthTestContext(ctx)
		if err != nil || a.UserID != slacktest.BotUserID || a.TeamID != slacktest.TeamID {
			t.Fatalf("auth.test %+v %v", a, err)
		}
		if _, err := client(s, "xoxb-wrong").AuthTestContext(ctx); slackErr(err) != "invalid_auth" {
			t.Fatalf("wrong token: %v", err)
		}
	})

	t.Run("unique realistic ts, form-encoded with the token", func(t *testing.T) {
		seen := map[string]bool{}
		for i := range 200 {
			_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("m", false))
			if err != nil {
				t.Fatal(err)
			}
			if seen[ts] || len(ts) != len("1700000000.000000") || ts[10] != '.' {
				t.Fatalf("post %d: ts %q", i, ts)
			}
			seen[ts] = true
		}
		c := s.Calls("chat.postMessage")[0]
		if c.Form.Get("token") != slacktest.BotToken || c.Bearer != "" || c.Form.Get("channel") != "C1" {
			t.Fatalf("call %+v", c)
		}
	})

	t.Run("update, delete, reactions", func(t *testing.T) {
		_, ts, _ := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("v1", false))
		if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("v2", false)); err != nil {
			t.Fatal(err)
		}
		m, _ := s.Message("C1", ts)
		if m.Text != "v2" || m.Edits != 1 || strings.Join(m.Versions, ",") != "v1,v2" {
			t.Fatalf("message %+v", m)
		}
		if _, _, _, err := api.UpdateMessageContext(ctx, "C1", "1.2", slack.MsgOptionText("x", false)); slackErr(err) != "message_not_found" {
			t.Fatalf("update of a missing message: %v", err)
		}
		if err := api.AddReactionContext(ctx, "eyes", slack.ItemRef{Channel: "C1", Timestamp: ts}); err != nil {
			t.Fatal(err)
		}
		if err := api.AddReactionContext(ctx, "eyes", slack.ItemRef{Channel: "C1", Timestamp: ts}); slackErr(err) != "already_reacted" {
			t.Fatalf("second reaction: %v", err)
		}
		if _, _, err := api.DeleteMessageContext(ctx, "C1", ts); err != nil {
			t.Fatal(err)
		}
		if _, ok := s.Message("C1", ts); ok {
			t.Fatal("deleted message still there")
		}
	})

	t.Run("streaming", func(t *testing.T) {
		root := s.PostUserMessage("C1", "", "q")
		if _, _, err := api.StartStreamContext(ctx, "C1", slack.MsgOptionTS(root), slack.MsgOptionMarkdownText("a")); slackErr(err) != "missing_recipient_user_id" {
			t.Fatalf("channel stream without recipient: %v", err)
		}
		_, ts, err := api.StartStreamContext(ctx, "C1", slack.MsgOptionTS(root), slack.MsgOptionMarkdownText("Hel"),
			slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID(slacktest.TeamID))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("lo")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := api.StopStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("!")); err != nil {
			t.Fatal(err)
		}
		m, _ := s.Message("C1", ts)
		if m.Markdown != "Hello!" || m.Streaming || m.ThreadTS != root {
			t.Fatalf("streamed message %+v", m)
		}
		if _, _, err := api.AppendStreamContext(ctx, "C1", ts, slack.MsgOptionMarkdownText("more")); slackErr(err) != "message_not_in_streaming_state" {
			t.Fatalf("append after stop: %v", err)
		}
	})

	t.Run("views: bearer JSON, trigger expiry", func(t *testing.T) {
		view := slack.ModalViewRequest{Type: slack.VTModal, Title: slack.NewTextBlockObject(slack.PlainTextType, "T", false, false)}
		trig := s.NewTrigger()
		if _, err := api.OpenViewContext(ctx, trig, view); err != nil {
			t.Fatal(err)
		}
		c := s.Calls("views.open")[0]
		if c.Bearer != slacktest.BotToken || len(c.JSON) == 0 {
			t.Fatalf("views.open call %+v", c)
		}
		if _, err := api.OpenViewContext(ctx, trig, view); slackErr(err) != "invalid_trigger_id" {
			t.Fatalf("reused trigger: %v", err)
		}
		old := s.NewTrigger()
		s.Advance(4 * time.Second)
		if _, err := api.OpenViewContext(ctx, old, view); slackErr(err) != "expired_trigger_id" {
			t.Fatalf("expired trigger: %v", err)
		}
	})

	t.Run("429 with Retry-After, scripted errors, tier limits", func(t *testing.T) {
		s.RateLimitNext("chat.update", 1, 7)
		_, ts, _ := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("v1", false))
		_, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("v2", false))
		var rl *slack.RateLimitedError
		if !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second {
			t.Fatalf("429: %v", err)
		}
		s.FailNext("chat.postMessage", 1, "msg_too_long")
		if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false)); slackErr(err) != "msg_too_long" {
			t.Fatalf("scripted error: %v", err)
		}
		s.SetLimit("reactions.add", slacktest.Rate{PerMinute: 1, Burst: 2})
		for i := range 3 {
			err := api.AddReactionContext(ctx, []string{"a", "b", "c"}[i], slack.ItemRef{Channel: "C1", Timestamp: ts})
			if i < 2 && err != nil {
				t.Fatalf("reaction %d: %v", i, err)
			}
			if i == 2 && !errors.As(err, &rl) {
				t.Fatalf("third reaction within the burst: %v", err)
			}
		}
	})

	t.Run("file upload and download", func(t *testing.T) {
		f, err := api.UploadFileContext(ctx, slack.UploadFileParameters{Filename: "a.md", Title: "a.md", Content: "# hi", FileSize: 4, Channel: "C1", ThreadTimestamp: "1.1"})
		if err != nil {
			t.Fatal(err)
		}
		var got *slacktest.File
		for _, x := range s.Files() {
			if x.ID == f.ID {
				got = &x
			}
		}
		if got == nil || string(got.Content) != "# hi" || got.ThreadTS != "1.1" {
			t.Fatalf("uploaded %+v", got)
		}
		_, u := s.AddFile("n.txt", "text/plain", []byte("data"))
		var b strings.Builder
		if err := api.GetFileContext(ctx, u, &b); err != nil || b.String() != "data" {
			t.Fatalf("download %q %v", b.String(), err)
		}
	})
}

// TestAgentSessions checks agents.sessions.* against slack-go's own calls:
// refused with not_authorized until the app declares agent_view, then the
// session is created by setStatus with its title, takes only the four
// statuses, is renamed, and is limited to Tier 3.
func TestAgentSessions(t *testing.T) {
	s := slacktest.New(t)
	api := client(s, slacktest.BotToken)
	ctx := t.Context()
	root := s.PostUserMessage("C1", "", "hello")
	set := func(status, title string) error {
		_, err := api.SetAgentSessionStatusContext(ctx, slack.AgentSessionSetStatusParameters{Status: status, ChannelID: "C1", ThreadTS: root, Title: title, InitiatorUserID: "U1"})
		return err
	}
	if err := set(slack.AgentSessionStatusProcessing, "t"); slackErr(err) != "not_authorized" {
		t.Fatalf("before agent_view: %v", err)
	}
	s.AgentSessions("")
	if err := set(slack.AgentSessionStatusProcessing, "Fix the build"); err != nil {
		t.Fatal(err)
	}
	if err := set("is thinking…", ""); slackErr(err) != "invalid_status" {
		t.Fatalf("free text status: %v", err)
	}
	if err := set(slack.AgentSessionStatusActive, "ignored"); err != nil {
		t.Fatal(err)
	}
	if s.SessionStatus("C1", root) != "active" || s.SessionTitle("C1", root) != "Fix the build" {
		t.Fatalf("session %q %q", s.SessionStatus("C1", root), s.SessionTitle("C1", root))
	}
	r, err := api.RenameAgentSessionContext(ctx, slack.AgentSessionRenameParameters{Title: "Renamed", ChannelID: "C1", ThreadTS: root})
	if err != nil || r.Title != "Renamed" || s.SessionTitle("C1", root) != "Renamed" {
		t.Fatalf("rename %+v %v", r, err)
	}
	if got := s.SessionStatuses("C1", root); strings.Join(got, ",") != "processing,active" {
		t.Fatalf("statuses %q", got)
	}
	if calls := s.SessionCalls("C1", root); calls[0].Initiator != "U1" {
		t.Fatalf("calls %+v", calls)
	}
	s.AgentSessions("missing_scope")
	if err := set(slack.AgentSessionStatusActive, ""); slackErr(err) != "missing_scope" {
		t.Fatalf("refused: %v", err)
	}
	s.AgentSessions("")
	s.SetTiers(1)
	var limited bool
	for range 10 {
		var rl *slack.RateLimitedError
		if err := set(slack.AgentSessionStatusActive, ""); errors.As(err, &rl) {
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("setStatus not limited to its tier")
	}
}
