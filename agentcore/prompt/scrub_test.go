package prompt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// setupScrubbed is setup with a scrubber and the store's ledger.
func setupScrubbed(t *testing.T, st *store.Store, sc prompt.Scrubber) *fixture {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	hub := runhub.New(st, log, runhub.Options{Owner: "test"})
	t.Cleanup(func() { hub.Close() })
	prov := &scripted{}
	svc := prompt.New(hub, chats{st}, st, []agent.Provider{prov}, log, prompt.Options{
		Owner: "test", Scrubber: sc, Ledger: ledger{st}, Approval: agent.ApprovalDeny,
	})
	c := store.Chat{ID: fmt.Sprintf("chat-%d", time.Now().UnixNano()), Agent: "fake", Mode: "default", Cwd: t.TempDir()}
	if err := st.CreateChat(t.Context(), &c); err != nil {
		t.Fatal(err)
	}
	return &fixture{st: st, hub: hub, svc: svc, prov: prov, chat: agent.ChatID(c.ID)}
}

// allRows returns every column of every row of the tables as text.
func allRows(t *testing.T, st *store.Store, tables ...string) string {
	t.Helper()
	var b strings.Builder
	for _, tb := range tables {
		rows, err := st.DB().QueryxContext(t.Context(), "SELECT * FROM "+tb)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			m := map[string]any{}
			if err := rows.MapScan(m); err != nil {
				t.Fatal(err)
			}
			for k, v := range m {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, "%s.%s=%v\n", tb, k, v)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		_ = rows.Close()
	}
	return b.String()
}

// TestScrubbedEvents: a secret the agent streams split over deltas, prints in
// tool input and output, asks about and carries in a native payload reaches no
// row of the database, and the persisted text is the original with the secret
// masked, in order, with nothing lost.
func TestScrubbedEvents(t *testing.T) {
	const secret = "sk-ant-api03-PLANTEDsecret42"
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		red := redact.New("other-secret-value")
		f := setupScrubbed(t, st, red)
		red.Add(secret) // added at run time, as a project's secrets are
		half := len(secret) / 2
		f.prov.turns = append(f.prov.turns, func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
			emit(agent.Event{Type: agent.EventSessionUpdated, SessionID: "s1"})
			emit(agent.Event{Type: agent.EventReasoningDelta, Text: "thinking about " + secret[:3]})
			emit(agent.Event{Type: agent.EventReasoningDelta, Text: secret[3:] + " hmm"})
			emit(agent.Event{Type: agent.EventAssistantDelta, Text: "The key is " + secret[:half]})
			emit(agent.Event{Type: agent.EventAssistantDelta, Text: secret[half:] + ". Checking s"})
			in, _ := json.Marshal(map[string]string{"command": "echo " + secret})
			emit(agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t1", Name: "Bash", Input: in, Summary: "Bash: echo " + secret}})
			emit(agent.Event{Type: agent.EventToolOutput, Tool: &agent.Tool{ID: "t1"}, Text: "out: " + secret[:5]})
			emit(agent.Event{Type: agent.EventToolOutput, Tool: &agent.Tool{ID: "t1"}, Text: secret[5:20]})
			emit(agent.Event{Type: agent.EventToolOutput, Tool: &agent.Tool{ID: "t1"}, Text: secret[20:] + "\n"})
			emit(agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "t1", Output: "out: " + secret + "\n"}})
			emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{
				ID: "i1", NativeID: json.RawMessage(`"n1"`), Kind: agent.KindCommandApproval, Title: "Run " + secret + "?",
				Command: "curl -H 'x-api-key: " + secret + "'", Payload: in,
				Questions: []agent.Question{{ID: "q", Text: "Use " + secret + "?", Options: []string{secret}}},
			}})
			emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: "i1", Status: agent.StatusDeclined}})
			payload, _ := json.Marshal(map[string]any{"raw": "line with " + secret, "n": 3})
			emit(agent.Event{Type: agent.EventProviderNative, Native: &agent.Native{Provider: "fake", Kind: "x", Payload: payload}})
			emit(agent.Event{Type: agent.EventAssistantDelta, Text: "ure. Done: " + secret[:10]})
			emit(agent.Event{Type: agent.EventRunCompleted, Text: "The key is " + secret + "."})
			return nil
		})
		r := f.run(t, "please print "+secret)
		if r.Status() != runhub.StatusCompleted {
			t.Fatalf("status %s: %v", r.Status(), r.Err())
		}
		dump := allRows(t, st, "chat_events", "interactions", "runs")
		if strings.Contains(dump, secret) {
			t.Fatalf("the secret is in the database:\n%s", dump)
		}
		for _, part := range []string{secret[:half], secret[half:], secret[5:20], secret[20:], secret[3:]} {
			if strings.Contains(dump, part) {
				t.Errorf("part %q of the secret is in the database", part)
			}
		}
		evs, err := st.EventsAfter(t.Context(), f.chat, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var assistant, reasoning, output strings.Builder
		var types []string
		for _, e := range evs {
			if !json.Valid(e.Payload) {
				t.Errorf("%s payload is not JSON: %s", e.Type, e.Payload)
			}
			var ev agent.Event
			_ = json.Unmarshal(e.Payload, &ev)
			switch agent.EventType(e.Type) {
			case agent.EventAssistantDelta:
				assistant.WriteString(ev.Text)
			case agent.EventReasoningDelta:
				reasoning.WriteString(ev.Text)
			case agent.EventToolOutput:
				output.WriteString(ev.Text)
			}
			if len(types) == 0 || types[len(types)-1] != e.Type {
				types = append(types, e.Type)
			}
		}
		m := redact.Mask
		if got, want := assistant.String(), "The key is "+m+". Checking sure. Done: "+secret[:10]; got != want {
			t.Errorf("assistant text %q, want %q", got, want)
		}
		if got, want := reasoning.String(), "thinking about "+m+" hmm"; got != want {
			t.Errorf("reasoning %q, want %q", got, want)
		}
		if got, want := output.String(), "out: "+m+"\n"; got != want {
			t.Errorf("tool output %q, want %q", got, want)
		}
		// Held text comes out before the next event, so the order stays.
		want := []string{"user.message", "run.started", "session.updated", "reasoning.delta", "assistant.delta",
			"tool.started", "tool.output", "tool.completed", "interaction.requested", "interaction.resolved",
			"provider.native", "assistant.delta", "run.completed"}
		if strings.Join(types, " ") != strings.Join(want, " ") {
			t.Errorf("event order\n got %v\nwant %v", types, want)
		}
		if !strings.Contains(dump, "please print "+m) || !strings.Contains(dump, "x-api-key: "+m) || !strings.Contains(dump, `"raw":"line with `+m+`"`) {
			t.Errorf("masked texts missing:\n%s", dump)
		}
		// The session id is kept, so the next turn resumes.
		if c, err := st.GetChat(t.Context(), string(f.chat)); err != nil || c.Sessions["fake"] != "s1" {
			t.Errorf("session %v %v", c.Sessions, err)
		}
	})
}

