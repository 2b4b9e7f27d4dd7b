// Package slack is the Slack front-end: Slack threads become chats through
// chatops. It speaks Socket Mode (default) or the HTTP Events API with an
// interactivity endpoint, over slack-go v0.35.0.
//
// Every inbound request is acknowledged first (Slack wants an answer within
// 3 s) and acted on after; Events API retries and duplicate deliveries are
// dropped by event_id, recorded in the store so that this holds across
// restarts. Every event is handed to the chatops desk, whose per-thread
// actors handle the events of one thread in order; a request is acked once
// its event is queued.
//
// Wiring (cmd/threadline serve), with st a *store.Store and core the
// *chatops.Chats of the app:
//
//	policy := &chatops.Policy{Admins: cfg.Access.Admins}
//	cfg.Slack.Apply(policy) // the channels' defaults, allow and approver lists
//	threads := chatops.NewDesk(core, st, policy, chatops.DeskOptions{
//		DefaultAgent: defaultAgent, Workdir: cfg.Workdir}, log)
//	defer threads.Close() // after Run returned
//	sb, err := slack.New(cfg.Slack, threads, log) // validates cfg.Slack
//	go sb.Run(ctx)                                // auth.test, resume, Socket Mode
//	mux.Handle("/slack/", sb.Handler())           // mode http only
package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops"
)

// Bot is a running Slack front-end.
type Bot struct {
	cfg     Config
	api     *slack.Client
	threads *chatops.Desk
	log     *slog.Logger
	surface *surface
	home    *home

	mu      sync.Mutex
	ready   chan struct{}
	botUser string
	botID   string
	team    string
	panics  atomic.Int64
	wg      sync.WaitGroup
	base    context.Context
	cancel  context.CancelFunc

	// socketUp says the Socket Mode connection is open (Healthy).
	socketUp atomic.Bool
}

// New checks the config and returns a Bot over threads. Call Run to connect.
// Options are for tests (slack.OptionHTTPClient, ...).
func New(cfg Config, threads *chatops.Desk, logger *slog.Logger, opts ...slack.Option) (*Bot, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	o := []slack.Option{slack.OptionAPIURL(cfg.APIURL)}
	if cfg.AppToken != "" {
		o = append(o, slack.OptionAppLevelToken(cfg.AppToken))
	}
	api := slack.New(cfg.BotToken, append(o, opts...)...)
	allowMentions.Store(cfg.AllowMentions)
	ctx, cancel := context.WithCancel(context.Background())
	b := &Bot{
		cfg: cfg, api: api, threads: threads, log: logger.With(logkey.Platform, Platform),
		ready: make(chan struct{}), base: ctx, cancel: cancel,
	}
	b.home = newHome(api, threads, b.log, cfg.AppHome, &b.wg, ctx)
	b.surface = &surface{api: api, token: cfg.BotToken, stream: cfg.Streaming != "off", requester: map[chatops.Place]string{}, home: b.home,
		sessions: newSessions(api, b.log, &b.wg, ctx), logger: b.log, self: b.self}
	return b, nil
}

// Run connects (auth.test), resumes the rendering of runs a previous process
// left unfinished and serves Slack until ctx ends: over Socket Mode, or, in
// http mode, through Handler (which must be mounted by the caller).
//
// It returns nil when ctx ends, and an error wrapping ErrBotTokenRefused or
// ErrAppTokenRefused when Slack refuses a token; Socket Mode retries an
// unreachable or busy Slack with backoff, logging each attempt. Every
// goroutine of the bot has ended when Run returns.
func (b *Bot) Run(ctx context.Context) error {
	ctx, stop := context.WithCancel(ctx)
	defer func() {
		stop() // the pruner and Socket Mode
		b.cancel()
		b.wg.Wait()
	}()
	auth, err := b.api.AuthTestContext(ctx)
	if refused, why := Refused(err); refused {
		return fmt.Errorf("%w: auth.test: %s", ErrBotTokenRefused, why)
	}
	if err != nil {
		return fmt.Errorf("slack: auth.test: %w", err)
	}
	b.mu.Lock()
	b.botUser, b.botID, b.team = auth.UserID, auth.BotID, auth.TeamID
	b.mu.Unlock()
	b.home.mu.Lock()
	b.home.url = auth.URL
	b.home.mu.Unlock()
	b.threads.Attach(Platform, b.surface)
	close(b.ready)
	b.log.InfoContext(ctx, "slack connected", "team", auth.TeamID, "bot_user", auth.UserID, "mode", b.cfg.Mode)
	if err := b.threads.Resume(ctx, Platform); err != nil {
		b.log.WarnContext(ctx, "resume rendering", "err", err)
	}
	b.wg.Go(func() { b.pruneSeen(ctx) })
	if b.cfg.Mode == ModeHTTP {
		<-ctx.Done()
		return nil
	}
	return b.runSocket(ctx)
}

