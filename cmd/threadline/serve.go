// threadline serve: the configured chat front-ends plus /healthz and /metrics,
// with a graceful shutdown in a fixed, logged order.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
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

// Limits of the HTTP listeners' connections.
const (
	httpReadHeaderTimeout = 5 * time.Second
	httpReadTimeout       = 15 * time.Second
	httpWriteTimeout      = 30 * time.Second
	httpIdleTimeout       = 60 * time.Second
)

func cmdServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "config file")
	if err := fs.Parse(args); err != nil {
		return &exitError{2, err}
	}
	cfg, err := loadConfig(*config)
	if err != nil {
		return err
	}
	iso, err := startHost(cfg, true, stderr)
	if err != nil {
		return err
	}
	log := newLogger(stderr, slog.LevelInfo, cfg)
	if iso == nil {
		log.Warn("host agents are not isolated (host.isolation: off): they run as the bot's user")
	} else {
		log.Info("host agents run isolated", "user", iso.User, "uid", iso.UID)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := openApp(context.WithoutCancel(ctx), cfg, log, agent.ApprovalAsk, withRelays(""), withIsolation(iso, workRoot(cfg)))
	if err != nil {
		return err
	}
	var fronts []frontEnd
	for _, build := range frontEndBuilders {
		f, err := build(ctx, a)
		if err != nil {
			a.Close()
			return err
		}
		if f != nil {
			fronts = append(fronts, f)
		}
	}
	if len(fronts) == 0 {
		a.Close()
		return errors.New("nothing to serve: configure slack: or matrix: (see configs/threadline.example.yaml); for a terminal chat use `threadline chat`")
	}
	return serve(ctx, a, fronts)
}

// serve runs the front-ends and the HTTP server until ctx ends, then shuts down:
// stop intake, interrupt runs with a deadline, flush the event writer, close the
// database.
func serve(ctx context.Context, a *app, fronts []frontEnd) error {
	log := a.log
	checks := []healthCheck{{"database", func(ctx context.Context) error { return a.store.DB().PingContext(ctx) }}}
	for _, f := range fronts {
		checks = append(checks, healthCheck{f.Name(), f.Healthy})
	}
	mux := httpHandler(a.metrics, checks)
	for _, f := range fronts {
		for path, h := range f.Handlers() {
			mux.Handle(path, h)
		}
	}
	ln, err := net.Listen("tcp", a.cfg.HTTP.Listen)
	if err != nil {
		a.Close()
		return fmt.Errorf("http.listen %s: %w", a.cfg.HTTP.Listen, err)
	}
	// Timeouts against slow clients (slowloris): the Slack endpoints read at
	// most 1 MiB and answer at once; nothing here streams.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: httpReadHeaderTimeout, ReadTimeout: httpReadTimeout,
		WriteTimeout: httpWriteTimeout, IdleTimeout: httpIdleTimeout}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	}()
	log.Info("serving", "http", ln.Addr().String(), "front-ends", len(fronts))

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
	var runErr error
	select {
	case <-ctx.Done():
		log.Info("shutdown: signal received")
	case runErr = <-errs:
		log.Error("shutdown: a front-end failed", "err", runErr)
	}

	log.Info("shutdown 1/4: stop intake")
	stopIntake()
	wg.Wait()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = srv.Shutdown(sctx)
	cancel()

	log.Info("shutdown 2/4: detach relayed runs, interrupt the others", "deadline", shutdownGrace)
	sctx, cancel = context.WithTimeout(context.Background(), shutdownGrace)
	n, err := a.prompt.Detach(sctx)
	if err != nil {
		log.Warn("shutdown: runs still ending", "err", err)
	}
	if n > 0 {
		log.Info("shutdown: runs detached, the next start reattaches them", "runs", n)
	}
	cancel()
	if a.threads != nil {
		// After the runs ended, so that their last state is rendered.
		if err := a.threads.Close(); err != nil {
			log.Warn("shutdown: front desk", "err", err)
		}
	}

	log.Info("shutdown 3/4: flush the event writer")
	a.stopLive()
	<-a.liveDone
	if err := a.hub.Close(); err != nil {
		log.Warn("shutdown: flush events", "err", err)
	}
	log.Info("shutdown 4/4: close the database")
	if err := a.store.Close(); err != nil {
		log.Warn("shutdown: close database", "err", err)
	}
	log.Info("shutdown complete")
	return runErr
}
