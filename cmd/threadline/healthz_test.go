// Tests for serve's listeners and health: where /healthz and /metrics are
// served (never on a public Slack HTTP listener), and that /healthz reports
// the front-ends' cached health instead of calling Slack per request.

package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
)

// serveSlack starts `threadline serve` against a fresh Slack fake with the
// given slack mode and http section, and returns the fake; serve stops at
// the end of the test or when stop is called. Top-level keys of override
// replace the config's (a nil value removes the key). dir is the test's
// directory (isolate).
func serveSlack(t *testing.T, dir, mode string, httpCfg map[string]any, override ...map[string]any) (fake *slacktest.Server, stop func()) {
	t.Helper()
	fake = slacktest.New(t)
	return fake, serveConfig(t, slackConfigFile(t, fake, dir, mode, httpCfg, override...))
}

// slackConfigFile writes serveSlack's config for fake into dir and returns its path.
func slackConfigFile(t *testing.T, fake *slacktest.Server, dir, mode string, httpCfg map[string]any, override ...map[string]any) string {
	t.Helper()
	sl := map[string]any{"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL()}
	if mode != "" {
		sl["mode"] = mode
		sl["signing_secret"] = "test-signing-secret"
	}
	cfg := map[string]any{
		"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
		"host":     map[string]any{"isolation": "off"},
		"http":     httpCfg,
		"slack":    sl,
	}
	for _, o := range override {
		for k, v := range o {
			if v == nil {
				delete(cfg, k)
			} else {
				cfg[k] = v
			}
		}
	}
	raw, _ := yaml.Marshal(cfg)
	cfgPath := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath
}

// serveConfig runs `threadline serve --config cfgPath` until the end of the
// test or stop, which fails the test if serve failed.
func serveConfig(t *testing.T, cfgPath string, flags ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var logs lockedBuffer
	done := make(chan error, 1)
	go func() { done <- cmdServe(ctx, append([]string{"--config", cfgPath}, flags...), io.Discard, &logs) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("serve: %v\n%s", err, logs.String())
				}
			case <-time.After(30 * time.Second):
				t.Errorf("serve did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// get returns the status and body of GET url (status 0 when it cannot connect).
func get(url string) (int, string) {
	res, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestServeHealthzCachesSlack: with the real Slack front-end on the fake,
// 50 /healthz requests make at most one or two auth.test calls, and a
// broken front-end (auth.test failing) still turns /healthz to 503.
func TestServeHealthzCachesSlack(t *testing.T) {
	oldInterval, oldRetry := healthInterval, healthRetry
	healthInterval, healthRetry = time.Second, 100*time.Millisecond
	t.Cleanup(func() { healthInterval, healthRetry = oldInterval, oldRetry })
	listen := freePort(t)
	fake, _ := serveSlack(t, isolate(t), "", map[string]any{"listen": listen})
	base := "http://" + listen
	chatopstest.WaitFor(t, "/healthz ok", func() bool {
		code, body := get(base + "/healthz")
		return code == 200 && strings.Contains(body, `"slack":"ok"`)
	})
	before := len(fake.Calls("auth.test"))
	start := time.Now()
	for i := range 50 {
		if code, body := get(base + "/healthz"); code != 200 {
			t.Fatalf("/healthz %d = %d %s", i, code, body)
		}
	}
	took := time.Since(start)
	calls := len(fake.Calls("auth.test")) - before
	t.Logf("50 /healthz in %v made %d auth.test calls (check every %v)", took.Round(time.Millisecond), calls, healthInterval)
	if allowed := 1 + int(took/healthInterval); calls > allowed {
		t.Errorf("50 /healthz made %d auth.test calls, want at most %d", calls, allowed)
	}
	if code, body := get(base + "/metrics"); code != 200 || !strings.Contains(body, "threadline_") {
		t.Errorf("/metrics on the loopback listener = %d", code)
	}

	fake.FailNext("auth.test", 1<<20, "invalid_auth")
	chatopstest.WaitFor(t, "/healthz reporting the broken front-end", func() bool {
		code, body := get(base + "/healthz")
		return code == 503 && strings.Contains(body, "invalid_auth") && strings.Contains(body, `"database":"ok"`)
	})
}

// TestServeAdminListenerInHTTPMode: in Slack HTTP mode the public listener
// serves the Slack routes only; /healthz and /metrics are on admin_listen.
func TestServeAdminListenerInHTTPMode(t *testing.T) {
	listen, admin := freePort(t), freePort(t)
	serveSlack(t, isolate(t), "http", map[string]any{"listen": listen, "admin_listen": admin})
	chatopstest.WaitFor(t, "/healthz ok on the admin listener", func() bool {
		code, body := get("http://" + admin + "/healthz")
		return code == 200 && strings.Contains(body, `"slack":"ok"`)
	})
	if code, body := get("http://" + admin + "/metrics"); code != 200 || !strings.Contains(body, "threadline_") {
		t.Errorf("admin /metrics = %d", code)
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		if code, _ := get("http://" + listen + path); code != http.StatusNotFound {
			t.Errorf("public listener %s = %d, want 404", path, code)
		}
	}
	// The Slack route is there (an unsigned request is refused, not missing).
	res, err := http.Post("http://"+listen+"/slack/events", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == http.StatusNotFound || res.StatusCode < 400 {
		t.Errorf("unsigned POST /slack/events = %d, want a refusal", res.StatusCode)
	}
}

func TestServeRefusesAdminOnThePublicListener(t *testing.T) {
	dir := isolate(t)
	listen := freePort(t)
	raw, _ := yaml.Marshal(map[string]any{
		"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
		"host":     map[string]any{"isolation": "off"},
		"http":     map[string]any{"listen": listen, "admin_listen": listen},
		"slack": map[string]any{"mode": "http", "signing_secret": "s", "app_token": slacktest.AppToken,
			"bot_token": slacktest.BotToken, "api_url": slacktest.New(t).APIURL()},
	})
	cfgPath := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	err := cmdServe(t.Context(), []string{"--config", cfgPath}, io.Discard, &logs)
	if err == nil || !strings.Contains(err.Error(), "must differ from http.listen") {
		t.Fatalf("serve = %v, want the admin_listen refusal", err)
	}
}

// TestServePrivateFilesUnderUmask0: with umask 0000 and the default
// database, serve leaves the data and state directories 0700 and the SQLite
// database, its -wal and -shm 0600; wider modes of an older install are
// taken away on the next start (the data directory keeps o+x).
func TestServePrivateFilesUnderUmask0(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := isolate(t)
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	listen := freePort(t)
	data := filepath.Join(dir, "data", "threadline")
	state := filepath.Join(dir, "state", "threadline")
	db := filepath.Join(data, "threadline.db")
	dataMode := os.FileMode(0o700)
	start := func() {
		t.Helper()
		_, stop := serveSlack(t, dir, "", map[string]any{"listen": listen}, map[string]any{"database": nil})
		chatopstest.WaitFor(t, "/healthz ok", func() bool { code, _ := get("http://" + listen + "/healthz"); return code == 200 })
		for p, want := range map[string]os.FileMode{data: dataMode, state: 0o700, db: 0o600, db + "-wal": 0o600, db + "-shm": 0o600} {
			if fi, err := os.Stat(p); err != nil {
				t.Errorf("%s: %v", p, err)
			} else if fi.Mode().Perm() != want {
				t.Errorf("%s: mode %o, want %o", p, fi.Mode().Perm(), want)
			}
		}
		stop()
	}
	start()
	// An older install: wider modes are taken away on the next start, but
	// for other's search bit on the data directory (isolated agents reach
	// their working directories through it; it lists nothing).
	for p, mode := range map[string]os.FileMode{data: 0o755, state: 0o775, db: 0o644} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	dataMode = 0o701
	start()
}
