// Run-loop tests: the test binary re-executed as a fake `app-server` that
// replays the server side of a real transcript, reads what the harness sends
// at each client step and records it.

package codexharness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/providers/jsonrpc"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// Fake app-server environment.
const (
	envFake       = "CODEXH_FAKE"            // "1": act as the app-server
	envTranscript = "CODEXH_FAKE_TRANSCRIPT" // replayed reference transcript
	envRecord     = "CODEXH_FAKE_RECORD"     // argv+env, then every stdin line
	envNoise      = "CODEXH_FAKE_NOISE"      // malformed lines first
	envDieAfter   = "CODEXH_FAKE_DIE_AFTER"  // exit 3 after N server lines
	envHang       = "CODEXH_FAKE_HANG"       // on turn/interrupt: ignore it and signals, hang
	envDup        = "CODEXH_FAKE_DUP"        // send every server request twice
	envInject     = "CODEXH_FAKE_INJECT"     // a line sent after turn/started (a request waits for its answer)
	envMode       = "CODEXH_FAKE_MODE"       // "catalog": answer discovery requests
	envDebug      = "CODEXH_FAKE_DEBUG"      // file printed by `debug models` (else exit 1)
)

func TestMain(m *testing.M) {
	providertest.RunSandboxIfAsked() // before the fakes: the helper passes their variables on
	if os.Getenv(envFake) == "1" {
		os.Exit(providertest.ServeFake("", os.Getenv(envRecord), fakeAppServer))
	}
	providertest.Main(m)
}

// fakeAppServer serves `app-server` (or `debug models`) on stdin/stdout
// (see ServeFake), keeping every line it reads in rec.
func fakeAppServer(rec *os.File) int {
	if slices.Contains(os.Args[1:], "debug") {
		b, err := os.ReadFile(os.Getenv(envDebug))
		if err != nil {
			fmt.Fprintln(os.Stderr, "debug models: no catalog")
			return 1
		}
		os.Stdout.Write(b)
		return 0
	}
	cli := providertest.NewStdio(rec)
	readClient, send := cli.Read, cli.Send
	if os.Getenv(envMode) == "catalog" {
		return fakeCatalog(readClient, send)
	}
	lines, err := providertest.FileLines(os.Getenv(envTranscript))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 98
	}
	if os.Getenv(envNoise) != "" {
		for _, l := range []string{"this is not json", `{"id":`, `[1,2]`, `{"foo":1}`, `{"id":1.5,"result":{}}`, `{"method":""}`, ""} {
			send([]byte(l))
		}
	}
	dieAfter, _ := strconv.Atoi(os.Getenv(envDieAfter))
	written := 0
	for _, l := range lines {
		var r providertest.TranscriptLine
		_ = json.Unmarshal(l, &r)
		switch r.Dir {
		case "s2c":
			var buf bytes.Buffer
			_ = json.Compact(&buf, r.Msg)
			line := buf.Bytes()
			send(line)
			written++
			m, _ := jsonrpc.Decode(line)
			if os.Getenv(envDup) != "" && m.Kind == jsonrpc.KindRequest {
				send(line)
			}
			if inj := os.Getenv(envInject); inj != "" && m.Method == "turn/started" {
				send([]byte(inj))
				if im, _ := jsonrpc.Decode([]byte(inj)); im.Kind == jsonrpc.KindRequest {
					if _, ok := readClient(); !ok {
						return 0
					}
				}
			}
			if dieAfter > 0 && written == dieAfter {
				fmt.Fprintln(os.Stderr, "boom: the app-server crashed")
				return 3
			}
		case "c2s":
			line, ok := readClient()
			if !ok {
				return 0 // stdin closed: exit like the real server
			}
			if os.Getenv(envHang) != "" && bytes.Contains(line, []byte(`"turn/interrupt"`)) {
				providertest.Hang(rec, cli.In)
				return 0
			}
		}
	}
	for {
		if _, ok := readClient(); !ok {
			return 0
		}
	}
}

