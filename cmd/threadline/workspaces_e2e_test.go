package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/agentcore/forge/giteatest"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// TestWorkspacesEndToEnd: `threadline serve` with the Slack fake, the real
// Claude CLI (sandboxed, as the agent user) and a real Gitea. A project
// owns the Gitea repository (project add --repo, cloned at once). Two
// threads change the same file at the same time: each branch holds only its
// own change and the main clone is untouched; each answer's footer names
// its branch and change and offers View diff / Push / Open PR. diff uploads
// the branch's diff; a planted AWS key blocks the push, naming the file;
// once removed, push publishes the branch on Gitea, pr opens one PR and a
// second pr updates it; merge lands thread A on main, and thread B's merge
// conflicts: nothing lands and the agent gets the conflict as its next
// turn. A fork starts from its parent's head. After serve restarts, thread
// A goes on in the same clone.
func TestWorkspacesEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	agentUser(t)
	bin := fakeapi.FindClaude(t)
	gitea := giteatest.Start(t)
	cloneURL := gitea.CreateRepo(t, "web")
	u, _ := url.Parse(cloneURL)
	u.User = nil
	repoURL := u.String()
	dir := isolate(t)

	api := fakeapi.New(t,
		// A prompt may carry earlier turns (a fork without its parent's
		// session): the latest marker's script comes first.
		fakeapi.When("FORKED", bash("echo gamma >> README.md")),
		fakeapi.When("EDIT-A", bash("echo alpha >> README.md")),
		fakeapi.When("EDIT-B", bash("echo beta >> README.md")),
		fakeapi.When("UNPLANT", bash("rm creds.txt")),
		fakeapi.When("PLANT", bash("echo 'aws_access_key_id=AKIAZ7QWERTYUIOP2345' > creds.txt")),
		fakeapi.Text("Done with it."),
	)
	claudeHome := filepath.Join(dir, "claude")
	claudeEnv := api.ClaudeEnv(claudeHome)
	chownTree(t, claudeHome, agentUser(t))
	cfg := map[string]any{
		"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
		"http":     map[string]any{"listen": freePort(t)},
		"agents":   map[string]any{"claude": map[string]any{"bin": bin, "env": claudeEnv}},
		"slack": map[string]any{
			"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken,
			"channels": map[string]any{"C1": map[string]any{"agent": "claude", "project": "web", "allow": []string{"UDEV"}, "approvers": []string{"UDEV"}}},
		},
	}
	fake := slacktest.New(t)
	cfg["slack"].(map[string]any)["api_url"] = fake.APIURL()
	raw, _ := yaml.Marshal(cfg)
	cfgPath := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	// The project: its repository cloned at once, its forge and token.
	if code, out, errOut, err := run(t, "", "project", "add", "web", "--repo", repoURL, "--forge", "gitea", "--forge-url", gitea.URL,
		"--channels", "C1", "--config", cfgPath); code != 0 || err != nil || !strings.Contains(out, "cloned into") {
		t.Fatalf("project add: %d %v\n%s\n%s", code, err, out, errOut)
	}
	if code, _, errOut, err := run(t, gitea.Token+"\n", "project", "secret", "set", "web", "FORGE_TOKEN", "--config", cfgPath); code != 0 || err != nil {
		t.Fatalf("project secret set: %d %v\n%s", code, err, errOut)
	}
	main := filepath.Join(dir, "data", "threadline", "workspaces", "web", "main")
	readme, err := os.ReadFile(filepath.Join(main, "README.md"))
	if err != nil {
		t.Fatalf("no main clone: %v", err)
	}

	s := startServe(t, fake, cfgPath)
	defer s.stop()
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range fake.Messages() {
				t.Logf("slack %s/%s: %s %s", m.ThreadTS, m.TS, m.Text, m.Markdown)
			}
		}
	})

	// Two threads change the same file at the same time.
	rootA, rootB := fake.PostUserMessage("C1", "", "EDIT-A"), fake.PostUserMessage("C1", "", "EDIT-B")
	s.mention("EvA1", rootA, "", "EDIT-A add alpha")
	s.mention("EvB1", rootB, "", "EDIT-B add beta")
	s.approve(rootA, "echo alpha")
	s.approve(rootB, "echo beta")
	a1, b1 := s.answer(rootA, 1), s.answer(rootB, 1)
	for _, m := range []slacktest.Message{a1, b1} {
		blocks := string(m.Blocks)
		if !strings.Contains(blocks, "1 file changed, +1 \u22120 · threadline/") || !strings.Contains(blocks, "tl_ws_diff") || !strings.Contains(blocks, "tl_ws_pr") {
			t.Errorf("an answer's footer lacks the change, branch and actions: %s", blocks)
		}
	}
	clones := chatClones(dir, "README.md")
	if len(clones) != 2 {
		t.Fatalf("clones %v", clones)
	}
	var lines []string
	for _, c := range clones {
		b, _ := os.ReadFile(c)
		lines = append(lines, strings.TrimPrefix(string(b), string(readme)))
	}
	if got := strings.Join(lines, "|"); got != "alpha\n|beta\n" && got != "beta\n|alpha\n" {
		t.Errorf("the clones hold %q; each should hold its own line only", got)
	}
	if st := gitOut(t, main, "status", "--porcelain"); st != "" {
		t.Errorf("the main clone changed: %s", st)
	}
	if b, _ := os.ReadFile(filepath.Join(main, "README.md")); string(b) != string(readme) {
		t.Errorf("the main clone's README changed: %q", b)
	}

	// diff uploads the branch's diff.
	s.mention("EvA2", fake.PostUserMessage("C1", rootA, "diff"), rootA, "diff")
	chatopstest.WaitFor(t, "the diff file", func() bool {
		for _, f := range fake.Files() {
			if f.ThreadTS == rootA && strings.HasSuffix(f.Name, ".diff") && strings.Contains(string(f.Content), "+alpha") {
				return true
			}
		}
		return false
	})

	// A planted key blocks the push.
	s.mention("EvA3", fake.PostUserMessage("C1", rootA, "PLANT"), rootA, "PLANT a key")
	s.approve(rootA, "creds.txt")
	s.answer(rootA, 2)
	s.mention("EvA4", fake.PostUserMessage("C1", rootA, "push"), rootA, "push")
	s.notice(rootA, "nothing was pushed", "creds.txt")
	if branches := giteaBranches(t, gitea); len(branches) != 1 {
		t.Fatalf("the refused push reached Gitea: %v", branches)
	}
	s.mention("EvA5", fake.PostUserMessage("C1", rootA, "UNPLANT"), rootA, "UNPLANT it")
	s.approve(rootA, "rm creds.txt")
	s.answer(rootA, 3)
	s.mention("EvA6", fake.PostUserMessage("C1", rootA, "push"), rootA, "push")
	s.notice(rootA, "Pushed `threadline/")
	if branches := giteaBranches(t, gitea); len(branches) != 2 {
		t.Fatalf("Gitea's branches after the push: %v", branches)
	}
	// pr opens one PR; pr again updates it.
	s.mention("EvA7", fake.PostUserMessage("C1", rootA, "pr"), rootA, "pr")
	s.notice(rootA, "Opened pull request #1")
	s.mention("EvA8", fake.PostUserMessage("C1", rootA, "pr Alpha for the readme"), rootA, "pr Alpha for the readme")
	s.notice(rootA, "Updated pull request #1")
	if prs := giteaPRs(t, gitea); len(prs) != 1 || prs[0] != "Alpha for the readme" {
		t.Fatalf("Gitea's open PRs: %v", prs)
	}

	// merge: A lands on main; B conflicts, lands nothing, goes to the agent.
	s.mention("EvA9", fake.PostUserMessage("C1", rootA, "merge"), rootA, "merge")
	s.notice(rootA, "Merged 1 commit(s) into main")
	if got := giteaFile(t, gitea, "main", "README.md"); !strings.HasSuffix(got, "alpha\n") {
		t.Errorf("main's README on Gitea: %q", got)
	}
	before := giteaFile(t, gitea, "main", "README.md")
	s.mention("EvB2", fake.PostUserMessage("C1", rootB, "merge"), rootB, "merge")
	s.notice(rootB, "Merging conflicts in README.md")
	chatopstest.WaitFor(t, "the conflict turn", func() bool {
		for _, r := range api.MessageRequests() {
			if strings.Contains(r.Prompt(), "conflicts in: README.md") {
				return true
			}
		}
		return false
	})
	if got := giteaFile(t, gitea, "main", "README.md"); got != before {
		t.Errorf("the conflicting merge landed: %q", got)
	}

	// A fork starts from its parent's head.
	s.mention("EvA10", fake.PostUserMessage("C1", rootA, "fork"), rootA, "fork")
	var forkRoot string
	chatopstest.WaitFor(t, "the fork's thread", func() bool {
		for _, m := range fake.Messages() {
			if m.ThreadTS == "" && m.TS != rootA && m.TS != rootB && strings.Contains(string(m.Blocks)+m.Text, "Fork of the chat") {
				forkRoot = m.TS
				return true
			}
		}
		return false
	})
	s.mention("EvF1", fake.PostUserMessage("C1", forkRoot, "FORKED"), forkRoot, "FORKED add gamma")
	s.approve(forkRoot, "echo gamma")
	s.answer(forkRoot, 1)
	forked := chatClones(dir, "README.md")
	found := false
	for _, c := range forked {
		if b, _ := os.ReadFile(c); strings.HasSuffix(string(b), "alpha\ngamma\n") {
			found = true
		}
	}
	if !found {
		t.Errorf("no clone holds the parent's alpha then gamma: %v", forked)
	}

	// kill -9 of serve in the middle of thread A's turn (its approval card
	// open), then a restart: the clones are kept, the run is reattached in
	// A's clone and its edit lands there.
	pathsBefore := chatClones(dir, "")
	var candidates []string
	for _, c := range chatClones(dir, "README.md") {
		if b, _ := os.ReadFile(c); strings.Contains(string(b), "alpha") && !strings.Contains(string(b), "gamma") && !strings.Contains(string(b), "beta") {
			candidates = append(candidates, c)
		}
	}
	if len(candidates) != 1 {
		t.Fatalf("thread A's clone is not the one clone with alpha alone: %v", candidates)
	}
	cloneA := candidates[0]
	readmeA, _ := os.ReadFile(cloneA)
	s.stop()
	clicked := s.approved
	s = startServeProcess(t, fake, cfgPath)
	s.approved = clicked
	s.mention("EvA11", fake.PostUserMessage("C1", rootA, "EDIT-A"), rootA, "EDIT-A again")
	cardTS := s.card(rootA, "echo alpha")
	s.kill9()
	s = startServe(t, fake, cfgPath)
	s.approveCard(rootA, cardTS)
	s.answer(rootA, 4)
	pathsAfter := chatClones(dir, "")
	if strings.Join(pathsBefore, ",") != strings.Join(pathsAfter, ",") {
		t.Errorf("the clones changed across the restart: %v -> %v", pathsBefore, pathsAfter)
	}
	if after, _ := os.ReadFile(cloneA); string(after) != string(readmeA)+"alpha\n" {
		t.Errorf("the reattached run's edit is not in thread A's clone %s:\n%q\nwas\n%q", cloneA, after, readmeA)
	}
}

