// Tests of doctor: its exit status on every problem it reports, the sign-in
// of the default agent, LXD only when projects need it, and "unreachable"
// told from "rejected" for Slack and Matrix.

package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/bot/matrix/dendritetest"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/store"
)

// doctorConfig writes a config with the real Claude CLI (bin) as the only agent
// and a SQLite database in dir, plus extra YAML.
func doctorConfig(t *testing.T, bin, dir, extra string) string {
	t.Helper()
	p := filepath.Join(dir, "doctor.yaml")
	body := "database: {url: '" + filepath.Join(dir, "tl.db") + "'}\nhost: {isolation: 'off'}\ndefaults: {agent: claude}\nagents:\n  claude: {bin: '" + bin + "'}\n" + extra
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// closedURL is an http URL on a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestDoctorFailsWhenTheDefaultAgentCannotSignIn(t *testing.T) {
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	noClaudeLogin(t, dir)
	cfg := doctorConfig(t, bin, dir, "")
	code, out, _, err := run(t, "", "doctor", "--config", cfg)
	if code != 1 || err == nil {
		t.Fatalf("doctor with no sign-in: exit %d err %v\n%s", code, err, out)
	}
	for _, want := range []string{"FAIL  agent claude", "the default agent, cannot sign in: no ANTHROPIC_API_KEY", "fix: export ANTHROPIC_API_KEY=…", "run `claude /login` as"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	// An exported key signs it in: nothing else is wrong, so doctor exits 0.
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-doctor-test-key")
	code, out, _, err = run(t, "", "doctor", "--config", cfg)
	if code != 0 || err != nil {
		t.Fatalf("doctor with a key: exit %d err %v\n%s", code, err, out)
	}
	if !strings.Contains(out, "ok    agent claude") || !strings.Contains(out, "auth ok") || strings.Contains(out, "sk-ant-doctor-test-key") {
		t.Errorf("doctor with a key:\n%s", out)
	}
}

func TestDoctorExitsNonZeroOnAWarning(t *testing.T) {
	dir := isolate(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-doctor-test-key")
	// A version outside the verified ones is a warning: still a problem.
	script := filepath.Join(dir, "claude")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho '0.0.1 (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "warn.yaml")
	body := "database: {url: '" + filepath.Join(dir, "tl.db") + "'}\nhost: {isolation: 'off'}\nagents:\n  claude: {bin: '" + script + "'}\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _, err := run(t, "", "doctor", "--config", p)
	if !strings.Contains(out, "warn  agent claude") {
		t.Fatalf("no warning for an unverified version:\n%s", out)
	}
	if code != 1 || err == nil {
		t.Errorf("doctor reported a warning and exited %d (%v)\n%s", code, err, out)
	}
}

func TestDoctorChecksLXDOnlyForProjects(t *testing.T) {
	claudeBin := fakeapi.FindClaude(t)
	dir := isolate(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-doctor-test-key")
	// An lxc on PATH that cannot reach any LXD.
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "lxc"), []byte("#!/bin/sh\necho 'Error: LXD unix socket not accessible' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cfg := doctorConfig(t, claudeBin, dir, "")
	code, out, _, err := run(t, "", "doctor", "--config", cfg)
	if code != 0 || err != nil || !strings.Contains(out, "ok    lxd") || !strings.Contains(out, "not needed: no projects") {
		t.Fatalf("no projects, lxc on PATH: exit %d err %v\n%s", code, err, out)
	}
	// A project in the database needs LXD.
	ctx := context.Background()
	st, err := store.OpenAndMigrate(ctx, filepath.Join(dir, "tl.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateProject(ctx, &store.Project{Name: "web", Container: "tl-web"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	code, out, _, _ = run(t, "", "doctor", "--config", cfg)
	if code != 1 || !strings.Contains(out, "FAIL  lxd") || !strings.Contains(out, "needed (1 project(s) with a container)") {
		t.Errorf("a project, LXD down: exit %d\n%s", code, out)
	}
	// So does a channel bound to a project, with no project stored yet.
	cfg2 := doctorConfig(t, claudeBin, t.TempDir(), "slack: {app_token: "+slacktest.AppToken+", bot_token: "+slacktest.BotToken+
		", api_url: '"+slacktest.New(t).APIURL()+"', channels: {C1: {project: web}}}\n")
	if _, out, _, _ := run(t, "", "doctor", "--config", cfg2); !strings.Contains(out, "FAIL  lxd") || !strings.Contains(out, "bound to project web") {
		t.Errorf("a channel bound to a project, LXD down:\n%s", out)
	}
}

func TestDoctorSlackUnreachableOrRejected(t *testing.T) {
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-doctor-test-key")
	fake := slacktest.New(t)
	for _, tc := range []struct {
		name, token, url, want string
		code                   int
	}{
		{"ok", slacktest.BotToken, fake.APIURL(), "ok    slack ", 0},
		{"rejected", "xoxb-revoked-token", fake.APIURL(), "FAIL  slack                  rejected: auth.test: invalid_auth", 1},
		{"unreachable", slacktest.BotToken, closedURL(t) + "/api/", "FAIL  slack                  unreachable: auth.test at http://127.0.0.1:", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := doctorConfig(t, bin, dir, "slack: {app_token: "+slacktest.AppToken+", bot_token: "+tc.token+", api_url: '"+tc.url+"'}\n")
			code, out, _, _ := run(t, "", "doctor", "--config", cfg)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d (want %d), want %q in:\n%s", code, tc.code, tc.want, out)
			}
			if tc.name == "unreachable" && (strings.Contains(out, "slack.bot_token") || !strings.Contains(out, "the token was not checked")) {
				t.Errorf("an unreachable Slack blamed the token:\n%s", out)
			}
			if strings.Contains(out, "xoxb-revoked-token") {
				t.Errorf("doctor printed the token:\n%s", out)
			}
		})
	}
}

func TestDoctorMatrixUnreachableOrRejected(t *testing.T) {
	bin := fakeapi.FindClaude(t)
	hs := dendritetest.Start(t, dendritetest.Options{RateLimit: &dendritetest.RateLimit{Disabled: true}})
	dir := isolate(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-doctor-test-key")
	u := hs.Register(t, "doctor")
	cli := hs.Login(t, u, id.DeviceID("DOCTOR"))
	for _, tc := range []struct {
		name, hs, token, want string
		code                  int
	}{
		{"ok", hs.URL, cli.AccessToken, "ok    matrix ", 0},
		{"rejected", hs.URL, "syt_not_a_valid_token_at_all", "FAIL  matrix                 rejected: whoami: M_UNKNOWN_TOKEN", 1},
		{"unreachable", closedURL(t), cli.AccessToken, "FAIL  matrix                 unreachable: http://127.0.0.1:", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := doctorConfig(t, bin, dir, "matrix: {homeserver: '"+tc.hs+"', user_id: '"+string(u.ID)+"', access_token: "+tc.token+"}\n")
			code, out, _, _ := run(t, "", "doctor", "--config", cfg)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d (want %d), want %q in:\n%s", code, tc.code, tc.want, out)
			}
			if tc.name == "unreachable" && strings.Contains(out, "matrix.access_token") {
				t.Errorf("an unreachable homeserver blamed the token:\n%s", out)
			}
			if strings.Contains(out, cli.AccessToken) || strings.Contains(out, "syt_not_a_valid_token_at_all") {
				t.Errorf("doctor printed the token:\n%s", out)
			}
		})
	}
}

// TestDoctorChecksProjectRepositories: a project that owns a repository and
// has no container runs on this host (no LXD needed); doctor checks its
// clone again as project add did: the base branch checked out in the main
// clone (merge could not land) and a missing clone each fail with the fix.
func TestDoctorChecksProjectRepositories(t *testing.T) {
	claudeBin := fakeapi.FindClaude(t)
	dir := isolate(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-doctor-test-key")
	src := filepath.Join(dir, "src")
	gitIn := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=T", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(src, "init", "-q", "-b", "trunk")
	if err := os.WriteFile(filepath.Join(src, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(src, "add", ".")
	gitIn(src, "commit", "-q", "-m", "first")
	cfg := doctorConfig(t, claudeBin, dir, "")
	if code, out, errOut, err := run(t, "", "project", "add", "web", "--repo", src, "--config", cfg); code != 0 || err != nil {
		t.Fatalf("project add: %d %v\n%s%s", code, err, out, errOut)
	}
	code, out, _, err := run(t, "", "doctor", "--config", cfg)
	if code != 0 || err != nil || !strings.Contains(out, "ok    project web") || !strings.Contains(out, "base trunk") || !strings.Contains(out, "not needed") {
		t.Fatalf("a host project with its clone: exit %d %v\n%s", code, err, out)
	}
	clone := filepath.Join(dir, "data", "threadline", "workspaces", "web", "main")
	gitIn(clone, "checkout", "-q", "trunk")
	code, out, _, _ = run(t, "", "doctor", "--config", cfg)
	if code != 1 || !strings.Contains(out, "FAIL  project web") || !strings.Contains(out, "checked out") || !strings.Contains(out, "git switch --detach") {
		t.Errorf("the base checked out in the clone: exit %d\n%s", code, out)
	}
	if err := os.RemoveAll(clone); err != nil {
		t.Fatal(err)
	}
	code, out, _, _ = run(t, "", "doctor", "--config", cfg)
	if code != 1 || !strings.Contains(out, "FAIL  project web") || !strings.Contains(out, clone) {
		t.Errorf("the clone removed: exit %d\n%s", code, out)
	}
}