// fakeCatalog answers initialize, model/list (two pages, from lists.jsonl)
// and collaborationMode/list.
func fakeCatalog(readClient func() ([]byte, bool), send func([]byte)) int {
	lines, _ := providertest.FileLines(os.Getenv(envTranscript))
	results := map[int]json.RawMessage{}
	for _, l := range lines {
		var r providertest.TranscriptLine
		if json.Unmarshal(l, &r) != nil || r.Dir != "s2c" {
			continue
		}
		if m, err := jsonrpc.Decode(r.Msg); err == nil && m.Kind == jsonrpc.KindResponse && m.Result != nil {
			id, _ := strconv.Atoi(string(m.ID))
			results[id] = m.Result
		}
	}
	var models struct {
		Data []json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(results[2], &models)
	half := len(models.Data) / 2
	for {
		line, ok := readClient()
		if !ok {
			return 0
		}
		m, err := jsonrpc.Decode(line)
		if err != nil || m.Kind != jsonrpc.KindRequest {
			continue
		}
		var res any
		switch m.Method {
		case "initialize":
			res = results[1]
		case "model/list":
			var p struct {
				Cursor string `json:"cursor"`
			}
			_ = json.Unmarshal(m.Params, &p)
			if p.Cursor == "" {
				res = map[string]any{"data": models.Data[:half], "nextCursor": "page-2"}
			} else {
				res = map[string]any{"data": models.Data[half:], "nextCursor": nil}
			}
		case "collaborationMode/list":
			res = results[4]
		default:
			send(jsonrpc.EncodeError(m.ID, -32600, "unknown method"))
			continue
		}
		b, _ := json.Marshal(res)
		l, _ := jsonrpc.EncodeResult(m.ID, b)
		send(l)
	}
}

// fakeRun is one harness run against the fake.
type fakeRun struct {
	providertest.Result
	argv  []string
	env   []string
	stdin []json.RawMessage
}

// sent returns the client lines whose method is method ("" = responses).
func (f *fakeRun) sent(method string) []json.RawMessage {
	var out []json.RawMessage
	for _, l := range f.stdin {
		var v struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(l, &v) == nil && v.Method == method {
			out = append(out, l)
		}
	}
	return out
}

type fakeOpts struct {
	env      map[string]string
	opts     func(*Options)
	onEvent  func(ev agent.Event, cancel context.CancelFunc, answer func(agent.InteractionResponse))
	noAnswer bool // run without a Responses channel
}

func runFake(t *testing.T, transcript string, req agent.RunRequest, fo fakeOpts) *fakeRun {
	t.Helper()
	fake := providertest.SelfFake(t, envRecord, map[string]string{envFake: "1", envTranscript: providertest.Testdata(t, transcript)}, fo.env)
	req.Env = fake.Env
	req.ChatID, req.RunID = "chat-1", "run-1"
	opts := Options{
		Provider: "testprov", Label: "Test", ExitTimeout: 2 * time.Second, StartTimeout: 10 * time.Second,
		Launch: procrun.Launch{Bin: fake.Bin, StopGrace: time.Second,
			HostEnv: providertest.HostEnvWithBotSecrets("PATH=/usr/bin:/bin", "HOME=/home/nobody", "OPENAI_API_KEY=sk-host")},
	}
	if fo.opts != nil {
		fo.opts(&opts)
	}
	h := New(nil, opts)
	var responses chan agent.InteractionResponse
	if !fo.noAnswer {
		responses = make(chan agent.InteractionResponse, 8)
		req.Responses = responses
	}
	answer := func(r agent.InteractionResponse) {
		if responses == nil {
			t.Error("answer without a Responses channel")
			return
		}
		responses <- r
	}
	// providertest.Run bounds the run by its progress and checks that one
	// terminal event comes last and nothing after Run returned.
	f := &fakeRun{Result: *providertest.Run(t, h, req, func(ev agent.Event, cancel context.CancelFunc) {
		if fo.onEvent != nil {
			fo.onEvent(ev, cancel, answer)
		}
	})}
	rec := providertest.ReadRecord(t, fake.Record)
	f.argv, f.env, f.stdin = rec.Argv, rec.Env, rec.Stdin
	return f
}

// answerWith answers every interaction.requested with d (and answers).
func answerWith(d agent.Decision, answers map[string]string) func(agent.Event, context.CancelFunc, func(agent.InteractionResponse)) {
	return func(ev agent.Event, _ context.CancelFunc, answer func(agent.InteractionResponse)) {
		if ev.Type == agent.EventInteractionRequested {
			answer(agent.InteractionResponse{InteractionID: ev.Interaction.ID, Decision: d, Answers: answers, By: "alice"})
		}
	}
}

func TestRunText(t *testing.T) {
	f := runFake(t, "text.jsonl", agent.RunRequest{Prompt: "Say hello [text]", Cwd: t.TempDir()}, fakeOpts{
		opts: func(o *Options) { o.CodexHome = "/srv/codex-home"; o.Args = []string{"-c", "x=1"} },
	})
	if f.Err != nil {
		t.Fatal(f.Err)
	}
	if f.Text() != "Hello from the fake model. This is plain text." {
		t.Errorf("text %q", f.Text())
	}
	if l := f.Last(); l.Type != agent.EventRunCompleted || l.Text != "Hello from the fake model. This is plain text." || l.Native.Provider != "testprov" {
		t.Errorf("last %+v", l)
	}
	s := f.Of(agent.EventSessionUpdated)
	if len(s) != 1 || s[0].SessionID != "01a22afb-4cc2-7650-b466-92a916d43e6d" || s[0].Model != "fake-model" {
		t.Errorf("session.updated %+v", s)
	}
	if !slices.Equal(f.argv, []string{"-c", "x=1", "app-server"}) {
		t.Errorf("argv %q", f.argv)
	}
	providertest.CheckNoBotSecrets(t, f.env, "HOME=/home/nobody")
	if slices.ContainsFunc(f.env, func(kv string) bool { return strings.HasPrefix(kv, "OPENAI_API_KEY=") }) {
		t.Errorf("the host's API key reached the child: %q", f.env)
	}
	if !slices.Contains(f.env, "CODEX_HOME=/srv/codex-home") || !slices.Contains(f.env, "PATH=/usr/bin:/bin") {
		t.Errorf("child env %q", f.env)
	}
	init := f.sent("initialize")
	if len(init) != 1 || !bytes.Contains(init[0], []byte(`"capabilities":{"experimentalApi":true}`)) || !bytes.HasPrefix(init[0], []byte(`{"id":1,`)) {
		t.Errorf("initialize %s", init)
	}
	if len(f.sent("initialized")) != 1 {
		t.Error("no initialized notification")
	}
	ts := f.sent("thread/start")
	if len(ts) != 1 || !bytes.Contains(ts[0], []byte(`"approvalPolicy":"untrusted","sandbox":"workspace-write"`)) {
		t.Errorf("thread/start %s", ts)
	}
	turn := f.sent("turn/start")
	want := `{"id":3,"method":"turn/start","params":{"threadId":"01a22afb-4cc2-7650-b466-92a916d43e6d","input":[{"type":"text","text":"Say hello [text]"}],"collaborationMode":{"mode":"default","settings":{"model":"fake-model","reasoning_effort":null,"developer_instructions":null}}}}`
	if len(turn) != 1 || strings.TrimSpace(string(turn[0])) != want {
		t.Errorf("turn/start\n got %s\nwant %s", turn, want)
	}
}

// TestRunOwnCodexHome: a run's own CODEX_HOME (RunRequest.Env: a sandboxed
// run's, in its chat's agent state) wins over Options.CodexHome.
func TestRunOwnCodexHome(t *testing.T) {
	f := runFake(t, "text.jsonl", agent.RunRequest{Prompt: "Say hello [text]", Cwd: t.TempDir()}, fakeOpts{
		env:  map[string]string{"CODEX_HOME": "/state/chat/home/.codex"},
		opts: func(o *Options) { o.CodexHome = "/srv/codex-home" },
	})
	if f.Err != nil {
		t.Fatal(f.Err)
	}
	if !slices.Contains(f.env, "CODEX_HOME=/state/chat/home/.codex") || slices.Contains(f.env, "CODEX_HOME=/srv/codex-home") {
		t.Errorf("child env %q", f.env)
	}
}

// TestOverrides: the -c overrides say what config.toml says.
func TestOverrides(t *testing.T) {
	c := ProviderConfig{Model: "m", ID: "fake", Name: `Fake "F"`, BaseURL: "http://127.0.0.1:9/v1", EnvKey: "K", NoRetries: true}
	want := []string{"-c", `model_provider="fake"`, "-c", "check_for_update_on_startup=false",
		"-c", `model_providers.fake={name = "Fake \"F\"", base_url = "http://127.0.0.1:9/v1", env_key = "K", wire_api = "responses", request_max_retries = 0, stream_max_retries = 0}`,
		"-c", "features.plugins=false", "-c", "features.remote_plugin=false", "-c", "features.apps=false", "-c", "analytics.enabled=false"}
	if got := c.Overrides(); !slices.Equal(got, want) {
		t.Errorf("overrides\n%q\nwant\n%q", got, want)
	}
	for _, line := range []string{`model = "m"`, `model_provider = "fake"`, `name = "Fake \"F\""`, "request_max_retries = 0", "plugins = false", "enabled = false"} {
		if !strings.Contains(c.TOML(), line) {
			t.Errorf("config.toml lacks %s:\n%s", line, c.TOML())
		}
	}
}

func TestRunApprovals(t *testing.T) {
	tests := []struct {
		transcript string
		decision   agent.Decision
		answer     string
		status     string
		terminal   agent.EventType
	}{
		{"approve.jsonl", agent.DecisionApprove, `{"id":0,"result":{"decision":"accept"}}`, agent.StatusApproved, agent.EventRunCompleted},
		{"approve-session.jsonl", agent.DecisionApproveSession, `{"id":0,"result":{"decision":"acceptForSession"}}`, agent.StatusApprovedForSession, agent.EventRunCompleted},
		{"decline.jsonl", agent.DecisionDecline, `{"id":0,"result":{"decision":"decline"}}`, agent.StatusDeclined, agent.EventRunCompleted},
		{"cancel.jsonl", agent.DecisionCancel, `{"id":0,"result":{"decision":"cancel"}}`, agent.StatusCancelled, agent.EventRunInterrupted},
		{"patch-approve.jsonl", agent.DecisionApprove, `{"id":0,"result":{"decision":"accept"}}`, agent.StatusApproved, agent.EventRunCompleted},
	}
	for _, tt := range tests {
		t.Run(tt.transcript, func(t *testing.T) {
			f := runFake(t, tt.transcript, agent.RunRequest{Prompt: "x"}, fakeOpts{onEvent: answerWith(tt.decision, nil)})
			if f.Err != nil {
				t.Fatal(f.Err)
			}
			if f.Last().Type != tt.terminal {
				t.Errorf("last %+v", f.Last())
			}
			answers := f.sent("")
			if len(answers) != 1 || strings.TrimSpace(string(answers[0])) != tt.answer {
				t.Errorf("answers %s, want %s", answers, tt.answer)
			}
			req, res := f.Of(agent.EventInteractionRequested), f.Of(agent.EventInteractionResolved)
			if len(req) != 1 || len(res) != 1 {
				t.Fatalf("requested %d, resolved %d", len(req), len(res))
			}
			if r := res[0].Resolution; r.InteractionID != req[0].Interaction.ID || r.Status != tt.status || r.Decision != tt.decision || r.By != "alice" {
				t.Errorf("resolution %+v", r)
			}
			if string(res[0].Native.ID) != "0" {
				t.Errorf("native id %s", res[0].Native.ID)
			}
		})
	}
}

func TestRunQuestionInPlanMode(t *testing.T) {
	f := runFake(t, "ask.jsonl", agent.RunRequest{Prompt: "Ask me something [ask]", Mode: agent.ModePlan}, fakeOpts{
		onEvent: answerWith(agent.DecisionAnswer, map[string]string{"color": "Red (Recommended)"}),
	})
	if f.Err != nil || f.Last().Type != agent.EventRunCompleted {
		t.Fatalf("err %v, last %+v", f.Err, f.Last())
	}
	turn := f.sent("turn/start")
	if len(turn) != 1 || !bytes.Contains(turn[0], []byte(`"collaborationMode":{"mode":"plan","settings":{"model":"fake-model"`)) {
		t.Errorf("turn/start %s", turn)
	}
	want := `{"id":0,"result":{"answers":{"color":{"answers":["Red (Recommended)"]}}}}`
	if a := f.sent(""); len(a) != 1 || strings.TrimSpace(string(a[0])) != want {
		t.Errorf("answer %s", a)
	}
	if r := f.Of(agent.EventInteractionResolved); len(r) != 1 || r[0].Resolution.Status != agent.StatusAnswered {
		t.Errorf("resolved %+v", r)
	}
}

func TestRunMCPElicitations(t *testing.T) {
	f := runFake(t, "mcp-elicitation.jsonl", agent.RunRequest{Prompt: "x"}, fakeOpts{
		onEvent: func(ev agent.Event, _ context.CancelFunc, answer func(agent.InteractionResponse)) {
			if ev.Type != agent.EventInteractionRequested {
				return
			}
			if ev.Interaction.Options[0].ID == "approve" {
				answer(agent.InteractionResponse{InteractionID: ev.Interaction.ID, Decision: agent.DecisionApprove})
			} else {
				answer(agent.InteractionResponse{InteractionID: ev.Interaction.ID, Decision: agent.DecisionAnswer, Answers: map[string]string{"confirm": "yes"}})
			}
		},
	})
	if f.Err != nil || f.Last().Type != agent.EventRunCompleted {
		t.Fatalf("err %v, last %+v", f.Err, f.Last())
	}
	got := f.sent("")
	want := []string{`{"id":0,"result":{"action":"accept","content":{},"_meta":null}}`, `{"id":1,"result":{"action":"accept","content":{"confirm":true},"_meta":null}}`}
	if len(got) != 2 || strings.TrimSpace(string(got[0])) != want[0] || strings.TrimSpace(string(got[1])) != want[1] {
		t.Errorf("answers %s", got)
	}
}

func TestRunDynamicToolCall(t *testing.T) {
	f := runFake(t, "dynamic-tool.jsonl", agent.RunRequest{Prompt: "x"}, fakeOpts{
		onEvent: answerWith(agent.DecisionAnswer, map[string]string{AnswerOutput: "T-42: deploy blocked (status=open)"}),
	})
	if f.Err != nil || f.Last().Type != agent.EventRunCompleted {
		t.Fatalf("err %v, last %+v", f.Err, f.Last())
	}
	want := `{"id":0,"result":{"contentItems":[{"type":"inputText","text":"T-42: deploy blocked (status=open)"}],"success":true}}`
	if a := f.sent(""); len(a) != 1 || strings.TrimSpace(string(a[0])) != want {
		t.Errorf("answer %s", a)
	}
	// No serverRequest/resolved comes for item/tool/call: our answer closed it.
	if r := f.Of(agent.EventInteractionResolved); len(r) != 1 || r[0].Resolution.Status != agent.StatusAnswered {
		t.Errorf("resolved %+v", r)
	}
}

func TestRunUnknownServerRequest(t *testing.T) {
	inject := `{"method":"x/future/ask","id":41,"params":{"q":1}}`
	t.Run("answered with JSON", func(t *testing.T) {
		f := runFake(t, "text.jsonl", agent.RunRequest{Prompt: "x"}, fakeOpts{
			env:     map[string]string{envInject: inject},
			onEvent: answerWith(agent.DecisionAnswer, map[string]string{AnswerJSON: `{"ok": true}`}),
		})
		if f.Err != nil || f.Last().Type != agent.EventRunCompleted {
			t.Fatalf("err %v, last %+v", f.Err, f.Last())
		}
		req := f.Of(agent.EventInteractionRequested)
		if len(req) != 1 || req[0].Interaction.Kind != agent.KindUnknown || string(req[0].Interaction.NativeID) != "41" {
			t.Errorf("requested %+v", req)
		}
		if a := f.sent(""); len(a) != 1 || strings.TrimSpace(string(a[0])) != `{"id":41,"result":{"ok":true}}` {
			t.Errorf("answer %s", a)
		}
	})
	t.Run("invalid JSON keeps it pending, decline replies an error", func(t *testing.T) {
		tries := 0
		f := runFake(t, "text.jsonl", agent.RunRequest{Prompt: "x"}, fakeOpts{
			env: map[string]string{envInject: inject},
			onEvent: func(ev agent.Event, _ context.CancelFunc, answer func(agent.InteractionResponse)) {
				if ev.Type == agent.EventInteractionRequested {
					tries++
					answer(agent.InteractionResponse{InteractionID: "rpc-999", Decision: agent.DecisionDecline})
					answer(agent.InteractionResponse{InteractionID: ev.Interaction.ID, Decision: agent.DecisionAnswer, Answers: map[string]string{AnswerJSON: `{bad`}})
					answer(agent.InteractionResponse{InteractionID: ev.Interaction.ID, Decision: agent.DecisionDecline})
				}
			},
		})
		if f.Err != nil || f.Last().Type != agent.EventRunCompleted {
			t.Fatalf("err %v, last %+v", f.Err, f.Last())
		}
		a := f.sent("")
		if len(a) != 1 || strings.TrimSpace(string(a[0])) != `{"id":41,"error":{"code":-32000,"message":"declined by the user"}}` {
			t.Errorf("answers %s", a)
		}
		if r := f.Of(agent.EventInteractionResolved); len(r) != 1 || r[0].Resolution.Status != agent.StatusDeclined {
			t.Errorf("resolved %+v", r)
		}
	})
	t.Run("policy replies method not found", func(t *testing.T) {
		f := runFake(t, "text.jsonl", agent.RunRequest{Prompt: "x", Approval: agent.ApprovalAccept}, fakeOpts{
			env: map[string]string{envInject: inject}, noAnswer: true,
		})
		if f.Err != nil {
			t.Fatal(f.Err)
		}
		if a := f.sent(""); len(a) != 1 || strings.TrimSpace(string(a[0])) != `{"id":41,"error":{"code":-32601,"message":"unsupported request: x/future/ask"}}` {
			t.Errorf("answer %s", a)
		}
		if r := f.Of(agent.EventInteractionResolved); len(r) != 1 || r[0].Resolution.By != ByPolicy {
			t.Errorf("resolved %+v", r)
		}
	})
}

func TestRunPolicyAnswers(t *testing.T) {
	for _, tt := range []struct {
		approval agent.ApprovalPolicy
		answer   string
		status   string
	}{
		{agent.ApprovalAccept, `{"id":0,"result":{"decision":"accept"}}`, agent.StatusApproved},
		{agent.ApprovalDeny, `{"id":0,"result":{"decision":"decline"}}`, agent.StatusDeclined},
		{"", `{"id":0,"result":{"decision":"decline"}}`, agent.StatusDeclined}, // ask, but nobody can be asked
	} {
		t.Run(string(tt.approval), func(t *testing.T) {
			f := runFake(t, "approve.jsonl", agent.RunRequest{Prompt: "x", Approval: tt.approval}, fakeOpts{noAnswer: true})
			if f.Err != nil {
				t.Fatal(f.Err)
			}
			if a := f.sent(""); len(a) != 1 || strings.TrimSpace(string(a[0])) != tt.answer {
				t.Errorf("answer %s", a)
			}
			req, res := f.Of(agent.EventInteractionRequested), f.Of(agent.EventInteractionResolved)
			if len(req) != 1 || len(res) != 1 || res[0].Resolution.Status != tt.status || res[0].Resolution.By != ByPolicy {
				t.Errorf("requested %d, resolved %+v", len(req), res)
			}
		})
	}
}

func TestRunDuplicateRequestIDFails(t *testing.T) {
	f := runFake(t, "approve.jsonl", agent.RunRequest{Prompt: "x"}, fakeOpts{env: map[string]string{envDup: "1"}})
	if !errors.Is(f.Err, agent.ErrRunFailed) || !errors.Is(f.Err, agent.ErrDuplicateRequest) {
		t.Fatalf("err %v", f.Err)
	}
	if l := f.Last(); l.Type != agent.EventRunFailed || !strings.Contains(l.Text, agent.ErrDuplicateRequest.Error()) {
		t.Errorf("last %+v", l)
	}
	if n := len(f.Of(agent.EventInteractionRequested)); n != 1 {
		t.Errorf("%d interactions requested", n)
	}
	// The pending request is closed before the terminal event.
	if r := f.Of(agent.EventInteractionResolved); len(r) != 1 || r[0].Resolution.Status != agent.StatusTurnEnded {
		t.Errorf("resolved %+v", r)
	}
}

func TestRunSkipsMalformedLines(t *testing.T) {
	f := runFake(t, "text.jsonl", agent.RunRequest{Prompt: "x"}, fakeOpts{env: map[string]string{envNoise: "1"}})
	if f.Err != nil || f.Last().Type != agent.EventRunCompleted || f.Text() != "Hello from the fake model. This is plain text." {
		t.Fatalf("err %v, events %v", f.Err, f.Types())
	}
	if f.Events[0].Type != agent.EventSystem || f.Events[0].Subtype != "warning" {
		t.Errorf("noise produced events: %+v", f.Events[0])
	}
}

func TestRunProcessDiesMidTurn(t *testing.T) {
	// Line 16 of text.jsonl's server side is the third agent message delta.
	f := runFake(t, "text.jsonl", agent.RunRequest{Prompt: "x"}, fakeOpts{env: map[string]string{envDieAfter: "16"}})
	if !errors.Is(f.Err, agent.ErrRunFailed) {
		t.Fatalf("err %v", f.Err)
	}
	l := f.Last()
	if l.Type != agent.EventRunFailed || !strings.Contains(l.Text, "exited before the turn completed") || !strings.Contains(l.Text, "boom: the app-server crashed") {
		t.Errorf("last %+v", l)
	}
	if f.Text() == "" || f.Of(agent.EventRunCompleted) != nil {
		t.Errorf("text %q, events %v", f.Text(), f.Types())
	}
}

func TestRunInterrupt(t *testing.T) {
	f := runFake(t, "interrupt.jsonl", agent.RunRequest{Prompt: "x"}, fakeOpts{
		onEvent: func(ev agent.Event, cancel context.CancelFunc, _ func(agent.InteractionResponse)) {
			if ev.Type == agent.EventAssistantDelta {
				cancel()
			}
		},
	})
	if f.Err != nil || f.Last().Type != agent.EventRunInterrupted || f.Last().Text != "interrupted" {
		t.Fatalf("err %v, last %+v", f.Err, f.Last())
	}
	want := `{"id":4,"method":"turn/interrupt","params":{"threadId":"01a22afb-89ce-7c40-bdcf-a3587a1688ae","turnId":"01a22afb-89e1-7951-9c40-4444205ff6da"}}`
	if got := f.sent("turn/interrupt"); len(got) != 1 || strings.TrimSpace(string(got[0])) != want {
		t.Errorf("interrupt %s", got)
	}
}

func TestRunInterruptDeadlineKills(t *testing.T) {
	f := runFake(t, "interrupt.jsonl", agent.RunRequest{Prompt: "x"}, fakeOpts{
		env: map[string]string{envHang: "1"},
		onEvent: func(ev agent.Event, cancel context.CancelFunc, _ func(agent.InteractionResponse)) {
			if ev.Type == agent.EventAssistantDelta {
				cancel()
			}
		},
	})
	if f.Err != nil {
		t.Fatalf("err %v", f.Err)
	}
	if l := f.Last(); l.Type != agent.EventRunInterrupted || !strings.Contains(l.Text, "killed after the interrupt deadline") {
		t.Errorf("last %+v", l)
	}
	if len(f.sent("turn/interrupt")) != 1 {
		t.Error("no single turn/interrupt")
	}
	if f.Elapsed > 8*time.Second {
		t.Errorf("took %s with a 1 s interrupt deadline", f.Elapsed)
	}
}

func TestRunInterruptWithPendingApproval(t *testing.T) {
	f := runFake(t, "interrupt-approval.jsonl", agent.RunRequest{Prompt: "x"}, fakeOpts{
		onEvent: func(ev agent.Event, cancel context.CancelFunc, _ func(agent.InteractionResponse)) {
			if ev.Type == agent.EventInteractionRequested {
				cancel()
			}
		},
	})
	if f.Err != nil || f.Last().Type != agent.EventRunInterrupted {
		t.Fatalf("err %v, last %+v", f.Err, f.Last())
	}
	res := f.Of(agent.EventInteractionResolved)
	if len(res) != 1 || res[0].Resolution.Status != agent.StatusTurnEnded {
		t.Errorf("resolved %+v", res)
	}
	if len(f.sent("")) != 0 {
		t.Errorf("something answered the request: %s", f.sent(""))
	}
}

func TestRunCancelBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var evs []agent.Event
	err := New(nil, Options{Provider: "p", Launch: procrun.Launch{Bin: "/nonexistent"}}).Run(ctx, agent.RunRequest{Prompt: "x"}, func(ev agent.Event) { evs = append(evs, ev) })
	if err != nil || len(evs) != 1 || evs[0].Type != agent.EventRunInterrupted {
		t.Fatalf("err %v, events %+v", err, evs)
	}
}

