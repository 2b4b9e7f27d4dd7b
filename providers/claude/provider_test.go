// Provider tests: the test binary re-executed as a fake claude that replays
// real transcripts over stdin/stdout.

package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// Fake CLI environment.
const (
	envTranscript = "CLAUDE_FAKE_TRANSCRIPT" // replayed file (raw or drive)
	envRecord     = "CLAUDE_FAKE_RECORD"     // argv and every stdin line are appended here
	envExit       = "CLAUDE_FAKE_EXIT"       // exit code for raw transcripts
	envStopAfter  = "CLAUDE_FAKE_STOP_AFTER" // stop after N stdout lines...
	envHang       = "CLAUDE_FAKE_HANG"       // ...and hang ignoring stdin and SIGINT (else exit 2)
	envNoise      = "CLAUDE_FAKE_NOISE"      // print malformed and 20 MiB lines first
	envStream     = "CLAUDE_FAKE_STREAM"     // copy this file to stdout as is, draining stdin (BenchmarkReadPath)
)

func TestMain(m *testing.M) {
	providertest.RunSandboxIfAsked() // before the fakes: the helper passes their variables on
	if path := os.Getenv(envStream); path != "" {
		os.Exit(fakeStream(path))
	}
	if os.Getenv(envTranscript) != "" || slices.Contains(os.Args[1:], "--version") && os.Getenv("CLAUDE_FAKE") != "" {
		os.Exit(providertest.ServeFake("2.1.328 (Claude Code)", os.Getenv(envRecord), fakeClaude))
	}
	providertest.Main(m)
}

// fakeStream writes the file at path to stdout in large writes, as fast as
// the reader takes it, while stdin (the control responses) is drained.
func fakeStream(path string) int {
	go io.Copy(io.Discard, os.Stdin)
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 98
	}
	defer f.Close()
	if _, err := io.Copy(os.Stdout, f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 98
	}
	return 0
}

// fakeClaude replays the transcript on stdin/stdout (see ServeFake),
// keeping every line it reads in rec.
func fakeClaude(rec *os.File) int {
	path := os.Getenv(envTranscript)
	lines, err := providertest.FileLines(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 98
	}
	cli := providertest.NewStdio(rec)
	if os.Getenv(envNoise) != "" {
		cli.Send([]byte("this is not json"))
		cli.Send([]byte(`{"type":`))
		cli.Send(slices.Concat([]byte(`{"type":"assistant","pad":"`), bytes.Repeat([]byte("x"), 20<<20), []byte(`"}`)))
	}
	exit, _ := strconv.Atoi(os.Getenv(envExit))
	stopAfter, _ := strconv.Atoi(os.Getenv(envStopAfter))
	written := 0
	drive := strings.HasSuffix(path, ".drive.jsonl")
	for _, l := range lines {
		dir, msg := "cli->host", json.RawMessage(l)
		if drive {
			var r struct {
				Dir string          `json:"dir"`
				Msg json.RawMessage `json:"msg"`
			}
			_ = json.Unmarshal(l, &r)
			dir, msg = r.Dir, r.Msg
		}
		switch dir {
		case "cli->host":
			if bytes.Contains(msg, []byte(`"request_id":"init-1"`)) {
				continue // we never send initialize
			}
			cli.Send(msg)
			written++
			if stopAfter > 0 && written == stopAfter {
				if os.Getenv(envHang) != "" {
					providertest.Hang(rec, cli.In)
				}
				fmt.Fprintln(os.Stderr, "fatal: something broke")
				return 2
			}
		case "host->cli":
			if bytes.Contains(msg, []byte(`"subtype":"initialize"`)) {
				continue
			}
			if _, ok := cli.Read(); !ok {
				fmt.Fprintln(os.Stderr, "stdin closed early")
				return 97
			}
		case "meta":
			var m struct {
				ExitCode *int `json:"exit_code"`
			}
			if json.Unmarshal(msg, &m) == nil && m.ExitCode != nil {
				exit = *m.ExitCode
			}
		}
	}
	// Stream-json mode: the real CLI exits once stdin is closed.
	for _, ok := cli.Read(); ok; _, ok = cli.Read() {
	}
	return exit
}

// fakeRun is one provider run against the fake.
type fakeRun struct {
	providertest.Result
	argv  []string
	env   []string
	stdin []json.RawMessage
}

func (f *fakeRun) find(t agent.EventType) *agent.Event {
	for i := range f.Events {
		if f.Events[i].Type == t {
			return &f.Events[i]
		}
	}
	return nil
}

