package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/acp"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
	"github.com/threadline-bot/threadline/store"
)

// TestRunForkEndToEnd: `threadline run --chat ID --fork` with the REAL qwen
// CLI (ACP, which declares no native fork) against the scripted model server,
// in a loopback-only network namespace. The fork starts a session of its own
// and its first request carries the parent's visible transcript, so the agent
// answers from the parent's conversation; the parent's session and events are
// unchanged, and the parent's next run resumes its own session.
func TestRunForkEndToEnd(t *testing.T) {
	bin := providertest.FindCLI(t, "qwen", "THREADLINE_QWEN_BIN")
	if !providertest.InNetns(t) {
		return
	}
	dir := isolate(t)
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	fake := fakeopenai.New(t,
		fakeopenai.When("e2e-recall", fakeopenai.Text("The word ", "was alpha.")),
		fakeopenai.When("e2e-remember", fakeopenai.Text("Noted: ", "the word is ", "alpha.")),
		fakeopenai.When("e2e-parent-again", fakeopenai.Text("Parent ", "here.")),
	)
	env, err := acp.Qwen().Configure(filepath.Join(dir, "qwen-home"), acp.Endpoint{
		OpenAIBaseURL: fake.URL() + "/v1", APIKey: "sk-fake", Model: fakeopenai.DefaultModel,
	})
	if err != nil {
		t.Fatal(err)
	}
	env["HTTP_PROXY"], env["HTTPS_PROXY"] = "http://127.0.0.1:9", "http://127.0.0.1:9"
	dbPath := filepath.Join(dir, "tl.db")
	raw, _ := yaml.Marshal(map[string]any{
		"database": map[string]any{"url": dbPath},
		"host":     map[string]any{"isolation": "off"},
		"agents":   map[string]any{"qwen": map[string]any{"bin": bin, "env": env}},
	})
	cfgPath := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	chatOf := func(stderr string) string {
		t.Helper()
		m := regexp.MustCompile(`chat ([0-9a-f-]{36}) \(continue`).FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("no chat id on stderr: %q", stderr)
		}
		return m[1]
	}
	code, out, errOut, err := run(t, "", "run", "--config", cfgPath, "--agent", "qwen", "--cwd", work, "e2e-remember the word alpha")
	if code != 0 || err != nil || strings.TrimSpace(out) != "Noted: the word is alpha." {
		t.Fatalf("parent run: exit %d err %v out %q\nstderr: %s", code, err, out, errOut)
	}
	parentID := chatOf(errOut)
	st, err := store.Open(context.Background(), dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	parent, err := st.GetChat(t.Context(), parentID)
	if err != nil || parent.Sessions["qwen"] == "" {
		t.Fatalf("parent chat %+v %v: no qwen session", parent, err)
	}
	parentSeq, _ := st.LastSeq(t.Context(), agent.ChatID(parentID))

	if code, _, _, err := run(t, "", "run", "--config", cfgPath, "--fork", "e2e-recall"); code != 2 || err == nil || !strings.Contains(err.Error(), "--fork needs --chat") {
		t.Fatalf("--fork without --chat: exit %d, %v", code, err)
	}
	code, out, errOut, err = run(t, "", "run", "--config", cfgPath, "--chat", parentID, "--fork", "e2e-recall the word")
	if code != 0 || err != nil {
		t.Fatalf("fork run: exit %d err %v\nstderr: %s", code, err, errOut)
	}
	if strings.TrimSpace(out) != "The word was alpha." {
		t.Errorf("fork answer %q", out)
	}
	forkID := chatOf(errOut)
	if forkID == parentID || !strings.Contains(errOut, "forked chat "+parentID+" into "+forkID) {
		t.Fatalf("the fork ran in %s (parent %s):\n%s", forkID, parentID, errOut)
	}
	// The model saw the parent's conversation in the fork's first request.
	var recall *fakeopenai.Request
	for _, r := range fake.ChatRequests() {
		if strings.Contains(r.LastUserText(), "e2e-recall the word") {
			recall = &r
		}
	}
	if recall == nil {
		t.Fatalf("no request for the fork's prompt; saw %d", len(fake.ChatRequests()))
	}
	if tr := recall.Transcript(); !strings.Contains(tr, "e2e-remember the word alpha") || !strings.Contains(tr, "Noted: the word is alpha.") ||
		!strings.Contains(tr, "<history>") {
		t.Errorf("the fork's request lacks the parent's transcript:\n%s", tr)
	}
	fork, err := st.GetChat(t.Context(), forkID)
	if err != nil || fork.ForkedFrom != parentID || fork.Sessions["qwen"] == "" || fork.Sessions["qwen"] == parent.Sessions["qwen"] || fork.Cwd != work {
		t.Fatalf("fork chat %+v %v (parent session %s)", fork, err, parent.Sessions["qwen"])
	}
	after, _ := st.GetChat(t.Context(), parentID)
	if after.Sessions["qwen"] != parent.Sessions["qwen"] {
		t.Errorf("the parent's session changed: %s, was %s", after.Sessions["qwen"], parent.Sessions["qwen"])
	}
	if seq, _ := st.LastSeq(t.Context(), agent.ChatID(parentID)); seq != parentSeq {
		t.Errorf("the parent has events up to %d, had %d", seq, parentSeq)
	}

	// The parent goes on in its own session: its request has its own turn,
	// not the fork's.
	code, out, errOut, err = run(t, "", "run", "--config", cfgPath, "--chat", parentID, "e2e-parent-again")
	if code != 0 || err != nil || strings.TrimSpace(out) != "Parent here." {
		t.Fatalf("parent run 2: exit %d err %v out %q\nstderr: %s", code, err, out, errOut)
	}
	reqs := fake.ChatRequests()
	last := reqs[len(reqs)-1]
	if tr := last.Transcript(); !strings.Contains(tr, "Noted: the word is alpha.") || strings.Contains(tr, "e2e-recall") || strings.Contains(tr, "<history>") {
		t.Errorf("the parent's next turn:\n%s", tr)
	}
}
