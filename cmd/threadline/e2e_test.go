package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// TestRunEndToEnd drives `threadline run` through the whole stack (config, store,
// run hub, prompt service, Claude provider) with the REAL Claude Code CLI talking
// to the scripted fake API, inside a loopback-only network namespace.
func TestRunEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	srv := fakeapi.New(t,
		fakeapi.When("TOOL", fakeapi.ToolUse("Bash", map[string]any{
			"command":     "echo from-bash > out.txt && cat out.txt && env | sort",
			"description": "Write and show out.txt",
		})),
		fakeapi.When("SECOND", fakeapi.Text("I remember", " our chat.")),
		fakeapi.Text("Hello", " from", " the fake", " API."),
	)
	// Secrets of the bot that must never reach the agent's environment.
	const secret = "s3cr3t-db-password"
	t.Setenv("DATABASE_URL", "postgres://u:"+secret+"@127.0.0.1/x")
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-"+secret)
	cfgPath := filepath.Join(dir, "threadline.yaml")
	cfg := map[string]any{
		"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
		"host":     map[string]any{"isolation": "off"}, // isolation is TestRunIsolatedEndToEnd's subject
		"agents": map[string]any{"claude": map[string]any{
			"bin": bin,
			"env": srv.ClaudeEnv(filepath.Join(dir, "claude-home")),
		}},
	}
	raw, _ := yaml.Marshal(cfg)
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}

	// 1. Events as JSON lines.
	code, out, errOut, err := run(t, "", "run", "--config", cfgPath, "--cwd", work, "--events", "jsonl", "say hello")
	if code != 0 || err != nil {
		t.Fatalf("run 1: exit %d err %v\nstderr: %s\nstdout: %s", code, err, errOut, out)
	}
	m := regexp.MustCompile(`chat ([0-9a-f-]{36})`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no chat id on stderr: %q", errOut)
	}
	chatID := m[1]
	var (
		types  []string
		text   strings.Builder
		lastSq int64
	)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Type   string `json:"type"`
			Seq    int64  `json:"seq"`
			ChatID string `json:"chat_id"`
			RunID  string `json:"run_id"`
			Text   string `json:"text"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if ev.ChatID != chatID || ev.RunID == "" || ev.Seq <= lastSq {
			t.Errorf("bad envelope %q (last seq %d)", line, lastSq)
		}
		lastSq = ev.Seq
		types = append(types, ev.Type)
		if ev.Type == "assistant.delta" {
			text.WriteString(ev.Text)
		}
	}
	if text.String() != "Hello from the fake API." {
		t.Errorf("streamed text %q", text.String())
	}
	if n := strings.Count(strings.Join(types, " "), "assistant.delta"); n < 2 {
		t.Errorf("text did not stream in several deltas: %v", types)
	}
	for _, want := range []string{"user.message", "run.started", "session.updated", "usage.updated", "run.completed"} {
		if !slices.Contains(types, want) {
			t.Errorf("no %s event in %v", want, types)
		}
	}
	if types[len(types)-1] != "run.completed" {
		t.Errorf("last event %s", types[len(types)-1])
	}

	// 2. A follow-up continues the native session: the API sees the first turn.
	code, out, errOut, err = run(t, "", "run", "--config", cfgPath, "--chat", chatID, "SECOND question")
	if code != 0 || err != nil {
		t.Fatalf("run 2: exit %d err %v\nstderr: %s", code, err, errOut)
	}
	if strings.TrimSpace(out) != "I remember our chat." {
		t.Errorf("text output %q", out)
	}
	reqs := srv.MessageRequests()
	if tr := reqs[len(reqs)-1].Transcript(); !strings.Contains(tr, "say hello") || !strings.Contains(tr, "Hello from the fake API.") {
		t.Errorf("the resumed turn did not carry the earlier conversation:\n%s", tr)
	}

	// 3. A Bash tool round trip, accepted by policy, with a filtered environment.
	code, out, errOut, err = run(t, "", "run", "--config", cfgPath, "--chat", chatID, "--interactions", "accept", "--events", "jsonl", "TOOL please")
	if code != 0 || err != nil {
		t.Fatalf("run 3: exit %d err %v\nstderr: %s\nstdout: %s", code, err, errOut, out)
	}
	if !strings.Contains(out, `"type":"tool.started"`) || !strings.Contains(out, `"type":"tool.completed"`) {
		t.Errorf("no tool events:\n%s", out)
	}
	if !strings.Contains(out, "from-bash") {
		t.Errorf("the tool's output did not come back:\n%s", out)
	}
	if got, err := os.ReadFile(filepath.Join(work, "out.txt")); err != nil || strings.TrimSpace(string(got)) != "from-bash" {
		t.Errorf("the tool did not run in --cwd: %q %v", got, err)
	}
	if strings.Contains(out, secret) {
		t.Errorf("a bot secret reached the agent's environment")
	}

	// 4. The same tool in a one-shot run with the default policy: declined, and
	// the run says what it answered.
	os.Remove(filepath.Join(work, "out.txt"))
	code, out, errOut, err = run(t, "", "run", "--config", cfgPath, "--chat", chatID, "TOOL again")
	if code != 0 || err != nil {
		t.Fatalf("run 4: exit %d err %v\nstderr: %s", code, err, errOut)
	}
	if !strings.Contains(errOut, "threadline: declined `echo from-bash") || !strings.Contains(errOut, "(--interactions deny)") {
		t.Errorf("the run did not say what it answered:\n%s", errOut)
	}
	if !strings.Contains(out, "Tool error:") {
		t.Errorf("the agent did not get a denial:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(work, "out.txt")); err == nil {
		t.Error("a declined command ran")
	}

	// 5. The audit trail names who started each run and who answered what.
	code, out, errOut, err = run(t, "", "audit", "--config", cfgPath, "--chat", chatID)
	if code != 0 || err != nil {
		t.Fatalf("audit: exit %d err %v\nstderr: %s", code, err, errOut)
	}
	for _, want := range []string{"run.started", "cli:", "run.completed", "interaction.approved", "interaction.declined", "policy"} {
		if !strings.Contains(out, want) {
			t.Errorf("audit lacks %q:\n%s", want, out)
		}
	}

	// 6. On a terminal, with no --interactions, the run asks and the user answers.
	os.Remove(filepath.Join(work, "out.txt"))
	tty, master := openPTY(t)
	go func() {
		time.Sleep(500 * time.Millisecond) // the typed line waits in the tty until read
		master.Write([]byte("y\n"))
	}()
	var tout, terr bytes.Buffer
	code, err = mainImpl([]string{"run", "--config", cfgPath, "--chat", chatID, "TOOL on a terminal"}, tty, &tout, &terr)
	if code != 0 || err != nil {
		t.Fatalf("run 6: exit %d err %v\nstderr: %s", code, err, terr.String())
	}
	for _, want := range []string{"? Run this command?", "[y] approve", "threadline: approved `echo from-bash", "(by cli:"} {
		if !strings.Contains(terr.String(), want) {
			t.Errorf("the terminal run lacks %q:\n%s", want, terr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(work, "out.txt")); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
}

// openPTY returns the terminal end of a new pseudo-terminal and its master.
func openPTY(t *testing.T) (tty, master *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, m
}
