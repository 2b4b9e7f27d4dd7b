package main

import (
	"bytes"
	"context"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// attacks are what an approved tool of chat A tries, each printed as
// "<name> REACHED" or "<name> refused" (the fields are filled per test).
type attacks struct {
	otherSecret, otherDir, otherTranscripts, db, config, state, relaySock, exe, pgPort string
	botPid                                                                             int
}

func (a attacks) script() string {
	try := func(name, cmd string) string {
		return "if ( " + cmd + " ) >/dev/null 2>&1; then echo '" + name + " REACHED'; else echo '" + name + " refused'; fi; "
	}
	return try("read-other-workspace", "cat "+a.otherSecret) +
		try("write-other-workspace", "echo x > "+filepath.Join(a.otherDir, "planted.txt")) +
		try("read-other-transcript", "cat "+a.otherTranscripts) +
		try("read-database", "head -c 16 "+a.db) +
		try("read-config", "cat "+a.config) +
		try("list-state", "ls "+a.state) +
		try("relay-socket", "test -w "+a.relaySock+" -a -r "+filepath.Join(filepath.Dir(a.relaySock), "token")) +
		try("connect-postgres", "timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/"+a.pgPort+"'") +
		"other=$(pgrep -f 'tail -f /dev/nul[l]' | head -1); " +
		try("read-other-environ", `grep -q CHAT_B_SECRET /proc/$other/environ`) +
		try("signal-other-agent", `kill -0 $other`) +
		try("signal-bot", "kill -0 "+strconv.Itoa(a.botPid)) +
		try("relay-as-root", "echo '{\"path\":\"/usr/bin/id\",\"args\":[\"-u\"],\"env\":[],\"isolated\":true}' | "+a.exe+" relay --agent-user root "+a.otherDir+" | grep -q '^ok'") +
		"echo probed"
}

// TestSandboxAttackEndToEnd: the real Claude CLI, two chats. While chat B's
// agent runs (a tool sleeping, its environment holding a secret), an
// approved tool of chat A tries to read and write chat B's workspace, read
// chat B's transcript, the bot's database, config and state, use another
// run's relay socket, connect to a local database port, read chat B's
// agent's environment, signal it and the bot, and start `threadline relay`
// asking for root. Sandboxed (auto: the sandbox on top of the uid switch)
// every attempt is refused; the control run with host.isolation off
// reaches them (but the relay, which refuses root to anyone).
func TestSandboxAttackEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	agentU := agentUser(t)
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	// A local database port (the netns has its own loopback: this listener
	// stands for Postgres on 127.0.0.1).
	pg, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	go func() {
		for {
			c, err := pg.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, pgPort, _ := net.SplitHostPort(pg.Addr().String())
	// Another run's live relay, as serve keeps them.
	relays := configs.RelayDir()
	other := procrun.Relay{Dir: relays, Command: []string{sandboxHelper, "relay"}}
	op, err := procrun.Start(procrun.WithRelay(context.Background(), other.Run("other-run")), nil,
		procrun.Spec{Bin: "sleep", Args: []string{"600"}, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = op.Kill(); _ = op.Wait() })

	work := func(name string) string {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		chownTree(t, d, agentU)
		return d
	}
	workA, workB := work("chat-a"), work("chat-b")
	secretB := filepath.Join(workB, "secret.txt")
	if err := os.WriteFile(secretB, []byte("chat-b-work"), 0o600); err != nil {
		t.Fatal(err)
	}
	chownTree(t, workB, agentU)
	db := filepath.Join(dir, "tl.db")
	a := attacks{otherSecret: secretB, otherDir: workB, db: db, state: filepath.Join(os.Getenv("XDG_STATE_HOME"), "threadline"),
		relaySock: filepath.Join(other.RunDir("other-run"), "sock"), exe: sandboxHelper, pgPort: pgPort, botPid: os.Getpid()}
	api := fakeapi.New(t,
		fakeapi.When("SLEEP", fakeapi.ToolUse("Bash", map[string]any{"command": "timeout 45 tail -f /dev/null; echo waited", "description": "Wait"})),
		fakeapi.When("PROBE", fakeapi.ToolUse("Bash", map[string]any{"command": "bash ./probe.sh > probe.txt 2>&1; echo probed", "description": "Look around"})),
		fakeapi.Text("Done."),
	)
	claudeEnv := api.ClaudeEnv(filepath.Join(dir, "claude"))
	chownTree(t, filepath.Join(dir, "claude"), agentU)
	writeConfig := func(name, isolation string, env map[string]string) string {
		raw, _ := yaml.Marshal(map[string]any{
			"database": map[string]any{"url": db},
			"host":     map[string]any{"isolation": isolation},
			"agents":   map[string]any{"claude": map[string]any{"bin": bin, "env": env}},
		})
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		isolation string
		want      string // for every attack
	}{{"auto", "refused"}, {"off", "REACHED"}} {
		t.Run(tc.isolation, func(t *testing.T) {
			envB := map[string]string{"CHAT_B_SECRET": "b-only"}
			for k, v := range claudeEnv {
				envB[k] = v
			}
			cfgB := writeConfig("b-"+tc.isolation+".yaml", tc.isolation, envB)
			cfgA := writeConfig("a-"+tc.isolation+".yaml", tc.isolation, claudeEnv)
			a.config = cfgA
			// Chat B: a first turn (its transcript), then a turn whose tool
			// sleeps while chat A probes.
			if code, _, errOut, err := run(t, "", "run", "--config", cfgB, "--agent", "claude", "--cwd", workB, "hello"); code != 0 || err != nil {
				t.Fatalf("chat B: %d %v\n%s", code, err, errOut)
			}
			// Chat B's transcripts: in its own agent state when sandboxed,
			// in the agent's configured CLAUDE_CONFIG_DIR otherwise.
			a.otherTranscripts = filepath.Join(claudeEnv["CLAUDE_CONFIG_DIR"], "projects", "*", "*.jsonl")
			if tc.isolation != "off" {
				a.otherTranscripts = filepath.Join(newestState(t, dir), "home", ".claude", "projects", "*", "*.jsonl")
			}
			if m, _ := filepath.Glob(a.otherTranscripts); len(m) == 0 {
				t.Fatalf("chat B left no transcript at %s", a.otherTranscripts)
			}
			chatB := osexec.Command(sandboxHelper, "run", "--config", cfgB, "--agent", "claude", "--cwd", workB, "--interactions", "accept", "SLEEP now")
			chatB.Env = append(os.Environ(), testRoleEnv+"=cli")
			var bOut bytes.Buffer
			chatB.Stdout, chatB.Stderr = &bOut, &bOut
			if err := chatB.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("chat B's run:\n%s", bOut.String())
				}
			})
			chatopstest.WaitFor(t, "chat B's tool sleeping", pgrepSleep)
			if err := os.WriteFile(filepath.Join(workA, "probe.sh"), []byte(a.script()), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(workA, "probe.txt"))
			if code, out, errOut, err := run(t, "", "run", "--config", cfgA, "--agent", "claude", "--cwd", workA, "--interactions", "accept", "PROBE around"); code != 0 || err != nil {
				t.Fatalf("chat A: %d %v\n%s\n%s", code, err, out, errOut)
			}
			b, err := os.ReadFile(filepath.Join(workA, "probe.txt"))
			if err != nil {
				t.Fatal(err)
			}
			probe := string(b)
			n := 0
			for _, line := range strings.Split(strings.TrimSpace(probe), "\n") {
				name, result, ok := strings.Cut(line, " ")
				if !ok || result != "REACHED" && result != "refused" {
					continue
				}
				n++
				want := tc.want
				if name == "relay-as-root" {
					want = "refused" // nobody gets root from the relay
				}
				if result != want {
					t.Errorf("%s: %s %s, want %s", tc.isolation, name, result, want)
				}
			}
			if n != 12 {
				t.Errorf("%d attempts reported, want 12:\n%s", n, probe)
			}
			_ = osexec.Command("pkill", "-f", "tail -f /dev/nul[l]").Run()
			if err := chatB.Wait(); err != nil {
				t.Logf("chat B: %v\n%s", err, bOut.String())
			}
		})
	}
}

// newestState is the agent state directory of the chat run last.
func newestState(t *testing.T, dir string) string {
	t.Helper()
	ents, _ := filepath.Glob(filepath.Join(dir, "data", "threadline", "agents", "*-*-*-*-*"))
	var best string
	var at time.Time
	for _, e := range ents {
		if fi, err := os.Stat(e); err == nil && fi.ModTime().After(at) {
			best, at = e, fi.ModTime()
		}
	}
	return best
}

// pgrepSleep reports whether chat B's sleeping tool runs.
func pgrepSleep() bool { return osexec.Command("pgrep", "-f", "tail -f /dev/nul[l]").Run() == nil }
