// threadline serve: the configured chat front-ends plus /healthz and /metrics
// (on a loopback admin listener when the main one is public, front-end health
// cached), with a graceful shutdown in a fixed, logged order.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/health"
	"github.com/threadline-bot/threadline/agentcore/lifecycle"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/configs"
)

// frontEnd is a chat platform connection run by serve.
type frontEnd interface {
	// Name is "slack" or "matrix".
	Name() string
	// Run serves until ctx ends (stop intake) and returns nil then.
	Run(ctx context.Context) error
	// Healthy reports whether the platform connection works.
	Healthy(ctx context.Context) error
	// Handlers are extra HTTP routes (the Slack Events API), or nil.
	Handlers() map[string]http.Handler
}

// frontEndBuilders build the front-ends a config asks for; each returns nil
// when its section is absent.
var frontEndBuilders []func(ctx context.Context, a *app) (frontEnd, error)

// shutdownGrace bounds how long running runs get to stop on SIGTERM.
const shutdownGrace = 20 * time.Second

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", stdout, stderr, "threadline serve [--config F] [--http-only]: the chat front-ends of the config, /healthz and /metrics")
	config := fs.String("config", "", "config file")
	httpOnly := fs.Bool("http-only", false, "serve only the HTTP listener (/healthz, /metrics) and the runs' lifecycle, without chat front-ends")
	if _, err := parseExactly(fs, args); err != nil {
		return err
	}
	cfg, err := configs.Load(*config)
	if err != nil {
		return err
	}
	host, err := cfg.StartHost(true, stderr)
	if err != nil {
		return err
	}
	if err := configs.PrivateDirs(host.Iso != nil); err != nil {
		return err
	}
	log := newLogger(stderr, slog.LevelInfo, cfg)
	if !host.Isolated() {
		log.Warn("host agents are not isolated (host.isolation: off): they run as the bot's user")
	} else {
		log.Info(host.Describe())
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := configs.Hangups() // from here SIGHUP reloads the config (reload.go) instead of ending serve
	defer signal.Stop(hup)
	a, err := openApp(context.WithoutCancel(ctx), cfg, log, agent.ApprovalAsk, withRelays(""), withIsolation(host, cfg.WorkRoot()))
	if err != nil {
		return err
	}
	var fronts []frontEnd
	for _, build := range frontEndBuilders {
		if *httpOnly {
			break
		}
		f, err := build(ctx, a)
		if err != nil {
			a.Close()
			return err
		}
		if f != nil {
			fronts = append(fronts, f)
		}
	}
	if len(fronts) == 0 && !*httpOnly {
		a.Close()
		return errors.New("nothing to serve: configure slack: or matrix: (see configs/threadline.example.yaml), or pass --http-only; for a terminal chat use `threadline chat`")
	}
	rctx, stopReload := context.WithCancel(ctx)
	defer stopReload()
	go a.reloads().On(rctx, hup, cfg.Path())
	return serve(ctx, a, fronts)
}

// serve runs the front-ends and the HTTP server until ctx ends or a
// front-end fails, then shuts down (lifecycle.Shutdown).
func serve(ctx context.Context, a *app, fronts []frontEnd) error {
	log := a.log
	healthCtx, stopHealth := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHealth()
	checks := []health.Check{{Name: "database", Check: func(ctx context.Context) error { return a.store.DB().PingContext(ctx) }}}
	for _, f := range fronts {
		// A front-end's check calls its platform (Slack's auth.test): it runs
		// in the background and /healthz reports the last result.
		hc := &health.Cache{Check: f.Healthy, Interval: healthInterval, Retry: healthRetry}
		go hc.Run(healthCtx)
		checks = append(checks, health.Check{Name: f.Name(), Check: hc.Last})
	}
	mux := http.NewServeMux()
	public := false
	for _, f := range fronts {
		for path, h := range f.Handlers() {
			mux.Handle(path, h)
			public = true
		}
	}
	plan, err := a.cfg.HTTP.Listeners(public)
	if err != nil {
		a.Close()
		return err
	}
	routes := make([]health.Route, len(plan))
	for i, l := range plan {
		routes[i] = health.Route{Key: l.Key, Addr: l.Addr, Handler: mux, Serves: l.Serves()}
		if l.Admin {
			routes[i].Handler = adminHandler(a.metrics, checks)
		}
	}
	servers, err := health.Listen(routes, log)
	if err != nil {
		a.Close()
		return err
	}
	log.Info("serving", logkey.FrontEnds, len(fronts))

	intake, stopIntake := context.WithCancel(ctx)
	defer stopIntake()
	var wg sync.WaitGroup
	errs := make(chan error, len(fronts))
	for _, f := range fronts {
		wg.Go(func() {
			if err := f.Run(intake); err != nil {
				errs <- fmt.Errorf("%s: %w", f.Name(), err)
			}
		})
	}
	// Idle chats' workspaces go after workspaces.keep, told in their thread.
	wg.Go(func() {
		gcWorkspaces(intake, a.workspaces, a.cfg.KeepWorkspaces(), time.Hour, log, func(ctx context.Context, chatID agent.ChatID, text string) {
			if a.threads != nil {
				if err := a.threads.TellChat(ctx, chatID, text); err != nil {
					log.Warn("workspace gc: tell the thread", logkey.ChatID, chatID, "err", err)
				}
			}
		})
	})
	// Schedules start new threads in their channels (schedule.go).
	wg.Go(func() { runSchedules(intake, a, log) })
	var runErr error
	select {
	case <-ctx.Done():
		log.Info("shutdown: signal received")
	case runErr = <-errs:
		log.Error("shutdown: a front-end failed", "err", runErr)
	}

	var closeDesk func() error
	if a.threads != nil {
		closeDesk = a.threads.Close
	}
	lifecycle.Shutdown{Log: log, Grace: shutdownGrace,
		StopIntake: func() {
			stopIntake()
			wg.Wait()
			stopHealth()
			servers.Shutdown()
		},
		Detach: a.prompt.Detach, CloseDesk: closeDesk,
		StopLive:    func() { a.stopLive(); <-a.liveDone; a.workspaces.Shutdown() },
		FlushEvents: a.hub.Close, CloseStore: a.store.Close,
	}.Run()
	return runErr
}

// Health of the front-ends: checked in the background, never per request.
var (
	// healthInterval is how often a healthy front-end is checked again.
	healthInterval = 15 * time.Second
	// healthRetry is how soon a failing (or not yet connected) one is.
	healthRetry = 2 * time.Second
)
