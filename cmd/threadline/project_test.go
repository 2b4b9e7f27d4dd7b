package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// projectConfig writes a config with a SQLite database and the lxd section.
func projectConfig(t *testing.T, dir, lxd string) string {
	t.Helper()
	cfg := filepath.Join(dir, "threadline.yaml")
	body := "database:\n  url: sqlite:" + filepath.Join(dir, "t.db") + "\n" + lxd
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestProjectCommands(t *testing.T) {
	dir := isolate(t)
	cfg := projectConfig(t, dir, "lxd:\n  image: bb\n")
	ws := t.TempDir()
	const secret = "sk-cli-secret-value"

	mustRun := func(t *testing.T, stdin string, args ...string) string {
		t.Helper()
		code, out, errs, err := run(t, stdin, append(args, "--config", cfg)...)
		if code != 0 || err != nil {
			t.Fatalf("%v: exit %d, %v\n%s", args, code, err, errs)
		}
		if strings.Contains(out+errs, secret) {
			t.Fatalf("%v printed the secret value", args)
		}
		return out
	}

	out := mustRun(t, "", "project", "add", "web", "--container", "web-c", "--workspace", ws)
	if !strings.Contains(out, "project web added: container web-c (created from bb when missing)") {
		t.Errorf("add: %q", out)
	}
	mustRun(t, "", "project", "add", "api", "--container", "api-c", "--image", "other")
	out = mustRun(t, secret+"\n", "project", "secret", "set", "web", "API_KEY")
	if !strings.Contains(out, "secret API_KEY of project web set (19 bytes)") {
		t.Errorf("secret set: %q", out)
	}
	mustRun(t, "v", "project", "secret", "set", "web", "OTHER")
	if out := mustRun(t, "", "project", "secret", "list", "web"); out != "API_KEY\nOTHER\n" {
		t.Errorf("secret list = %q", out)
	}
	out = mustRun(t, "", "project", "list")
	for _, want := range []string{"NAME", "api", "api-c", "other", "web", "web-c", ws} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	mustRun(t, "", "project", "secret", "unset", "web", "OTHER")
	if out := mustRun(t, "", "project", "secret", "list", "web"); out != "API_KEY\n" {
		t.Errorf("secret list after unset = %q", out)
	}

	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			stdin string
			args  []string
			code  int
			want  string
		}{
			{"", []string{"project", "add", "web", "--container", "x-c"}, 1, "exists already"},
			{"", []string{"project", "add", "new", "--container", "web-c"}, 1, "exists already"},
			{"", []string{"project", "add", "bad name", "--container", "c"}, 2, "invalid name"},
			{"", []string{"project", "add", "p", "--container", "9c"}, 2, "invalid LXD instance name"},
			{"", []string{"project", "add", "p"}, 2, "give --container"},
			{"", []string{"project", "add", "p", "--container", "c", "--image", "-bad"}, 2, "invalid image reference"},
			{"", []string{"project", "add", "p", "--container", "c", "--image", "--profile=x"}, 2, "invalid image reference"},
			{"", []string{"project", "add", "p", "--container", "c", "--image", "deb ian"}, 2, "invalid image reference"},
			{"", []string{"project", "add", "p", "--container", "c", "--image", "a:b:c"}, 2, "invalid image reference"},
			{"", []string{"project", "add", "p", "--container", "c", "--image", "img\n"}, 2, "invalid image reference"},
			{"", []string{"project", "add", "p", "--container", "c", "--workspace", filepath.Join(ws, "nope")}, 1, "is not a directory"},
			{"x", []string{"project", "secret", "set", "web", "SLACK_BOT_TOKEN"}, 2, "reserved for the bot's own credentials"},
			{"x", []string{"project", "secret", "set", "web", "1BAD"}, 2, "invalid name"},
			{"", []string{"project", "secret", "set", "web", "EMPTY"}, 1, "empty value"},
			{"x", []string{"project", "secret", "set", "nope", "K"}, 1, "no project nope"},
			{"", []string{"project", "secret", "unset", "web", "NOPE"}, 1, "has no secret NOPE"},
			{"", []string{"project", "remove", "nope"}, 1, "no project nope"},
			{"", []string{"project", "frobnicate"}, 2, "unknown subcommand"},
		} {
			code, _, _, err := run(t, tc.stdin, append(tc.args, "--config", cfg)...)
			if code != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: exit %d, %v; want exit %d and %q", tc.args, code, err, tc.code, tc.want)
			}
		}
	})

	t.Run("a run in an unknown project fails clearly", func(t *testing.T) {
		code, out, errs, err := run(t, "", "run", "--config", cfg, "--agent", "claude", "--project", "nope", "--events", "jsonl", "hi")
		if code == 0 || err == nil {
			t.Fatalf("run succeeded: %s", out)
		}
		want := "Project nope: project not found (add it with: threadline project add nope --container C)"
		if !strings.Contains(out, want) {
			t.Errorf("events lack %q:\n%s\n%s", want, out, errs)
		}
	})

	t.Run("remove keeps the container by default", func(t *testing.T) {
		out := mustRun(t, "", "project", "remove", "api")
		if !strings.Contains(out, "container api-c is kept") {
			t.Errorf("remove: %q", out)
		}
		if out := mustRun(t, "", "project", "list"); strings.Contains(out, "api-c") {
			t.Errorf("api still listed:\n%s", out)
		}
	})
}

