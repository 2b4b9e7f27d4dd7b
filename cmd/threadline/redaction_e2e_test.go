package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	_ "modernc.org/sqlite"

	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// plantedSecret is configured as an agent env value; the model streams it
// split over two text deltas.
const plantedSecret = "sk-planted-Q7x9Vv2LmN4pR8tZ"

// leakScript streams the secret cut in two deltas, with text around it, a
// while apart: more than the front-end's 1 call/s, so the halves would go out
// in separate Slack calls if nothing held the first back.
func leakScript() fakeapi.Script {
	half := len(plantedSecret) / 2
	return fakeapi.When("LEAK", func(*fakeapi.Request) *fakeapi.Reply {
		r := fakeapi.TextReply("The key is ", plantedSecret[:half], plantedSecret[half:]+" and", " that is all.")
		r.Delay = 1500 * time.Millisecond
		return r
	})
}

// leakParts are what must appear nowhere: the secret and its two halves.
func leakParts() []string {
	half := len(plantedSecret) / 2
	return []string{plantedSecret, plantedSecret[:half], plantedSecret[half:]}
}

const leakMasked = "The key is " + redact.Mask + " and that is all."

// dumpSQLite returns every column of every row of every table of the file.
func dumpSQLite(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	var b strings.Builder
	for _, tb := range tables {
		r, err := db.Query(`SELECT * FROM "` + tb + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := r.Columns()
		for r.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := r.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, "%s.%s=%v\n", tb, cols[i], v)
			}
		}
		r.Close()
	}
	return b.String()
}

// TestRedactionEndToEnd: the REAL Claude Code CLI (against the scripted API
// fake, in a loopback-only network namespace) streams a configured secret (an
// agents.claude.env value) split over two text deltas. Through `threadline
// serve` with the fake Slack in native streaming mode, the secret reaches no
// Slack call, no database row and no log line, and the streamed answer reads
// as the original with the secret masked, nothing dropped; `threadline run
// --events jsonl` of the same script prints no part of it either.
func TestRedactionEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	api := fakeapi.New(t, leakScript(), fakeapi.Text("fine"))
	env := api.ClaudeEnv(filepath.Join(dir, "claude-home"))
	env["PLANTED_SERVICE_KEY"] = plantedSecret
	fake := slacktest.New(t)
	dbPath := filepath.Join(dir, "tl.db")
	cfg := map[string]any{
		"database": map[string]any{"url": dbPath},
		"http":     map[string]any{"listen": freePort(t)},
		"workdir":  filepath.Join(dir, "work"),
		"agents":   map[string]any{"claude": map[string]any{"bin": bin, "env": env}},
		"slack": map[string]any{
			"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL(),
			"channels": map[string]any{"C1": map[string]any{"agent": "claude", "allow": []string{"UDEV"}}},
		},
	}
	raw, _ := yaml.Marshal(cfg)
	cfgPath := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("THREADLINE_LOG", "debug") // every log line the bot can write

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs lockedBuffer
	done := make(chan error, 1)
	go func() { done <- cmdServe(ctx, []string{"--config", cfgPath}, io.Discard, &logs) }()
	if err := fake.WaitConnected(10 * time.Second); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	root := fake.PostUserMessage("C1", "", "LEAK please")
	env0, err := fake.Envelope("events_api", map[string]any{"type": "event_callback", "team_id": slacktest.TeamID,
		"api_app_id": slacktest.AppID, "event_id": "Ev1", "event_time": time.Now().Unix(), "event": map[string]any{
			"type": "app_mention", "user": "UDEV", "channel": "C1", "ts": root, "event_ts": root,
			"text": "<@" + slacktest.BotUserID + "> LEAK please"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fake.WaitAck(env0, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	var answer slacktest.Message
	chatopstest.WaitFor(t, "the final answer", func() bool {
		for _, m := range fake.Thread("C1", root) {
			if strings.Contains(string(m.Blocks), "Done in") {
				answer = m
				return true
			}
		}
		return false
	})
	if len(fake.Calls("chat.startStream")) == 0 || len(fake.Calls("chat.stopStream")) == 0 {
		t.Fatalf("the answer was not streamed natively: %d startStream, %d stopStream", len(fake.Calls("chat.startStream")), len(fake.Calls("chat.stopStream")))
	}
	// Nothing dropped: the streamed text is the answer with the secret masked.
	if !strings.Contains(answer.Markdown, leakMasked) {
		t.Errorf("streamed answer %q, want it to hold %q", answer.Markdown, leakMasked)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop\n%s", logs.String())
	}

	var calls strings.Builder
	for _, c := range fake.Calls("") {
		fmt.Fprintf(&calls, "%s %v\n", c.Method, c.Form)
	}
	for _, m := range fake.Messages() {
		fmt.Fprintf(&calls, "%s %s %s %s %q\n", m.TS, m.Text, m.Markdown, m.Blocks, m.Versions)
	}
	db := dumpSQLite(t, dbPath)
	if !strings.Contains(db, "[redacted]") {
		t.Errorf("the database holds no masked text: the run did not see the secret?\n%s", db)
	}
	for _, part := range leakParts() {
		if strings.Contains(calls.String(), part) {
			t.Errorf("Slack got %q:\n%s", part, calls.String())
		}
		if strings.Contains(db, part) {
			t.Errorf("the database holds %q:\n%s", part, db)
		}
		if strings.Contains(logs.String(), part) {
			t.Errorf("the log holds %q:\n%s", part, logs.String())
		}
	}

	// The same script through `threadline run --events jsonl`.
	code, out, errOut, err := run(t, "", "run", "--config", cfgPath, "--cwd", filepath.Join(dir, "work"), "--events", "jsonl", "LEAK again")
	if code != 0 || err != nil {
		t.Fatalf("run: exit %d err %v\nstderr: %s\nstdout: %s", code, err, errOut, out)
	}
	if !strings.Contains(out, redact.Mask) {
		t.Errorf("run printed no masked text:\n%s", out)
	}
	var text strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(line, `"type":"assistant.delta"`) {
			var ev struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("line %s: %v", line, err)
			}
			text.WriteString(ev.Text)
		}
	}
	if text.String() != leakMasked {
		t.Errorf("streamed text %q, want %q", text.String(), leakMasked)
	}
	for _, part := range leakParts() {
		if strings.Contains(out+errOut, part) {
			t.Errorf("run printed %q:\n%s\n%s", part, out, errOut)
		}
	}
	if db := dumpSQLite(t, dbPath); strings.Contains(db, plantedSecret[:len(plantedSecret)/2]) {
		t.Errorf("the database holds the secret after run:\n%s", db)
	}
}
