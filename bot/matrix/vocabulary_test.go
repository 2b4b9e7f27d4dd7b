// Tests that only explicit decisions approve: casual replies and reactions
// leave an approval card pending.

package matrix

import (
	"testing"

	"github.com/threadline-bot/threadline/chatops"
)

func TestCasualRepliesDoNotApprove(t *testing.T) {
	base := chatops.Ref{ChatID: "c", RunID: "r", InteractionID: "i"}.Encode()
	approval := &card{buttons: []chatops.Button{
		{ID: chatops.ButtonApprove, Value: base}, {ID: chatops.ButtonApproveSession, Value: base},
		{ID: chatops.ButtonDecline, Value: base}, {ID: chatops.ButtonCancel, Value: base},
	}}
	for _, text := range []string{"ok", "OK!", "y", "yes", "Yes.", "allow", "always", "session", "sure", "👍", "✔️", "go ahead", "lgtm"} {
		if a, ok := parseReply(approval, text, nil); ok && (a.button.ID == chatops.ButtonApprove || a.button.ID == chatops.ButtonApproveSession) {
			t.Errorf("reply %q approved (%s)", text, a.button.ID)
		}
	}
	for _, key := range []string{"👍", "✔️", "✔", "👌"} {
		if b, ok := reactionButton(key); ok && (b == chatops.ButtonApprove || b == chatops.ButtonApproveSession) {
			t.Errorf("reaction %q approved (%s)", key, b)
		}
	}
	for text, want := range map[string]string{
		"approve": chatops.ButtonApprove, "✅": chatops.ButtonApprove, "approve for session": chatops.ButtonApproveSession,
		"deny": chatops.ButtonDecline, "❌": chatops.ButtonDecline, "stop": chatops.ButtonCancel,
	} {
		if a, ok := parseReply(approval, text, nil); !ok || a.button.ID != want {
			t.Errorf("reply %q = %+v %v, want %s", text, a, ok, want)
		}
	}
}