// stdinOf returns the stdin lines whose "type" is typ.
func (f *fakeRun) stdinOf(typ string) []json.RawMessage {
	var out []json.RawMessage
	for _, l := range f.stdin {
		var v struct{ Type string }
		if json.Unmarshal(l, &v) == nil && v.Type == typ {
			out = append(out, l)
		}
	}
	return out
}

// runFake runs the provider against transcript (providertest.Run); onEvent
// may react to events (answer interactions, cancel the run).
func runFake(t *testing.T, transcript string, req agent.RunRequest, env map[string]string, onEvent providertest.OnEvent) *fakeRun {
	t.Helper()
	fake := providertest.SelfFake(t, envRecord, map[string]string{envTranscript: providertest.Testdata(t, transcript)}, env)
	req.Bin, req.Env = fake.Bin, fake.Env
	p := New(nil, Options{Launch: procrun.Launch{Bin: "claude-not-used", StopGrace: 2 * time.Second,
		HostEnv: providertest.HostEnvWithBotSecrets("PATH=/usr/bin:/bin", "HOME="+t.TempDir())}})
	f := &fakeRun{Result: *providertest.Run(t, p, req, onEvent)}
	rec := providertest.ReadRecord(t, fake.Record)
	f.argv, f.env, f.stdin = rec.Argv, rec.Env, rec.Stdin
	return f
}

func TestRunBasic(t *testing.T) {
	f := runFake(t, "basic.jsonl", agent.RunRequest{Prompt: "make out.txt", Model: "opus", Approval: agent.ApprovalDeny}, nil, nil)
	if f.Err != nil {
		t.Fatal(f.Err)
	}
	if f.Last().Type != agent.EventRunCompleted || f.Text() != "I'll create the file now.Tool finished. is_error=False; result='(Bash completed with no output)'. Done." {
		t.Fatalf("events: %v, text %q", f.Types(), f.Text())
	}
	if s := f.find(agent.EventSessionUpdated); s == nil || s.SessionID != "d42c6bf8-6b22-455e-aaba-f4b82658199f" {
		t.Errorf("session.updated = %+v", s)
	}
	if u := f.find(agent.EventUsageUpdated); u == nil || u.Usage.NumTurns != 2 || u.Usage.CostUSD == 0 {
		t.Errorf("usage = %+v", u)
	}
	wantArgs := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--model=opus", "--permission-prompt-tool", "stdio", "--setting-sources="}
	if !slices.Equal(f.argv, wantArgs) {
		t.Errorf("argv = %q, want %q", f.argv, wantArgs)
	}
	users := f.stdinOf("user")
	if len(users) != 1 || string(users[0]) != `{"type":"user","message":{"role":"user","content":"make out.txt"},"parent_tool_use_id":null,"session_id":""}` {
		t.Errorf("prompt line = %s", users)
	}
	providertest.CheckNoBotSecrets(t, f.env, "PATH=/usr/bin:/bin")
	for _, want := range []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_ENABLE_TODO_TOOLS=1", "PATH=/usr/bin:/bin"} {
		if !slices.Contains(f.env, want) {
			t.Errorf("child env lacks %s: %q", want, f.env)
		}
	}
}

// TestRunMalformedAndHugeLines: malformed lines are logged and skipped; a line
// over procrun's limit is skipped too but reported (a system error event, and
// the run fails saying so) while the rest of the stream is still parsed.
func TestRunMalformedAndHugeLines(t *testing.T) {
	f := runFake(t, "basic.jsonl", agent.RunRequest{Prompt: "x"}, map[string]string{envNoise: "1"}, nil)
	providertest.CheckFailed(t, &f.Result, "16 MiB limit")
	if types := f.Types(); types[0] != agent.EventSystem || types[1] != agent.EventSessionUpdated {
		t.Errorf("noise produced other events: %v", types[:3])
	}
	if f.Text() != "I'll create the file now.Tool finished. is_error=False; result='(Bash completed with no output)'. Done." {
		t.Errorf("text %q", f.Text())
	}
}

func TestRunExitWithoutResult(t *testing.T) {
	f := runFake(t, "basic.jsonl", agent.RunRequest{Prompt: "x"}, map[string]string{envStopAfter: "10"}, nil)
	if last := providertest.CheckFailed(t, &f.Result, ""); last.Text != "claude exited without a result: fatal: something broke" {
		t.Fatalf("last = %+v", last)
	}
	if n := len(f.Events); f.find(agent.EventRunCompleted) != nil || n < 2 {
		t.Fatalf("events = %v", f.Types())
	}
}

