// Parser unit tests and the parser fuzz test.

package pi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/providertest"
)

func TestParseMalformedAndUnknown(t *testing.T) {
	p := NewParser("")
	for _, bad := range []string{"not json", `{"type":`, `[1]`} {
		if _, err := p.Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
	evs := providertest.MustParse(t, p, `{"type":"brand_new","x":1}`)
	if len(evs) != 1 || evs[0].Type != agent.EventProviderNative || string(evs[0].Native.Payload) != `{"type":"brand_new","x":1}` {
		t.Fatalf("unknown = %+v", evs)
	}
	big := `{"type":"brand_new","pad":"` + strings.Repeat("x", MaxNativePayload) + `"}`
	if evs := providertest.MustParse(t, p, big); !strings.Contains(string(evs[0].Native.Payload), `"truncated":true`) {
		t.Fatalf("payload not bounded")
	}
	// A confirm dialog's "message" is a string, an AgentMessage elsewhere.
	if evs := providertest.MustParse(t, p, `{"type":"message_end","message":"odd"}`); len(evs) != 1 || evs[0].Type != agent.EventProviderNative {
		t.Fatalf("odd message_end = %+v", evs)
	}
}

func TestParseSessionOnlyWhenChanged(t *testing.T) {
	p := NewParser("/s/a.jsonl")
	state := `{"id":"x","type":"response","command":"get_state","success":true,"data":{"sessionId":"u","sessionFile":"%s","model":{"id":"m","provider":"p"}}}`
	if evs := providertest.MustParse(t, p, strings.Replace(state, "%s", "/s/a.jsonl", 1)); len(evs) != 0 {
		t.Fatalf("same session emitted %+v", evs)
	}
	evs := providertest.MustParse(t, p, strings.Replace(state, "%s", "/s/b.jsonl", 1))
	if len(evs) != 1 || evs[0].SessionID != "/s/b.jsonl" || evs[0].Model != "p/m" {
		t.Fatalf("new session = %+v", evs)
	}
	// --no-session: no file, the id is used.
	evs = providertest.MustParse(t, p, strings.Replace(state, `"sessionFile":"%s",`, "", 1))
	if len(evs) != 1 || evs[0].SessionID != "u" {
		t.Fatalf("no file = %+v", evs)
	}
}

func TestParseRetryWindow(t *testing.T) {
	p := NewParser("")
	p.StartTurn("p1")
	end := `{"type":"agent_end","messages":[{"role":"assistant","content":[],"stopReason":"error","errorMessage":"boom"}]}`
	if evs := providertest.MustParse(t, p, end); len(evs) != 0 || !p.PendingFailure() {
		t.Fatalf("a failed agent_end must wait: %+v", evs)
	}
	providertest.MustParse(t, p, `{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"boom"}`)
	if p.PendingFailure() || !p.Retrying() {
		t.Fatal("auto_retry_start must cancel the pending failure")
	}
	providertest.MustParse(t, p, end)
	evs := p.Settle()
	if len(evs) != 1 || evs[0].Type != agent.EventRunFailed || evs[0].Text != "boom" {
		t.Fatalf("settled %+v", evs)
	}
	if p.Settle() != nil || providertest.MustParse(t, p, `{"type":"auto_retry_end","success":false,"finalError":"boom"}`) != nil {
		t.Fatal("a second terminal")
	}
	// Interrupting turns a failure into an interruption.
	p.StartTurn("p2")
	p.Interrupting = true
	if evs := providertest.MustParse(t, p, end); len(evs) != 1 || evs[0].Type != agent.EventRunInterrupted {
		t.Fatalf("interrupting: %+v", evs)
	}
}

func TestParsePromptResponses(t *testing.T) {
	p := NewParser("")
	p.StartTurn("p1")
	if evs := providertest.MustParse(t, p, `{"id":"other","type":"response","command":"prompt","success":false,"error":"busy"}`); len(evs) != 1 || evs[0].Type != agent.EventSystem {
		t.Fatalf("another prompt's failure = %+v", evs)
	}
	evs := providertest.MustParse(t, p, `{"id":"p1","type":"response","command":"prompt","success":false,"error":"busy"}`)
	if len(evs) != 1 || evs[0].Type != agent.EventRunFailed || evs[0].Text != "pi refused the prompt: busy" {
		t.Fatalf("own prompt failure = %+v", evs)
	}
}

func TestParseDialogs(t *testing.T) {
	p := NewParser("")
	p.StartTurn("p1")
	evs := providertest.MustParse(t, p, `{"type":"extension_ui_request","id":"s1","method":"select","title":"Pick","options":["A","B"]}`)
	in := evs[0].Interaction
	if in.Kind != agent.KindQuestion || len(in.Options) != 3 || in.Questions[0].Options[1] != "B" {
		t.Fatalf("select = %+v", in)
	}
	ev, err := p.Respond(agent.InteractionResponse{InteractionID: "s1", OptionID: "B", Decision: agent.DecisionAnswer})
	if err != nil || ev.Resolution.Status != agent.StatusAnswered {
		t.Fatalf("%+v %v", ev, err)
	}
	if out := p.TakeOutgoing(); len(out) != 1 || string(out[0]) != `{"id":"s1","type":"extension_ui_response","value":"B"}` {
		t.Fatalf("answer %s", out)
	}
	providertest.MustParse(t, p, `{"type":"extension_ui_request","id":"i1","method":"input","title":"Name?"}`)
	if _, err := p.Parse([]byte(`{"type":"extension_ui_request","id":"i1","method":"input","title":"Name?"}`)); !errors.Is(err, agent.ErrDuplicateRequest) {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := p.Respond(agent.InteractionResponse{InteractionID: "nope"}); !errors.Is(err, agent.ErrUnknownInteraction) {
		t.Fatalf("unknown: %v", err)
	}
	// The run ends with the input open: it resolves turn_ended and pi is told cancelled.
	evs = providertest.MustParse(t, p, `{"type":"agent_end","messages":[{"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"stop"}]}`)
	if evs[0].Type != agent.EventInteractionResolved || evs[0].Resolution.Status != agent.StatusTurnEnded || evs[len(evs)-1].Type != agent.EventRunCompleted {
		t.Fatalf("end = %+v", evs)
	}
	if out := p.TakeOutgoing(); len(out) != 1 || string(out[0]) != `{"cancelled":true,"id":"i1","type":"extension_ui_response"}` {
		t.Fatalf("turn end answer %s", out)
	}
	if evs := providertest.MustParse(t, p, `{"type":"extension_ui_request","id":"n","method":"notify","message":"hi"}`); evs[0].Type != agent.EventProviderNative {
		t.Fatalf("notify = %+v", evs)
	}
}

func TestArgs(t *testing.T) {
	accept := agent.RunRequest{Approval: agent.ApprovalAccept}
	if got := strings.Join(Args(accept), " "); got != "--mode rpc" {
		t.Errorf("accept: %s", got)
	}
	req := agent.RunRequest{ResumeID: "/s/x.jsonl", Model: "p/m", Effort: "low", Args: []string{"--no-skills"}}
	if got := strings.Join(Args(req), " "); got != "--mode rpc --session /s/x.jsonl --model p/m --thinking low --tools read,grep,find,ls --no-skills" {
		t.Errorf("args: %s", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, in := range providertest.Inputs(f, "testdata/*.jsonl") {
		for _, l := range providertest.Messages(f, in, "recv") {
			if len(l) < 64<<10 {
				f.Add(l)
			}
		}
	}
	f.Add([]byte(`{"type":"extension_ui_request","id":"d","method":"confirm","title":"t","message":"m"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		p := NewParser("")
		p.StartTurn("p")
		evs, _ := p.Parse(line)
		providertest.CheckFuzzEvents(t, evs, providertest.FuzzLimits{NativePayload: MaxNativePayload}, func(r agent.InteractionResponse) error {
			_, err := p.Respond(r)
			return err
		})
		p.Settle()
		p.EndPending()
		for _, o := range p.TakeOutgoing() {
			if !json.Valid(o) {
				t.Fatalf("invalid outgoing %q", o)
			}
		}
	})
}