// TestScrubbedRunEnd: text held back when the provider ends without a
// terminal event (or fails) is still persisted, before the service's own end.
func TestScrubbedRunEnd(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		f := setupScrubbed(t, st, redact.New("zzzz-secret-token"))
		f.prov.turns = append(f.prov.turns, func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
			emit(agent.Event{Type: agent.EventAssistantDelta, Text: "almost a secret: zzzz-sec"})
			return fmt.Errorf("%w: crashed printing zzzz-secret-token", agent.ErrRunFailed)
		})
		f.run(t, "go")
		evs, err := st.EventsAfter(t.Context(), f.chat, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs {
			var ev agent.Event
			_ = json.Unmarshal(e.Payload, &ev)
			got = append(got, e.Type+":"+ev.Text)
		}
		want := []string{"assistant.delta:almost a secret: ", "assistant.delta:zzzz-sec", "run.failed:fake exit: agent run failed: crashed printing " + redact.Mask}
		if g := strings.Join(got[2:], "|"); g != strings.Join(want, "|") {
			t.Errorf("events\n got %q\nwant %q", got[2:], want)
		}
	})
}

// TestUnscrubbed: without a scrubber, events are persisted as they come.
func TestUnscrubbed(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setupScrubbed(t, st, nil)
	f.prov.turns = append(f.prov.turns, answer("s", "a zzzz", "-secret-token"))
	f.run(t, "go")
	if dump := allRows(t, st, "chat_events"); !strings.Contains(dump, `"text":"a zzzz"`) {
		t.Errorf("events changed without a scrubber:\n%s", dump)
	}
}

// TestScrubbedCutSecrets: providers shorten tool summaries, outputs,
// approval titles and stderr tails before the service scrubs them; a secret
// cut at any byte leaves no piece of MinCutLen bytes or more in the database,
// whichever field carried it.
func TestScrubbedCutSecrets(t *testing.T) {
	const secret = "sk-Qz9XkWv7PlRt5MnBv3Yh"
	const line = "curl -H 'x-api-key: " + secret + "' https://api.example"
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		f := setupScrubbed(t, st, redact.New(secret))
		f.prov.turns = append(f.prov.turns, func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
			for n := 1; n < len(line); n++ {
				id := fmt.Sprintf("t%d", n)
				head, tail := agent.Truncate(line, n), procrun.StderrTail(line, n)
				emit(agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: id, Name: "Bash", Summary: head}})
				emit(agent.Event{Type: agent.EventToolOutput, Tool: &agent.Tool{ID: id}, Text: head})
				emit(agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: id, Output: tail}})
				emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{
					ID: "i" + id, Kind: agent.KindCommandApproval, Title: head, Command: tail,
				}})
				emit(agent.Event{Type: agent.EventSystem, Subtype: "stderr", Text: "exit status 1: " + tail})
			}
			return fmt.Errorf("%w: %s", agent.ErrRunFailed, procrun.StderrTail(line, len(line)-30))
		})
		f.run(t, "go")
		dump := allRows(t, st, "chat_events", "interactions", "runs")
		for k := len(secret); k >= redact.MinCutLen; k-- {
			for i := 0; i+k <= len(secret); i++ {
				if p := secret[i : i+k]; strings.Contains(dump, p) {
					t.Fatalf("piece %q of the secret is in the database:\n%s", p, dump)
				}
			}
		}
		if !strings.Contains(dump, "x-api-key: "+redact.Mask+"…") || !strings.Contains(dump, "…"+redact.Mask+"' https://api.example") {
			t.Errorf("masked cut texts missing:\n%s", dump)
		}
	})
}