// startServeProcess runs `threadline serve` as a process of its own (this
// test binary as threadline), for kill9.
func startServeProcess(t *testing.T, fake *slacktest.Server, cfgPath string) *served {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := &served{t: t, fake: fake, done: make(chan error, 1), logs: &lockedBuffer{}, approved: map[string]bool{}}
	cmd := exec.Command(exe, "serve", "--config", cfgPath)
	cmd.Env = append(os.Environ(), testRoleEnv+"=cli")
	cmd.Stdout, cmd.Stderr = io.Discard, s.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.proc = cmd
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if s.proc != nil {
			_ = s.proc.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("serve process's log:\n%s", s.logs.String())
		}
	})
	if err := fake.WaitConnected(60 * time.Second); err != nil {
		t.Fatalf("%v\n%s", err, s.logs.String())
	}
	return s
}

// kill9 kills the serve process with SIGKILL (its relays and agents go on)
// and waits until Slack has seen its connection drop.
func (s *served) kill9() {
	s.t.Helper()
	if err := s.proc.Process.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatal(err)
	}
	<-s.done
	s.proc = nil
	chatopstest.WaitFor(s.t, "the killed serve's socket to close", func() bool { return s.fake.Connected() == 0 })
}

// chatClones are the chats' clones of project web (not its spares), or
// their file name.
func chatClones(dir, name string) []string {
	all, _ := filepath.Glob(filepath.Join(dir, "data", "threadline", "workspaces", "web", "chats", "*", name))
	var out []string
	for _, p := range all {
		rel, _ := filepath.Rel(filepath.Join(dir, "data", "threadline", "workspaces", "web", "chats"), p)
		if !strings.HasPrefix(rel, ".") {
			out = append(out, p)
		}
	}
	return out
}