func TestRunResumeUnknown(t *testing.T) {
	f := runFake(t, "resume-unknown.jsonl", agent.RunRequest{Prompt: "x", ResumeID: "6bc61bc3-84be-4d9a-9e80-341723eeb890", Fork: true}, map[string]string{envExit: "1"}, nil)
	if !errors.Is(f.Err, agent.ErrSessionNotFound) {
		t.Fatalf("err = %v, want ErrSessionNotFound", f.Err)
	}
	if slices.ContainsFunc(f.Events, func(ev agent.Event) bool { return ev.Type.Terminal() }) {
		t.Errorf("a terminal event was emitted: %v", f.Types())
	}
	if !slices.Equal(f.argv[len(f.argv)-6:], []string{"--resume", "6bc61bc3-84be-4d9a-9e80-341723eeb890", "--fork-session", "--permission-prompt-tool", "stdio", "--setting-sources="}) {
		t.Errorf("argv = %q", f.argv)
	}
}

func TestRunAPIError(t *testing.T) {
	f := runFake(t, "api-error-400.jsonl", agent.RunRequest{Prompt: "x"}, map[string]string{envExit: "1"}, nil)
	if last := providertest.CheckFailed(t, &f.Result, ""); last.Text != "API Error: 400 fake: scripted failure" {
		t.Fatalf("last = %+v", last)
	}
	if f.Text() != "" {
		t.Errorf("API error text emitted as assistant text: %q", f.Text())
	}
}

// referenceResponse returns the host's control_response in a drive transcript.
func referenceResponse(t *testing.T, transcript string) map[string]any {
	t.Helper()
	for _, msg := range providertest.Messages(t, providertest.Testdata(t, transcript), "host->cli") {
		if m := decode(t, msg); m["type"] == "control_response" {
			return m
		}
	}
	t.Fatalf("%s has no control_response", transcript)
	return nil
}