// fakeClaude is a stand-in for the Claude Code CLI inside the busybox
// container: it reads the stream-json prompt and answers with where it runs
// and whether the project secret reached it.
const fakeClaude = `#!/bin/sh
read -r line
sid=in-container-session
tok=missing; [ "$PROJECT_TOKEN" = "sk-in-container-secret" ] && tok=present
grep -q '"host-login"' /root/.claude/.credentials.json && printf '{"token":"refreshed-in-container"}' > /root/.claude/.credentials.json
printf '{"type":"system","subtype":"init","session_id":"%s","model":"fake","cwd":"%s"}\n' "$sid" "$(pwd)"
printf '{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"host=%s cwd=%s token=%s"}},"session_id":"%s"}\n' "$(hostname)" "$(pwd)" "$tok" "$sid"
printf '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"%s"}\n' "$sid"
`

// TestProjectRunInContainer drives `threadline run --project` through the
// whole stack against a real LXD: the first run creates the container and
// fails with the install hint (no claude inside); with a stand-in claude
// pushed, the run executes inside the container, in /workspace, with the
// project secret in its environment.
func TestProjectRunInContainer(t *testing.T) {
	image := lxdImage(t)
	dir := isolate(t)
	cfg := projectConfig(t, dir, "lxd:\n  image: "+image+"\n")
	// The host's Claude login: pushed into the container before a run, and
	// copied back after a completed run that refreshed it.
	claudeDir := filepath.Join(dir, "claude")
	t.Setenv("CLAUDE_CONFIG_DIR", claudeDir)
	creds := filepath.Join(claudeDir, ".credentials.json")
	if err := os.MkdirAll(claudeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(creds, []byte(`{"token":"host-login"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	container := "tl-cmd-" + hex.EncodeToString(b)
	t.Cleanup(func() { _ = exec.Command("lxc", "delete", "--force", container).Run() })

	if code, _, errs, err := run(t, "", "project", "add", "p", "--container", container, "--config", cfg); code != 0 {
		t.Fatalf("add: %d %v %s", code, err, errs)
	}
	if code, _, errs, err := run(t, "sk-in-container-secret", "project", "secret", "set", "p", "PROJECT_TOKEN", "--config", cfg); code != 0 {
		t.Fatalf("secret set: %d %v %s", code, err, errs)
	}

	start := time.Now()
	code, out, _, err := run(t, "", "run", "--config", cfg, "--agent", "claude", "--project", "p", "--events", "jsonl", "hello")
	t.Logf("first run (container created) took %v", time.Since(start).Round(time.Millisecond))
	if code == 0 || err == nil {
		t.Fatalf("first run succeeded without claude in the container: %s", out)
	}
	if strings.Contains(out, "sk-in-container-secret") {
		t.Error("the secret value is in the events")
	}
	var types []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct{ Type, Subtype, Text string }
		_ = json.Unmarshal([]byte(l), &ev)
		if ev.Subtype != "" {
			ev.Type += "/" + ev.Subtype
		}
		types = append(types, ev.Type)
		if ev.Type == "run.failed" && !strings.Contains(ev.Text, "lxc exec "+container+" -- npm install -g @anthropic-ai/claude-code") {
			t.Errorf("failure lacks the install hint: %q", ev.Text)
		}
	}
	if got := strings.Join(types, " "); got != "user.message run.started system/container_starting system/container_preparing run.failed" {
		t.Errorf("events: %s", got)
	}

	push := exec.Command("lxc", "file", "push", "-", container+"/usr/local/bin/claude", "--mode", "0755", "-p")
	push.Stdin = strings.NewReader(fakeClaude)
	if o, err := push.CombinedOutput(); err != nil {
		t.Fatalf("push the stand-in claude: %v %s", err, o)
	}
	start = time.Now()
	code, out, errs, err := run(t, "", "run", "--config", cfg, "--agent", "claude", "--project", "p", "hello")
	t.Logf("second run took %v", time.Since(start).Round(time.Millisecond))
	if code != 0 || err != nil {
		t.Fatalf("run: exit %d, %v\n%s", code, err, errs)
	}
	if want := "host=" + container + " cwd=/workspace token=present"; !strings.Contains(out, want) {
		t.Errorf("answer %q lacks %q", out, want)
	}
	if strings.Contains(out+errs, "sk-in-container-secret") {
		t.Error("the secret value was printed")
	}
	if got, err := os.ReadFile(creds); err != nil || string(got) != `{"token":"refreshed-in-container"}` {
		t.Errorf("host credentials after the run = %q, %v; want the container's refreshed login", got, err)
	}
}

// lxdImage skips (fails under THREADLINE_LXD=1) without a usable LXD and
// returns the test image.
func lxdImage(t *testing.T) string {
	t.Helper()
	unavailable := func(msg string) {
		t.Helper()
		msg += "; run scripts/ci-lxd-setup.sh as root"
		if os.Getenv("THREADLINE_LXD") == "1" {
			t.Fatal(msg + " (THREADLINE_LXD=1 requires LXD)")
		}
		t.Skip(msg + " (set THREADLINE_LXD=1 to make this a failure)")
	}
	if _, err := exec.LookPath("lxc"); err != nil {
		unavailable("the lxc client is not installed")
	}
	image := os.Getenv("THREADLINE_LXD_IMAGE")
	if image == "" {
		image = "threadline-busybox"
	}
	if o, err := exec.Command("lxc", "image", "info", image).CombinedOutput(); err != nil {
		unavailable("LXD or its image " + image + " is unavailable: " + strings.TrimSpace(string(o)))
	}
	return image
}