// seenRetention is how long inbound event ids are kept for dedup; Slack
// retries a delivery for about an hour.
const seenRetention = 48 * time.Hour

// pruneSeen forgets old event ids every hour.
func (b *Bot) pruneSeen(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if n, err := b.threads.PruneSeen(ctx, time.Now().Add(-seenRetention)); err != nil {
			b.log.WarnContext(ctx, "prune seen event ids", "err", err)
		} else if n > 0 {
			b.log.DebugContext(ctx, "pruned seen event ids", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Ready is closed once Run has connected.
func (b *Bot) Ready() <-chan struct{} { return b.ready }

// self returns the bot's user id and bot id (auth.test).
func (b *Bot) self() (botUser, botID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.botUser, b.botID
}

func (b *Bot) identity() (botUser, team string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.botUser, b.team
}

// runSocket reads Socket Mode events until ctx ends or the app token is
// refused. The client reconnects by itself, with backoff while Slack cannot
// be reached; envelopes are acked before they are acted on. The client has
// stopped when runSocket returns.
func (b *Bot) runSocket(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	sm := socketmode.New(b.api)
	errc := make(chan error, 1)
	go func() { errc <- sm.RunContext(ctx) }()
	defer func() {
		cancel()
		<-errc // its every send watches ctx
		b.socketUp.Store(false)
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			errc <- err // for the deferred wait
			if ctx.Err() != nil {
				return nil
			}
			if refused, why := Refused(err); refused {
				return fmt.Errorf("%w: apps.connections.open: %s", ErrAppTokenRefused, why)
			}
			return fmt.Errorf("slack: socket mode: %w", err)
		case ev, ok := <-sm.Events:
			if !ok {
				return nil
			}
			if err := b.socketState(ctx, ev); err != nil {
				return err
			}
			b.onSocketEvent(ctx, sm, ev)
		}
	}
}

// socketState follows the connection's state for Healthy, logs each failed
// attempt to connect, and returns an error when the attempt failed because
// Slack refused the app token (the client itself gives up only on some
// refusals, and retries not_allowed_token_type forever).
func (b *Bot) socketState(ctx context.Context, ev socketmode.Event) error {
	switch ev.Type {
	case socketmode.EventTypeConnected:
		b.socketUp.Store(true)
	case socketmode.EventTypeConnecting, socketmode.EventTypeDisconnect:
		b.socketUp.Store(false)
	case socketmode.EventTypeConnectionError:
		b.socketUp.Store(false)
		ce, ok := ev.Data.(*slack.ConnectionErrorEvent)
		if !ok {
			return nil
		}
		if refused, why := Refused(ce.ErrorObj); refused {
			return fmt.Errorf("%w: apps.connections.open: %s", ErrAppTokenRefused, why)
		}
		b.log.WarnContext(ctx, "socket mode: cannot connect, retrying", logkey.Err, ce.ErrorObj,
			logkey.Attempt, ce.Attempt, logkey.RetryIn, ce.Backoff)
	}
	return nil
}

// onSocketEvent handles one Socket Mode event under the safety net. Requests
// are acked once their event is queued on the desk (a put waits while the
// thread's queue is full), so that Slack delivers again what a dying process
// did not queue.
func (b *Bot) onSocketEvent(ctx context.Context, sm *socketmode.Client, ev socketmode.Event) {
	defer b.rescue(ctx, "socket mode "+string(ev.Type), func() who { return b.whoOf(ev.Data) })
	switch ev.Type {
	case socketmode.EventTypeConnected:
		b.log.InfoContext(ctx, "socket mode connected")
	case socketmode.EventTypeIncomingError, socketmode.EventTypeErrorBadMessage:
		b.log.WarnContext(ctx, "socket mode trouble", "type", ev.Type, "err", fmt.Sprint(ev.Data))
	case socketmode.EventTypeInvalidAuth:
		b.log.ErrorContext(ctx, "socket mode: invalid app token")
	case socketmode.EventTypeEventsAPI:
		if e, ok := ev.Data.(slackevents.EventsAPIEvent); ok {
			b.onEventsAPI(ctx, e)
		}
		if ev.Request != nil {
			b.ack(ctx, sm, ev.Request, nil)
		}
	case socketmode.EventTypeInteractive:
		cb, ok := ev.Data.(slack.InteractionCallback)
		if !ok || ev.Request == nil {
			return
		}
		if cb.Type == slack.InteractionTypeViewSubmission {
			if resp := validateSubmission(cb); resp != nil {
				b.ack(ctx, sm, ev.Request, resp)
				return
			}
		}
		b.onInteraction(ctx, cb)
		b.ack(ctx, sm, ev.Request, nil)
	case socketmode.EventTypeSlashCommand:
		if cmd, ok := ev.Data.(slack.SlashCommand); ok {
			b.onSlash(ctx, cmd)
		}
		if ev.Request != nil {
			b.ack(ctx, sm, ev.Request, nil)
		}
	}
}

// whoOf returns who sent a decoded Socket Mode payload, as far as it says.
func (b *Bot) whoOf(data any) who {
	switch d := data.(type) {
	case slackevents.EventsAPIEvent:
		if dl, ok := b.decodeEvent(d); ok {
			return who{place: dl.msg.Place, user: dl.msg.User}
		}
	case slack.InteractionCallback:
		for _, a := range b.decodeInteraction(d) {
			return a.who
		}
	case slack.SlashCommand:
		s := decodeSlash(d)
		return who{place: s.Place, user: s.User}
	}
	return who{}
}

func (b *Bot) ack(ctx context.Context, sm *socketmode.Client, req *socketmode.Request, payload any) {
	var err error
	if payload != nil {
		err = sm.AckCtx(ctx, req.EnvelopeID, payload)
	} else {
		err = sm.AckCtx(ctx, req.EnvelopeID, nil)
	}
	if err != nil {
		b.log.WarnContext(ctx, "socket mode ack", "envelope", req.EnvelopeID, "err", err)
	}
}

// Handler serves the HTTP Events API (/slack/events), interactivity
// (/slack/interactivity) and the slash command (/slack/commands), each
// signature-checked. Mount it on the http listener in http mode.
func (b *Bot) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /slack/events", b.serveEvents)
	mux.HandleFunc("POST /slack/interactivity", b.serveInteractivity)
	mux.HandleFunc("POST /slack/commands", b.serveCommand)
	return b.guardHTTP(mux)
}

// guardHTTP runs an HTTP handler under the safety net: a panic is logged with
// its stack and, unless the answer was already sent, answered 500 (not
// acked, so Slack delivers it again; Slack tells the person of a slash
// command or button that failed).
func (b *Bot) guardHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				b.panicked(r.Context(), "http "+r.URL.Path, p, nil)
				if !tw.wrote {
					http.Error(w, "internal error", http.StatusInternalServerError)
				}
			}
		}()
		next.ServeHTTP(tw, r)
	})
}

// trackingWriter records whether the answer's header went out.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(p []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// report logs what a handler returned; refusals are not errors.
func (b *Bot) report(ctx context.Context, what string, err error) {
	switch {
	case err == nil:
	case errors.Is(err, chatops.ErrForbidden):
		b.log.InfoContext(ctx, "refused", "what", what, "err", err)
	default:
		b.log.WarnContext(ctx, "slack handler", "what", what, "err", err)
	}
}

// Healthy reports whether the bot is connected (in socket mode: its Socket
// Mode connection is open) and its token still works (auth.test).
func (b *Bot) Healthy(ctx context.Context) error {
	select {
	case <-b.ready:
	default:
		return errors.New("not connected yet")
	}
	if b.cfg.Mode != ModeHTTP && !b.socketUp.Load() {
		return errors.New("socket mode not connected")
	}
	if _, err := b.api.AuthTestContext(ctx); err != nil {
		return fmt.Errorf("auth.test: %w", err)
	}
	return nil
}
