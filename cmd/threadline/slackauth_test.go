// Slack credentials checked for real: serve ends with a plain message when
// Slack refuses the app token, /healthz is 503 while Socket Mode cannot
// connect, and doctor checks the app token and the agent ids of the config.

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
)

// TestServeStopsOnRefusedAppToken: serve exits 1 naming the app token
// instead of running on as a bot that never answers.
func TestServeStopsOnRefusedAppToken(t *testing.T) {
	dir := isolate(t)
	fake := slacktest.New(t)
	fake.Refuse(slacktest.AppToken, "invalid_auth")
	cfg := slackConfigFile(t, fake, dir, "", map[string]any{"listen": freePort(t)})
	type result struct {
		code   int
		stderr string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		code, _, stderr, err := run(t, "", "serve", "--config", cfg)
		done <- result{code, stderr, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not end on a refused app token")
	}
	want := "slack: the app token (slack.app_token) was refused: apps.connections.open: invalid_auth"
	if r.code != 1 || r.err == nil || r.err.Error() != want {
		t.Fatalf("serve with a refused app token: exit %d, %v; want exit 1, %q\n%s", r.code, r.err, want, r.stderr)
	}
	if n := len(fake.Calls("apps.connections.open")); n != 1 {
		t.Errorf("a refused app token was tried %d times", n)
	}
}

// TestServeHealthzWhileSocketModeCannotConnect: Slack's own trouble at
// apps.connections.open is retried, /healthz answering 503 meanwhile, and
// 200 once Socket Mode connects.
func TestServeHealthzWhileSocketModeCannotConnect(t *testing.T) {
	oldInterval, oldRetry := healthInterval, healthRetry
	healthInterval, healthRetry = 50*time.Millisecond, 50*time.Millisecond
	t.Cleanup(func() { healthInterval, healthRetry = oldInterval, oldRetry })
	dir := isolate(t)
	fake := slacktest.New(t)
	fake.Refuse(slacktest.AppToken, "internal_error")
	listen := freePort(t)
	serveConfig(t, slackConfigFile(t, fake, dir, "", map[string]any{"listen": listen}))
	base := "http://" + listen
	chatopstest.WaitFor(t, "/healthz 503 while socket mode cannot connect", func() bool {
		code, body := get(base + "/healthz")
		return code == 503 && strings.Contains(body, `"slack":"socket mode not connected"`) && len(fake.Calls("apps.connections.open")) >= 2
	})
	fake.Refuse(slacktest.AppToken, "")
	chatopstest.WaitFor(t, "/healthz 200 once connected", func() bool {
		code, body := get(base + "/healthz")
		return code == 200 && strings.Contains(body, `"slack":"ok"`)
	})
}

// TestDoctorAppTokenAndAgentIDs: doctor fails on a refused app token and on
// an unknown defaults.agent, naming the known ids.
func TestDoctorAppTokenAndAgentIDs(t *testing.T) {
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-doctor-test-key")
	fake := slacktest.New(t)
	slackYAML := "slack: {app_token: " + slacktest.AppToken + ", bot_token: " + slacktest.BotToken + ", api_url: '" + fake.APIURL() + "'}\n"

	cfg := doctorConfig(t, bin, dir, slackYAML)
	code, out, _, _ := run(t, "", "doctor", "--config", cfg)
	if code != 0 || !strings.Contains(out, "ok    slack app token        apps.connections.open: socket mode can connect") {
		t.Fatalf("doctor, tokens accepted: exit %d\n%s", code, out)
	}

	fake.Refuse(slacktest.AppToken, "invalid_auth")
	code, out, _, err := run(t, "", "doctor", "--config", cfg)
	if code != 1 || err == nil || !strings.Contains(out, "FAIL  slack app token        rejected: apps.connections.open: invalid_auth") ||
		!strings.Contains(out, "fix: Check slack.app_token") {
		t.Errorf("doctor, app token refused: exit %d %v\n%s", code, err, out)
	}
	if strings.Contains(out, slacktest.AppToken) {
		t.Errorf("doctor printed the app token:\n%s", out)
	}
	fake.Refuse(slacktest.AppToken, "")

	p := filepath.Join(dir, "claud.yaml")
	body := "database: {url: '" + filepath.Join(dir, "tl.db") + "'}\nhost: {isolation: 'off'}\ndefaults: {agent: claud}\nagents:\n  claude: {bin: '" + bin + "'}\n" + slackYAML
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _, err = run(t, "", "doctor", "--config", p)
	if code != 1 || err == nil || !strings.Contains(out, `FAIL  defaults.agent         unknown agent "claud"; known: `) ||
		!strings.Contains(out, "claude, ") || !strings.Contains(out, "fix: Set defaults.agent to one of the known ids") {
		t.Errorf("doctor, defaults.agent: claud: exit %d %v\n%s", code, err, out)
	}
}
