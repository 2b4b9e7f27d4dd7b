package chatlog_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
)

type rec struct {
	typ     string
	payload []byte
}

func user(text string) rec {
	b, _ := json.Marshal(chatlog.UserMessage{Text: text, By: "u1"})
	return rec{chatlog.TypeUserMessage, b}
}

func ev(e agent.Event) rec {
	b, _ := json.Marshal(e)
	return rec{string(e.Type), b}
}

func delta(text string) rec { return ev(agent.Event{Type: agent.EventAssistantDelta, Text: text}) }
func tool() rec {
	return ev(agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}})
}

func fold(recs []rec) *chatlog.Fold {
	var f chatlog.Fold
	for _, r := range recs {
		f.Add(r.typ, r.payload)
	}
	return &f
}

func backward(recs []rec) (string, int) {
	var b chatlog.Backward
	read := 0
	for i := len(recs) - 1; i >= 0; i-- {
		read++
		if b.Add(recs[i].typ, recs[i].payload) {
			break
		}
	}
	return b.Transcript(), read
}

func TestDecode(t *testing.T) {
	en, err := chatlog.Decode(user("hi").typ, user("hi").payload)
	if err != nil || en.User == nil || en.User.Text != "hi" || en.User.By != "u1" || en.Agent.Type != chatlog.TypeUserMessage {
		t.Fatalf("user.message: %+v %v", en, err)
	}
	rs, _ := json.Marshal(chatlog.RunStarted{Type: agent.EventRunStarted, Agent: "claude", Model: "opus", By: "u1"})
	en, err = chatlog.Decode(chatlog.TypeRunStarted, rs)
	if err != nil || en.Run == nil || en.Run.Agent != "claude" || en.Agent.Type != agent.EventRunStarted || en.Agent.Model != "opus" {
		t.Fatalf("run.started: %+v %v", en, err)
	}
	en, err = chatlog.Decode("assistant.delta", []byte(`{"text":"x"}`))
	if err != nil || en.Agent.Type != agent.EventAssistantDelta || en.Agent.Text != "x" || en.User != nil || en.Run != nil {
		t.Fatalf("typeless agent event: %+v %v", en, err)
	}
	for _, p := range []string{"", "{", `{"text":1}`, "[]"} {
		if _, err := chatlog.Decode(chatlog.TypeUserMessage, []byte(p)); err == nil {
			t.Errorf("user.message %q decoded", p)
		}
		if _, err := chatlog.Decode("tool.started", []byte(p)); err == nil {
			t.Errorf("tool.started %q decoded", p)
		}
	}
}

func TestFoldTranscript(t *testing.T) {
	recs := []rec{
		ev(agent.Event{Type: agent.EventRunStarted}),
		user("  list files "),
		ev(agent.Event{Type: agent.EventReasoningDelta, Text: "thinking"}),
		delta("Let me look."),
		tool(),
		ev(agent.Event{Type: agent.EventToolOutput, Text: "a.go b.go"}),
		tool(),
		delta("Two files."),
		{string(agent.EventAssistantDelta), []byte("{broken")},
		{chatlog.TypeUserMessage, []byte("{broken")},
		user("thanks"),
		tool(), // after a user turn: nothing
		delta("You're welcome.\n"),
	}
	want := "User:   list files \n\nAssistant: Let me look.\n\nTwo files.\n\nUser: thanks\n\nAssistant: You're welcome."
	if got := fold(recs).Transcript(); got != want {
		t.Errorf("transcript\n got %q\nwant %q", got, want)
	}
	if got, _ := backward(recs); got != want {
		t.Errorf("backward\n got %q\nwant %q", got, want)
	}
	turns := fold(recs).Turns()
	if len(turns) != 4 || turns[1].Role != chatlog.RoleAssistant || turns[1].Text != "Let me look.\n\nTwo files." {
		t.Errorf("turns %+v", turns)
	}
}

func TestTranscriptKeepsTheEndAtARuneBoundary(t *testing.T) {
	recs := []rec{user("start")}
	for range 5000 {
		recs = append(recs, delta("é€"))
	}
	got := fold(recs).Transcript()
	if len(got) > chatlog.TranscriptLimit || len(got) < chatlog.TranscriptLimit-3 || !strings.HasSuffix(got, "é€") || strings.ContainsRune(got, '\uFFFD') {
		t.Fatalf("len %d, suffix %q", len(got), got[len(got)-10:])
	}
	if b, _ := backward(recs); b != got {
		t.Fatal("backward differs")
	}
}

// TestBackwardIsFold: on random chats, reading newest first gives exactly
// what the forward fold gives, and stops early on long chats.
func TestBackwardIsFold(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "héllo ", "€", "\n", " ", "\n\n", "   \t", "日本語", "x", ""}
	text := func(n int) string {
		var b strings.Builder
		for range rng.IntN(n) {
			b.WriteString(words[rng.IntN(len(words))])
		}
		return b.String()
	}
	early := 0
	for i := range 400 {
		var recs []rec
		n := rng.IntN(600)
		for range n {
			switch rng.IntN(8) {
			case 0:
				recs = append(recs, user(text(400)))
			case 1, 2:
				recs = append(recs, tool())
			case 3:
				recs = append(recs, ev(agent.Event{Type: agent.EventToolOutput, Text: text(50)}))
			case 4:
				recs = append(recs, rec{string(agent.EventAssistantDelta), []byte("nope")})
			default:
				recs = append(recs, delta(text(300)))
			}
		}
		want := fold(recs).Transcript()
		got, read := backward(recs)
		if got != want {
			t.Fatalf("chat %d (%d events): backward differs\n got %q\nwant %q", i, n, got, want)
		}
		if read < len(recs) {
			early++
		}
	}
	if early < 100 {
		t.Fatalf("only %d of 400 chats stopped before their first event", early)
	}
	// A long chat is read only as far back as its end needs.
	recs := []rec{user("first")}
	for range 10000 {
		recs = append(recs, user("question"), delta(strings.Repeat("answer ", 20)), tool(), delta("done"))
	}
	got, read := backward(recs)
	if got != fold(recs).Transcript() {
		t.Fatal("long chat: backward differs")
	}
	if read > 1000 {
		t.Errorf("read %d of %d events for a %d-byte transcript", read, len(recs), len(got))
	}
}

func BenchmarkBackward(b *testing.B) {
	recs := []rec{}
	for range 25000 {
		recs = append(recs, user("question"), delta(strings.Repeat("answer ", 20)), tool(), delta("done"))
	}
	b.ReportAllocs()
	for b.Loop() {
		backward(recs)
	}
}