func decode(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func answerWith(resp agent.InteractionResponse, ch chan agent.InteractionResponse) providertest.OnEvent {
	return func(ev agent.Event, _ context.CancelFunc) {
		if ev.Type == agent.EventInteractionRequested {
			// An unknown id is logged and ignored first.
			ch <- agent.InteractionResponse{InteractionID: "no-such-id", Decision: agent.DecisionApprove}
			resp.InteractionID = ev.Interaction.ID
			ch <- resp
		}
	}
}

func TestRunApprovals(t *testing.T) {
	tests := []struct {
		transcript string
		resp       agent.InteractionResponse
		kind       agent.InteractionKind
		status     string
		last       agent.EventType
		// the reference's message text is the fake host's own; ours differs
		ignoreMessage bool
	}{
		{"approve.drive.jsonl", agent.InteractionResponse{Decision: agent.DecisionApprove, By: "U1"}, agent.KindCommandApproval, agent.StatusApproved, agent.EventRunCompleted, false},
		{"deny.drive.jsonl", agent.InteractionResponse{Decision: agent.DecisionDecline, By: "U1"}, agent.KindCommandApproval, agent.StatusDeclined, agent.EventRunCompleted, true},
		{"deny-interrupt.drive.jsonl", agent.InteractionResponse{Decision: agent.DecisionCancel, By: "U1"}, agent.KindCommandApproval, agent.StatusCancelled, agent.EventRunInterrupted, true},
		{"ask.drive.jsonl", agent.InteractionResponse{Decision: agent.DecisionAnswer, By: "U1", Answers: map[string]string{"Which color should the button be?": "Blue"}}, agent.KindQuestion, agent.StatusAnswered, agent.EventRunCompleted, false},
	}
	for _, tt := range tests {
		t.Run(tt.transcript, func(t *testing.T) {
			ch := make(chan agent.InteractionResponse, 4)
			f := runFake(t, tt.transcript, agent.RunRequest{Prompt: "x", Approval: agent.ApprovalAsk, Responses: ch}, nil, answerWith(tt.resp, ch))
			if f.Err != nil {
				t.Fatalf("err = %v (events %v)", f.Err, f.Types())
			}
			if !slices.Contains(f.argv, "--permission-prompt-tool") {
				t.Errorf("argv = %q", f.argv)
			}
			req := f.find(agent.EventInteractionRequested)
			if req == nil || req.Interaction.Kind != tt.kind {
				t.Fatalf("interaction = %+v", req)
			}
			if string(req.Interaction.NativeID) != `"`+req.Interaction.ID+`"` {
				t.Errorf("native id %s vs id %s", req.Interaction.NativeID, req.Interaction.ID)
			}
			res := f.find(agent.EventInteractionResolved)
			if res == nil || res.Resolution.Status != tt.status || res.Resolution.By != "U1" {
				t.Fatalf("resolution = %+v", res)
			}
			if f.Last().Type != tt.last {
				t.Fatalf("last = %+v (events %v)", f.Last(), f.Types())
			}
			sent := f.stdinOf("control_response")
			if len(sent) != 1 {
				t.Fatalf("control responses sent: %s", sent)
			}
			got, want := decode(t, sent[0]), referenceResponse(t, tt.transcript)
			if tt.ignoreMessage {
				gr := got["response"].(map[string]any)["response"].(map[string]any)
				wr := want["response"].(map[string]any)["response"].(map[string]any)
				if gr["message"] == "" {
					t.Errorf("deny without message")
				}
				gr["message"] = wr["message"]
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			if !bytes.Equal(gb, wb) {
				t.Errorf("control_response\n got %s\nwant %s", gb, wb)
			}
		})
	}
}

func TestRunInterrupt(t *testing.T) {
	cancelOnFirst := providertest.CancelOn
	t.Run("streaming", func(t *testing.T) {
		f := runFake(t, "interrupt.drive.jsonl", agent.RunRequest{Prompt: "x"}, nil, cancelOnFirst(agent.EventAssistantDelta))
		if f.Err != nil {
			t.Fatalf("err = %v", f.Err)
		}
		if f.Last().Type != agent.EventRunInterrupted || f.find(agent.EventRunFailed) != nil {
			t.Fatalf("events = %v", f.Types())
		}
		sent := f.stdinOf("control_request")
		if len(sent) != 1 || string(sent[0]) != `{"type":"control_request","request_id":"int-1","request":{"subtype":"interrupt"}}` {
			t.Fatalf("interrupt = %s", sent)
		}
	})
	t.Run("pending permission", func(t *testing.T) {
		ch := make(chan agent.InteractionResponse)
		f := runFake(t, "interrupt-pending-permission.drive.jsonl", agent.RunRequest{Prompt: "x", Responses: ch, Approval: agent.ApprovalAsk}, nil, cancelOnFirst(agent.EventInteractionRequested))
		if f.Err != nil {
			t.Fatalf("err = %v", f.Err)
		}
		res := f.find(agent.EventInteractionResolved)
		if res == nil || res.Resolution.Status != agent.StatusCancelled {
			t.Fatalf("resolution = %+v", res)
		}
		if f.Last().Type != agent.EventRunInterrupted {
			t.Fatalf("events = %v", f.Types())
		}
	})
	t.Run("unresponsive cli is killed", func(t *testing.T) {
		start := time.Now()
		f := runFake(t, "basic.jsonl", agent.RunRequest{Prompt: "x"}, map[string]string{envStopAfter: "5", envHang: "1"}, cancelOnFirst(agent.EventSessionUpdated))
		if f.Err != nil {
			t.Fatalf("err = %v", f.Err)
		}
		if f.Last().Type != agent.EventRunInterrupted {
			t.Fatalf("events = %v", f.Types())
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("took %v", d)
		}
	})
}

func TestRunNotInstalled(t *testing.T) {
	providertest.CheckNotInstalled(t, func(bin string) *Provider { return New(nil, Options{Launch: procrun.Launch{Bin: bin}}) }, "npm install -g @anthropic-ai/claude-code")
}

func TestDescriptor(t *testing.T) {
	d := Descriptor()
	if d.ID != string(ProviderID) || d.Executable != DefaultBin || d.InstallHint != installHint || !slices.Equal(d.Efforts, Efforts) || !d.NativeFork {
		t.Fatalf("descriptor %+v", d)
	}
	providertest.CheckDescriptor(t, d, registry.VerifiedRealCLI)
	providertest.CheckDescribedArgs(t, d, func(req agent.RunRequest) ([]string, error) { return Args(req), nil })
	for _, other := range []func() registry.Definition{AmpDescriptor, CodeBuddyDescriptor} {
		if o := other(); o.Format != d.Format || o.Executable == d.Executable || o.VerifiedVersions != nil {
			t.Errorf("%s: %+v", o.ID, o)
		}
	}
}