func TestRunNotInstalled(t *testing.T) {
	const hint = "npm install -g @example/app-server"
	providertest.CheckNotInstalled(t, func(bin string) *Harness {
		return New(nil, Options{Provider: "p", Launch: procrun.Launch{Bin: bin}, InstallHint: hint})
	}, "(install: "+hint+")")
}

func TestRunResumeMissingThread(t *testing.T) {
	f := runFake(t, "resume-missing.jsonl", agent.RunRequest{Prompt: "x", ResumeID: "8d6bec71-ca4b-471f-b230-a7fc02bcf0c8"}, fakeOpts{})
	if !errors.Is(f.Err, agent.ErrSessionNotFound) || errors.Is(f.Err, agent.ErrRunFailed) {
		t.Fatalf("err %v", f.Err)
	}
	for _, ev := range f.Events {
		if ev.Type.Terminal() || ev.Type == agent.EventSessionUpdated {
			t.Errorf("event %s for a missing thread", ev.Type)
		}
	}
	r := f.sent("thread/resume")
	if len(r) != 1 || !bytes.Contains(r[0], []byte(`"threadId":"8d6bec71-ca4b-471f-b230-a7fc02bcf0c8"`)) || !bytes.Contains(r[0], []byte(`"excludeTurns":true`)) {
		t.Errorf("thread/resume %s", r)
	}
	if len(f.sent("turn/start")) != 0 {
		t.Error("turn/start after a missing thread")
	}
}

