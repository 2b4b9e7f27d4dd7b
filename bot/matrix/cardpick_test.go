package matrix

import (
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/chatops"
)

// TestCardAsks: question and approval cards ask for an answer; a queued
// prompt's "Run now" and a running answer's Stop do not, so a reply in the
// thread never goes to them.
func TestCardAsks(t *testing.T) {
	for _, c := range []struct {
		name    string
		buttons []chatops.Button
		want    bool
	}{
		{"question", []chatops.Button{{ID: chatops.ButtonAnswer}, {ID: chatops.ButtonDecline}}, true},
		{"options", []chatops.Button{{ID: chatops.ButtonOptionPrefix + "0"}}, true},
		{"approval", []chatops.Button{{ID: chatops.ButtonApprove}, {ID: chatops.ButtonCancel}}, true},
		{"run now", []chatops.Button{{ID: chatops.ButtonRunNowPrefix + "q1"}}, false},
		{"stop", []chatops.Button{{ID: chatops.ButtonStop}}, false},
	} {
		if got := (&card{buttons: c.buttons}).asks(); got != c.want {
			t.Errorf("%s: asks %v, want %v", c.name, got, c.want)
		}
	}
	cb := newCardBook()
	p := chatops.Place{Platform: Platform, Channel: "!r", Thread: "$t"}
	cb.put("$q", p, []chatops.Button{{ID: chatops.ButtonAnswer}})
	cb.put("$now", p, []chatops.Button{{ID: chatops.ButtonRunNowPrefix + "q1"}})
	if got := cb.asking(p); len(got) != 1 || !got[0].asks() {
		t.Errorf("asking returned %d cards, want the question alone", len(got))
	}
	if got := cb.openIn(p); len(got) != 2 {
		t.Errorf("openIn returned %d cards, want 2", len(got))
	}
}

// TestSecretCardHint: a secret question's card says not to reply in the room
// and how to decline; it never invites a reply with the answer.
func TestSecretCardHint(t *testing.T) {
	v := chatops.View{Body: "API token?", Buttons: []chatops.Button{{ID: chatops.ButtonAnswer}, {ID: chatops.ButtonDecline}}}
	open := cardContent(v, nil, false, false).Body
	if !strings.HasSuffix(open, "reply in this thread with your answer.") {
		t.Errorf("free question's card %q", open)
	}
	secret := cardContent(v, nil, false, true)
	for _, s := range []string{secret.Body, secret.FormattedBody} {
		if strings.Contains(s, "reply in this thread with your answer") || !strings.Contains(s, "do not reply with it in this room") || !strings.Contains(s, KeyDecline) {
			t.Errorf("secret question's card %q", s)
		}
	}
	// A settled card (no buttons) has no hint at all.
	if b := cardContent(chatops.View{Body: "Answered"}, nil, false, true).Body; b != "Answered" {
		t.Errorf("settled card %q", b)
	}
}
