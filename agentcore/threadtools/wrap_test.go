package threadtools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/redact"
)

// sayingThread is a fakeThread that keeps what it is told to say.
type sayingThread struct {
	fakeThread
	mu   sync.Mutex
	said []string
}

func (s *sayingThread) Say(_ context.Context, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.said = append(s.said, text)
	return nil
}

// toolCaller is a provider that calls its run's thread tools as the MCP
// server would: a file that passes and one that holds a secret.
type toolCaller struct {
	got     agent.RunRequest
	results []error
	socket  string
}

func (p *toolCaller) ID() agent.ProviderID { return "caller" }

func (p *toolCaller) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	p.got = req
	if len(req.MCPServers) != 1 {
		return errors.New("no MCP server")
	}
	env := req.MCPServers[0].EnvMap()
	p.socket = env[EnvSocket]
	c := &Client{Socket: env[EnvSocket], Token: env[EnvToken]}
	for _, f := range []string{"chart.txt", "leak.txt"} {
		_, err := c.SendFile(ctx, f, "")
		p.results = append(p.results, err)
	}
	emit(agent.Event{Type: agent.EventRunCompleted})
	return nil
}

func TestWrapGivesARunItsTools(t *testing.T) {
	ws := t.TempDir()
	tmp := t.TempDir()
	const secret = "sk-wrap-7Hq2Wm5Zr7Tn3Lp9"
	if err := os.WriteFile(filepath.Join(ws, "chart.txt"), []byte("a chart\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "leak.txt"), []byte("key="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	th := &sayingThread{fakeThread: fakeThread{attachments: map[string][]byte{}}}
	var asked []agent.ChatID
	inner := &toolCaller{}
	p := Wrap([]agent.Provider{inner}, Tools{Binary: "/opt/threadline/threadline-mcp", Secrets: redact.New(secret),
		Thread: func(_ context.Context, id agent.ChatID) (ChatThread, bool) {
			asked = append(asked, id)
			return th, true
		}})[0]
	var events []agent.Event
	err := p.Run(context.Background(), agent.RunRequest{ChatID: "c1", RunID: "r1", Cwd: ws, Env: map[string]string{"TMPDIR": tmp}},
		func(e agent.Event) { events = append(events, e) })
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != "c1" {
		t.Fatalf("threads asked for: %v", asked)
	}
	m := inner.got.MCPServers[0]
	if m.Name != ServerName || m.Command != "/opt/threadline/threadline-mcp" || len(m.Env) != 2 {
		t.Fatalf("MCP server %#v", m)
	}
	// Not under the run's TMPDIR, which the agent user may change.
	if !strings.HasPrefix(inner.socket, filepath.Join(os.TempDir(), "threadline-tools-")) || strings.HasPrefix(inner.socket, tmp) {
		t.Errorf("socket %s: want it in the bot's temporary directory, not the run's TMPDIR %s", inner.socket, tmp)
	}
	if _, err := os.Stat(filepath.Dir(inner.socket)); !os.IsNotExist(err) {
		t.Errorf("the socket's directory outlives the run: %v", err)
	}
	if inner.results[0] != nil {
		t.Errorf("chart.txt: %v", inner.results[0])
	}
	var te *ToolError
	if !errors.As(inner.results[1], &te) || !strings.Contains(te.Reason, "refused") {
		t.Errorf("leak.txt: %v", inner.results[1])
	}
	if sent := th.Sent(); len(sent) != 1 || sent[0].Name != "chart.txt" {
		t.Errorf("sent %v", sent)
	}
	if len(th.said) != 1 || !strings.HasPrefix(th.said[0], "Not sent: leak.txt (") || strings.Contains(th.said[0], secret) {
		t.Errorf("said %q", th.said)
	}
	var subtypes []string
	for _, e := range events {
		if e.Type == agent.EventSystem {
			subtypes = append(subtypes, e.Subtype)
		}
	}
	if strings.Join(subtypes, ",") != SubtypeFileSent+","+SubtypeFileRefused || !strings.Contains(events[0].Text, "chart.txt") {
		t.Errorf("events %+v", events)
	}
}

// TestWrapLeavesOthersAlone: no thread, a container run or a probe get no
// tools; nor does any run without the binary.
func TestWrapLeavesOthersAlone(t *testing.T) {
	none := func(context.Context, agent.ChatID) (ChatThread, bool) { return nil, false }
	inner := &toolCaller{}
	for _, c := range []struct {
		tools Tools
		req   agent.RunRequest
	}{
		{Tools{Binary: "/x/threadline-mcp", Thread: none}, agent.RunRequest{ChatID: "c1", Cwd: t.TempDir()}},
		{Tools{Thread: none}, agent.RunRequest{ChatID: "c1", Cwd: t.TempDir()}},
		{Tools{Binary: "/x/threadline-mcp", Thread: func(context.Context, agent.ChatID) (ChatThread, bool) { t.Fatal("asked"); return nil, false }},
			agent.RunRequest{Cwd: t.TempDir()}},
		{Tools{Binary: "/x/threadline-mcp", Thread: func(context.Context, agent.ChatID) (ChatThread, bool) { t.Fatal("asked"); return nil, false }},
			agent.RunRequest{ChatID: "c1", Cwd: t.TempDir(), Container: &agent.ContainerTarget{}}},
	} {
		if err := Wrap([]agent.Provider{inner}, c.tools)[0].Run(context.Background(), c.req, func(agent.Event) {}); err == nil || len(inner.got.MCPServers) != 0 {
			t.Errorf("%+v: %v, %v", c.req, err, inner.got.MCPServers)
		}
	}
}

// TestWrapIgnoresTheRunsTMPDIR: whatever the run's TMPDIR (here one that
// does not exist), the socket goes in the bot's temporary directory.
func TestWrapIgnoresTheRunsTMPDIR(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "chart.txt"), []byte("a chart\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	th := &sayingThread{fakeThread: fakeThread{attachments: map[string][]byte{}}}
	inner := &toolCaller{}
	p := Wrap([]agent.Provider{inner}, Tools{Binary: "/x/threadline-mcp",
		Thread: func(context.Context, agent.ChatID) (ChatThread, bool) { return th, true }})[0]
	req := agent.RunRequest{ChatID: "c1", Cwd: ws, Env: map[string]string{"TMPDIR": filepath.Join(t.TempDir(), "gone")}}
	if err := p.Run(context.Background(), req, func(agent.Event) {}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(inner.socket, filepath.Join(os.TempDir(), "threadline-tools-")) || inner.results[0] != nil {
		t.Errorf("socket %s, send: %v", inner.socket, inner.results[0])
	}
}