func TestRunResumeAndFork(t *testing.T) {
	const src = "01a22afb-54d3-7ad1-b062-e100d14532e8"
	t.Run("resume", func(t *testing.T) {
		f := runFake(t, "resume.jsonl", agent.RunRequest{Prompt: "Continue please [text]", ResumeID: src}, fakeOpts{})
		if f.Err != nil || f.Last().Type != agent.EventRunCompleted {
			t.Fatalf("err %v, last %+v", f.Err, f.Last())
		}
		// The same thread, reported once for the model the agent runs.
		if s := f.Of(agent.EventSessionUpdated); len(s) != 1 || s[0].SessionID != src || s[0].Model != "fake-model" {
			t.Errorf("session.updated on resuming the same thread: %+v", s)
		}
		u := f.Of(agent.EventUsageUpdated)
		if len(u) != 1 || u[0].Usage.InputTokens != 120 {
			t.Errorf("usage %+v (the restored totals must not count)", u)
		}
	})
	t.Run("fork", func(t *testing.T) {
		f := runFake(t, "fork.jsonl", agent.RunRequest{Prompt: "Continue in the fork [text]", ResumeID: src, Fork: true}, fakeOpts{})
		if f.Err != nil || f.Last().Type != agent.EventRunCompleted {
			t.Fatalf("err %v, last %+v", f.Err, f.Last())
		}
		if s := f.Of(agent.EventSessionUpdated); len(s) != 1 || s[0].SessionID != "01a22afc-2592-7283-92ed-3cdbf1e97716" {
			t.Errorf("session.updated %+v", s)
		}
		if r := f.sent("thread/fork"); len(r) != 1 || !bytes.Contains(r[0], []byte(src)) {
			t.Errorf("thread/fork %s", r)
		}
	})
}

