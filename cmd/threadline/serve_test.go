package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/configs"
)

type fakeFront struct {
	ran     chan struct{}
	stopped chan struct{}
	mu      sync.Mutex
	health  error
}

func (f *fakeFront) setHealth(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.health = err
}

func (f *fakeFront) Name() string { return "fake" }
func (f *fakeFront) Run(ctx context.Context) error {
	close(f.ran)
	<-ctx.Done()
	close(f.stopped)
	return nil
}
func (f *fakeFront) Healthy(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.health
}
func (f *fakeFront) Handlers() map[string]http.Handler {
	return map[string]http.Handler{"POST /fake/events": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ack") })}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestServeRoutesHealthAndOrderedShutdown(t *testing.T) {
	dir := isolate(t)
	oldInterval, oldRetry := healthInterval, healthRetry
	healthInterval, healthRetry = 50*time.Millisecond, 50*time.Millisecond
	t.Cleanup(func() { healthInterval, healthRetry = oldInterval, oldRetry })
	admin := freePort(t)
	cfg := &configs.Config{Database: configs.DatabaseConfig{URL: filepath.Join(dir, "tl.db")}, HTTP: configs.HTTPConfig{Listen: "127.0.0.1:38781", AdminListen: admin}}
	var logs lockedBuffer
	a, err := openApp(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, nil)), agent.ApprovalAsk)
	if err != nil {
		t.Fatal(err)
	}
	front := &fakeFront{ran: make(chan struct{}), stopped: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, a, []frontEnd{front}) }()
	<-front.ran
	base := "http://127.0.0.1:38781"
	// The front-end has routes (public): /healthz is on the admin listener.
	chatopstest.WaitFor(t, "/healthz ok", func() bool {
		code, body := get("http://" + admin + "/healthz")
		return code == 200 && strings.Contains(body, `"fake":"ok"`) && strings.Contains(body, `"database":"ok"`)
	})
	if code, _ := get(base + "/healthz"); code != http.StatusNotFound {
		t.Errorf("/healthz on the public listener = %d, want 404", code)
	}
	front.setHealth(errors.New("socket closed"))
	chatopstest.WaitFor(t, "/healthz 503 with the front-end down", func() bool {
		code, body := get("http://" + admin + "/healthz")
		return code == 503 && strings.Contains(body, "socket closed")
	})
	if res, err := http.Post(base+"/fake/events", "text/plain", nil); err != nil || res.StatusCode != 200 {
		t.Errorf("front-end route: %v %v", res, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	<-front.stopped
	out := logs.String()
	last := -1
	for _, step := range []string{"shutdown 1/4: stop intake", "shutdown 2/4", "shutdown 3/4", "shutdown 4/4: close the database", "shutdown complete"} {
		i := strings.Index(out, step)
		if i < 0 || i < last {
			t.Fatalf("shutdown step %q missing or out of order:\n%s", step, out)
		}
		last = i
	}
}
