package matrix

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/render"
)

// buttonTalk matches words that send people to buttons Element does not show.
var buttonTalk = regexp.MustCompile(`(?i)\b(button|buttons|press|pressing|click|clicking|tap)\b`)

// cardViews are the cards chatops' renderer makes of a run's requests, open
// and settled: approvals of each kind, questions with options, with another
// answer allowed, without options, and several at once.
func cardViews(t *testing.T) []chatops.View {
	t.Helper()
	interactions := []*agent.Interaction{
		{ID: "a1", NativeID: json.RawMessage(`"a1"`), Kind: agent.KindCommandApproval, Title: "Bash: rm -rf build", Command: "rm -rf build"},
		{ID: "a2", NativeID: json.RawMessage(`"a2"`), Kind: agent.KindFileChangeApproval, Title: "Edit: main.go"},
		{ID: "a3", NativeID: json.RawMessage(`"a3"`), Kind: agent.KindPermission, Title: "Network access"},
		{ID: "a4", NativeID: json.RawMessage(`"a4"`), Kind: agent.KindElicitation, Title: "Open https://example.org/login"},
		{ID: "q1", NativeID: json.RawMessage(`1`), Kind: agent.KindQuestion, Title: "Which color?",
			Questions: []agent.Question{{ID: "color", Text: "Which color?", Options: []string{"red", "green", "blue"}}}},
		{ID: "q2", NativeID: json.RawMessage(`2`), Kind: agent.KindQuestion, Title: "Which color?",
			Questions: []agent.Question{{ID: "color", Text: "Which color?", Options: []string{"red", "green"}, AllowOther: true}}},
		{ID: "q3", NativeID: json.RawMessage(`3`), Kind: agent.KindQuestion, Title: "Your name?",
			Questions: []agent.Question{{ID: "name", Text: "Your name?"}}},
		{ID: "q4", NativeID: json.RawMessage(`4`), Kind: agent.KindQuestion, Title: "Two questions",
			Questions: []agent.Question{{ID: "a", Text: "A?", Options: []string{"x", "y"}}, {ID: "b", Text: "B?"}}},
	}
	var evs []render.Event
	add := func(e agent.Event) {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, render.Event{ChatID: "c1", Seq: int64(len(evs) + 1), RunID: "r1", Type: string(e.Type), Payload: b, At: time.Unix(1e9, 0)})
	}
	add(agent.Event{Type: agent.EventRunStarted})
	for _, in := range interactions {
		add(agent.Event{Type: agent.EventInteractionRequested, Interaction: in})
	}
	var out []chatops.View
	for _, sv := range render.RenderRun("c1", "", render.RenderOptions{}, evs) {
		out = append(out, sv.View)
	}
	for _, in := range interactions[:3] {
		add(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: in.ID, Status: agent.StatusDeclined, Decision: agent.DecisionDecline, By: "matrix:@alice:localhost"}})
	}
	for _, sv := range render.RenderRun("c1", "", render.RenderOptions{}, evs) {
		out = append(out, sv.View)
	}
	return out
}

// TestCardsSpeakElement: no card as the bot sends it to Matrix (plain and
// HTML body, as a question taking only its options or not, asking a secret
// or not) tells people to press or click a button; Element shows none. The
// cards say how to answer with a reaction or a reply, and chatops' notices
// about answering cards are put the same way.
func TestCardsSpeakElement(t *testing.T) {
	cards := 0
	for _, v := range cardViews(t) {
		if !isCard(v) {
			continue
		}
		cards++
		for _, only := range []bool{false, true} {
			for _, secret := range []bool{false, true} {
				c := cardContent(v, nil, only, secret)
				for _, s := range []string{c.Body, c.FormattedBody} {
					if m := buttonTalk.FindString(s); m != "" {
						t.Errorf("card says %q:\n%s", m, s)
					}
				}
				if !strings.Contains(strings.ToLower(c.Body), "react") || !strings.Contains(c.Body, "reply") {
					t.Errorf("card does not say how to answer by reaction and reply:\n%s", c.Body)
				}
			}
		}
	}
	if cards < 8 {
		t.Fatalf("only %d cards rendered", cards)
	}
	queued := chatops.View{
		Body:    "Queued (1 waiting): it runs when the current turn ends. `stop` stops the turn; `now 1` stops it and runs this message now; `queue` lists the waiting messages.",
		Buttons: []chatops.Button{{ID: chatops.ButtonRunNowPrefix + "q1", Label: "Stop the turn and run this now"}},
	}
	if c := cardContent(queued, nil, false, false); c.Body != queued.Body {
		t.Errorf("a queued prompt's notice gets a hint about answers it does not take:\n%s", c.Body)
	}
	// chatops' notices about answering a card (threads.go, decisions.go), as
	// Ephemeral puts them on Matrix.
	for _, s := range []string{
		"This request needs a decision: press Approve, Approve for session or Decline on the card, or reply to it with `approve`, `approve for session` or `deny`.",
		"That request does not take this answer: use the buttons on its card.",
		"No pending card has the code `AB12`: press the card's button, or reply `approve <code>` / `deny <code>` with the code on the card (pending: `CD34`).",
		"Several pending cards have the code `AB12`: press the button on the one you mean.",
		"That button belongs to another chat.",
	} {
		if got := elementWords(s); buttonTalk.MatchString(got) {
			t.Errorf("notice on Matrix: %q", got)
		}
	}
}
