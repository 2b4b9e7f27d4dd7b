package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/lifecycle"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
)

// TestRunKilledMidTurnFreesItsChat: `threadline run` (this test binary as
// the threadline binary, with the scripted streaming Claude as its agent) is
// killed with SIGKILL mid-turn. The next `run --chat ID` starts at once (its
// user.message is persisted well before the 45 s heartbeat rule could free
// the chat) and completes, and the chat shows the killed run interrupted with
// the usual message.
func TestRunKilledMidTurnFreesItsChat(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := isolate(t)
	t.Setenv("THREADLINE_RELAY_DIR", filepath.Join(dir, "relays"))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "tl.db")
	raw, _ := yaml.Marshal(map[string]any{
		"database": map[string]any{"url": db},
		"host":     map[string]any{"isolation": "off"},
		"agents":   map[string]any{"claude": map[string]any{"bin": exe, "env": map[string]string{testRoleEnv: "fakeclaude"}}},
	})
	cfgPath := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	// start runs `threadline run --events jsonl ARGS...` and returns it with
	// its stdout's lines (closed at EOF) and its stderr.
	start := func(args ...string) (*exec.Cmd, <-chan string, *syncBuffer) {
		cmd := exec.Command(exe, append([]string{"run", "--config", cfgPath, "--events", "jsonl"}, args...)...)
		cmd.Env = append(os.Environ(), testRoleEnv+"=cli")
		errOut := &syncBuffer{}
		cmd.Stderr = errOut
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		return cmd, lines, errOut
	}
	// waitFor reads lines until one has the event type typ, returning it.
	waitFor := func(lines <-chan string, typ string, errOut *syncBuffer) map[string]any {
		deadline := time.After(60 * time.Second)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("output ended before a %s event; stderr:\n%s", typ, errOut)
				}
				var ev map[string]any
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatalf("not JSON: %q", line)
				}
				if ev["type"] == typ {
					return ev
				}
			case <-deadline:
				t.Fatalf("no %s event; stderr:\n%s", typ, errOut)
			}
		}
	}

	first, lines, errOut := start("--cwd", dir, "stream")
	t.Cleanup(func() { _ = first.Process.Kill() })
	ev := waitFor(lines, string(agent.EventAssistantDelta), errOut) // mid-turn
	chatID, _ := ev["chat_id"].(string)
	killedRun, _ := ev["run_id"].(string)
	if m := regexp.MustCompile(`chat ([0-9a-f-]{36})`).FindStringSubmatch(errOut.String()); m == nil || m[1] != chatID {
		t.Fatalf("chat %q, stderr: %q", chatID, errOut)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	for range lines { // drain
	}

	began := time.Now()
	second, lines2, errOut2 := start("--chat", chatID, "stream again")
	t.Cleanup(func() { _ = second.Process.Kill() })
	waitFor(lines2, "user.message", errOut2)
	wait := time.Since(began)
	t.Logf("the next run of the chat started %s after the SIGKILL (process start included)", wait)
	if wait >= lifecycle.DefaultStaleAfter-lifecycle.DefaultHeartbeatEvery {
		t.Errorf("the next run waited %s, as long as the heartbeat rule", wait)
	}
	waitFor(lines2, string(agent.EventRunCompleted), errOut2)
	if err := second.Wait(); err != nil {
		t.Fatalf("second run: %v\nstderr:\n%s", err, errOut2)
	}

	st, err := store.OpenAndMigrate(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := st.GetRun(context.Background(), killedRun)
	if err != nil || r.Status != runhub.StatusInterrupted {
		t.Fatalf("killed run: %+v %v", r, err)
	}
	evs, err := st.EventsAfter(context.Background(), agent.ChatID(chatID), 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var note string
	for _, ev := range evs {
		if ev.RunID == agent.RunID(killedRun) && ev.Type == string(agent.EventRunInterrupted) {
			var e agent.Event
			_ = json.Unmarshal(ev.Payload, &e)
			note = e.Text
		}
	}
	if note != lifecycle.InterruptedByStop {
		t.Errorf("the chat does not show the killed run interrupted (note %q)", note)
	}
	if !strings.Contains(errOut2.String(), "threadline: chat "+chatID) {
		t.Errorf("second run's stderr: %s", errOut2)
	}
}
