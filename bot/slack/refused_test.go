package slack_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// syncLog is a log sink safe for the bot's goroutines.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *syncLog) count(s string) int { return strings.Count(l.String(), s) }

// running is a socket-mode bot on fake, Run in the background.
type running struct {
	bot  *slackbot.Bot
	done chan error
	log  *syncLog
}

func runBot(t *testing.T, fake *slacktest.Server) *running {
	t.Helper()
	st := storetest.Open(t, store.DialectSQLite)
	logs := &syncLog{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	stack := chatopstest.NewStack(t, st, log)
	threads := chatops.NewDesk(stack.Bot, chatstore.Store{St: st}, &chatops.Policy{}, chatops.DeskOptions{DefaultAgent: "fake", Workdir: t.TempDir()}, log)
	cfg := slackbot.Config{Mode: slackbot.ModeSocket, AppToken: slacktest.AppToken, BotToken: slacktest.BotToken, APIURL: fake.APIURL()}
	bot, err := slackbot.New(cfg, threads, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{bot: bot, done: make(chan error, 1), log: logs}
	go func() { r.done <- bot.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context ended")
		}
		threads.Close()
	})
	return r
}

// ended waits for Run to return on its own and returns its error.
func (r *running) ended(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("Run did not return; its log:\n%s", r.log)
		return nil
	}
}

// TestRunRefusedToken: a token Slack refuses ends Run with an error naming
// it, whichever refusal Slack gives, at the start or after a reconnection;
// the pruner and Socket Mode have stopped by then (Run returned).
func TestRunRefusedToken(t *testing.T) {
	for _, code := range []string{"invalid_auth", "not_authed", "token_revoked", "account_inactive", "not_allowed_token_type"} {
		t.Run("app token "+code, func(t *testing.T) {
			fake := slacktest.New(t)
			fake.Refuse(slacktest.AppToken, code)
			r := runBot(t, fake)
			err := r.ended(t)
			if !errors.Is(err, slackbot.ErrAppTokenRefused) || !strings.Contains(err.Error(), "apps.connections.open: "+code) {
				t.Fatalf("Run = %v, want the app token refused with %s", err, code)
			}
			if n := len(fake.Calls("apps.connections.open")); n != 1 {
				t.Errorf("a refused app token was tried %d times", n)
			}
		})
	}
	t.Run("bot token", func(t *testing.T) {
		fake := slacktest.New(t)
		fake.Refuse(slacktest.BotToken, "invalid_auth")
		err := runBot(t, fake).ended(t)
		if !errors.Is(err, slackbot.ErrBotTokenRefused) || !strings.Contains(err.Error(), "auth.test: invalid_auth") || !strings.Contains(err.Error(), "slack.bot_token") {
			t.Fatalf("Run = %v, want the bot token refused", err)
		}
	})
	t.Run("app token revoked while connected", func(t *testing.T) {
		fake := slacktest.New(t)
		r := runBot(t, fake)
		chatopstest.WaitFor(t, "healthy", func() bool { return r.bot.Healthy(context.Background()) == nil })
		fake.Refuse(slacktest.AppToken, "token_revoked")
		fake.Disconnect() // Slack rotates the connection: the client opens a new one
		err := r.ended(t)
		if !errors.Is(err, slackbot.ErrAppTokenRefused) || !strings.Contains(err.Error(), "token_revoked") {
			t.Fatalf("Run = %v, want the app token refused", err)
		}
	})
}

// TestRunRetriesUnreachableSocket: Slack failing apps.connections.open for
// its own reasons is retried with backoff and logged each time, the bot
// unhealthy meanwhile; once Slack answers the bot connects and is healthy.
func TestRunRetriesUnreachableSocket(t *testing.T) {
	fake := slacktest.New(t)
	fake.Refuse(slacktest.AppToken, "internal_error") // Slack's own trouble, not the token's
	r := runBot(t, fake)
	const retrying = "socket mode: cannot connect, retrying"
	chatopstest.WaitFor(t, "three attempts logged", func() bool { return r.log.count(retrying) >= 3 })
	if err := r.bot.Healthy(context.Background()); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Errorf("Healthy while Socket Mode cannot connect = %v", err)
	}
	fake.Refuse(slacktest.AppToken, "")
	chatopstest.WaitFor(t, "healthy once Slack answers", func() bool { return r.bot.Healthy(context.Background()) == nil })
	if err := fake.WaitConnected(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.done:
		t.Fatalf("Run returned: %v", err)
	default:
	}
}

// TestRefused: Slack's refusals of a token are refusals; its own trouble,
// a 5xx, a rate limit and a network failure are not.
func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{slack.SlackErrorResponse{Err: "invalid_auth"}, true},
		{slack.SlackErrorResponse{Err: "not_allowed_token_type"}, true},
		{slack.SlackErrorResponse{Err: "internal_error"}, false},
		{slack.SlackErrorResponse{Err: "ratelimited"}, false},
		{slack.StatusCodeError{Code: 401, Status: "401 Unauthorized"}, true},
		{slack.StatusCodeError{Code: 502, Status: "502 Bad Gateway"}, false},
		{&slack.RateLimitedError{RetryAfter: time.Second}, false},
		{errors.New("dial tcp: connection refused"), false},
		{nil, false},
	} {
		if got, _ := slackbot.Refused(tc.err); got != tc.want {
			t.Errorf("Refused(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