func TestRunTurnFailed(t *testing.T) {
	f := runFake(t, "error.jsonl", agent.RunRequest{Prompt: "x"}, fakeOpts{})
	if !errors.Is(f.Err, agent.ErrRunFailed) || !strings.Contains(f.Err.Error(), "fake server: scripted bad request") {
		t.Fatalf("err %v", f.Err)
	}
	if l := f.Last(); l.Type != agent.EventRunFailed || l.Text != "fake server: scripted bad request" {
		t.Errorf("last %+v", l)
	}
}

// TestRunMCPServers: the run's MCP servers reach thread/start once, under
// their own dotted config keys beside the options' config, with their env;
// nothing of them is on the command line.
func TestRunMCPServers(t *testing.T) {
	srv := agent.MCPServer{Name: "threadline", Command: "/opt/threadline/threadline-mcp",
		Env: []agent.EnvVar{{Key: "THREADLINE_TOOLS_SOCKET", Value: "/tmp/t/s"}, {Key: "THREADLINE_TOOLS_TOKEN", Value: "tok-1"}}}
	f := runFake(t, "text.jsonl", agent.RunRequest{Prompt: "Say hello [text]", Cwd: t.TempDir(), MCPServers: []agent.MCPServer{srv}}, fakeOpts{
		opts: func(o *Options) { o.Config = map[string]any{"x": 1} },
	})
	if f.Err != nil {
		t.Fatal(f.Err)
	}
	ts := f.sent("thread/start")
	want := `"config":{"mcp_servers.threadline.args":[],"mcp_servers.threadline.command":"/opt/threadline/threadline-mcp",` +
		`"mcp_servers.threadline.env":{"THREADLINE_TOOLS_SOCKET":"/tmp/t/s","THREADLINE_TOOLS_TOKEN":"tok-1"},"x":1}`
	if len(ts) != 1 || bytes.Count(ts[0], []byte("mcp_servers.threadline.command")) != 1 || !bytes.Contains(ts[0], []byte(want)) {
		t.Errorf("thread/start %s", ts)
	}
	if strings.Contains(strings.Join(f.argv, " "), "tok-1") || strings.Contains(strings.Join(f.argv, " "), "mcp") {
		t.Errorf("argv %q", f.argv)
	}
}