// bash is a scripted Bash tool call.
func bash(command string) fakeapi.Script {
	return fakeapi.ToolUse("Bash", map[string]any{"command": command, "description": "Edit"})
}

// served is a running `threadline serve` with the Slack fake.
type served struct {
	t      *testing.T
	fake   *slacktest.Server
	cancel context.CancelFunc
	proc   *exec.Cmd // a serve process of its own (startServeProcess)
	done   chan error
	logs   *lockedBuffer
	// approved are the approval cards already clicked.
	approved map[string]bool
}

func startServe(t *testing.T, fake *slacktest.Server, cfgPath string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{t: t, fake: fake, cancel: cancel, done: make(chan error, 1), logs: &lockedBuffer{}, approved: map[string]bool{}}
	go func() { s.done <- cmdServe(ctx, []string{"--config", cfgPath}, io.Discard, s.logs) }()
	if err := fake.WaitConnected(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", s.logs.String())
		}
	})
	return s
}

func (s *served) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		s.t.Fatalf("serve did not stop\n%s", s.logs.String())
	}
}

func (s *served) send(typ string, payload map[string]any) {
	s.t.Helper()
	env, err := s.fake.Envelope(typ, payload, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.fake.WaitAck(env, 10*time.Second); err != nil {
		s.t.Fatal(err)
	}
}

// mention is UDEV's mention of the bot with text at ts (in thread, when set).
func (s *served) mention(id, ts, thread, text string) {
	s.t.Helper()
	ev := map[string]any{"type": "app_mention", "user": "UDEV", "channel": "C1", "ts": ts, "event_ts": ts, "text": "<@" + slacktest.BotUserID + "> " + text}
	if thread != "" {
		ev["thread_ts"] = thread
	}
	s.send("events_api", map[string]any{"type": "event_callback", "team_id": slacktest.TeamID, "api_app_id": slacktest.AppID,
		"event_id": id, "event_time": time.Now().Unix(), "event": ev})
}

// approve clicks Approve on the thread's card asking for a command with
// marker.
func (s *served) approve(root, marker string) {
	s.t.Helper()
	s.approveCard(root, s.card(root, marker))
}

// card waits for the thread's open approval card asking for a command with
// marker that was not clicked yet and returns its ts.
func (s *served) card(root, marker string) string {
	s.t.Helper()
	var ts string
	chatopstest.WaitFor(s.t, "the approval card for "+marker, func() bool {
		for _, x := range s.fake.Thread("C1", root) {
			if strings.Contains(string(x.Blocks), `"action_id":"tl_approve"`) && strings.Contains(string(x.Blocks), marker) && !s.approved[x.TS] {
				ts = x.TS
				return true
			}
		}
		return false
	})
	s.approved[ts] = true
	return ts
}

// approveCard clicks Approve on the thread's card at ts as it reads now.
func (s *served) approveCard(root, ts string) {
	s.t.Helper()
	var blocks string
	for _, x := range s.fake.Thread("C1", root) {
		if x.TS == ts {
			blocks = string(x.Blocks)
		}
	}
	parts := strings.Split(blocks, `"action_id":"tl_approve","value":"`)
	if len(parts) < 2 {
		s.t.Fatalf("card %s has no Approve button: %s", ts, blocks)
	}
	value := strings.Split(parts[1], `"`)[0]
	s.send("interactive", map[string]any{
		"type": "block_actions", "team": map[string]any{"id": slacktest.TeamID}, "user": map[string]any{"id": "UDEV"},
		"trigger_id": s.fake.NewTrigger(),
		"container":  map[string]any{"type": "message", "message_ts": ts, "channel_id": "C1", "thread_ts": root},
		"channel":    map[string]any{"id": "C1"},
		"actions":    []map[string]any{{"action_id": "tl_approve", "block_id": "tl_actions", "value": value, "type": "button"}},
	})
}

// answer waits for the thread's nth finished answer.
func (s *served) answer(root string, n int) slacktest.Message {
	s.t.Helper()
	var out slacktest.Message
	chatopstest.WaitFor(s.t, "answer", func() bool {
		seen := 0
		for _, m := range s.fake.Thread("C1", root) {
			if strings.Contains(string(m.Blocks), "Done in") {
				seen++
				if seen == n {
					out = m
				}
			}
		}
		return seen >= n
	})
	return out
}

// notice waits for a message of the thread holding every one of parts.
func (s *served) notice(root string, parts ...string) {
	s.t.Helper()
	chatopstest.WaitFor(s.t, "a message with "+strings.Join(parts, " and "), func() bool {
		for _, m := range s.fake.Thread("C1", root) {
			text := string(m.Blocks) + m.Text + m.Markdown
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(text, p)
			}
			if ok {
				return true
			}
		}
		return false
	})
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// giteaGet decodes the API answer at path.
func giteaGet(t *testing.T, g *giteatest.Server, path string, into any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, g.URL+"/api/v1"+path, nil)
	req.Header.Set("Authorization", "token "+g.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func giteaBranches(t *testing.T, g *giteatest.Server) []string {
	var bs []struct{ Name string }
	giteaGet(t, g, "/repos/"+g.User+"/web/branches", &bs)
	var out []string
	for _, b := range bs {
		out = append(out, b.Name)
	}
	return out
}

func giteaPRs(t *testing.T, g *giteatest.Server) []string {
	var ps []struct{ Title string }
	giteaGet(t, g, "/repos/"+g.User+"/web/pulls?state=open", &ps)
	var out []string
	for _, p := range ps {
		out = append(out, p.Title)
	}
	return out
}

func giteaFile(t *testing.T, g *giteatest.Server, ref, path string) string {
	req, _ := http.NewRequest(http.MethodGet, g.URL+"/api/v1/repos/"+g.User+"/web/raw/"+path+"?ref="+ref, nil)
	req.Header.Set("Authorization", "token "+g.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
