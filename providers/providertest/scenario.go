// Scenarios every real-CLI e2e test runs the same way, whatever the agent:
// resume, cancel mid-stream, an upstream error.

package providertest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// Turn runs one turn of an e2e harness in its working directory (its run
// method, e.g. h.run).
type Turn func(req agent.RunRequest, onEvent OnEvent) *Result

// Fake scripts of the scenarios: the tests register them with their fake
// model server (When(substr, Text(...)) / Slow / Error) under these prompts.
const (
	RememberPrompt = "e2e-remember the word alpha"
	RecallPrompt   = "e2e-recall the word"
	SlowPrompt     = "e2e-slow: count slowly"
	BadPrompt      = "e2e-bad request"
)

// Resume texts: the fake answers RememberPrompt with RememberText (in
// chunks) and RecallPrompt with RecallText.
const (
	RememberText = "Noted: the word is alpha."
	RecallText   = "The word was alpha."
)

// CheckResume runs RememberPrompt, then RecallPrompt resuming the first
// run's session, and checks that the second run stays on that session
// (reported once, with the model the CLI runs: wantModel when non-empty),
// ends with RecallText, and that the model saw the first turn. requests
// returns what the fake model was sent, one transcript ("role: text" lines)
// per request: there must be two. It returns the session id.
func CheckResume(t *testing.T, run Turn, wantModel string, requests func() []string) string {
	t.Helper()
	r1 := run(agent.RunRequest{Prompt: RememberPrompt}, nil)
	if r1.Err != nil {
		t.Fatalf("run 1: %v", r1.Err)
	}
	sid := r1.SessionID()
	if sid == "" {
		t.Fatal("run 1 reported no session id")
	}
	r2 := run(agent.RunRequest{Prompt: RecallPrompt, ResumeID: sid}, nil)
	if r2.Err != nil {
		t.Fatalf("run 2: %v", r2.Err)
	}
	// The resumed session is reported once more, for the model it runs.
	if s := r2.Of(agent.EventSessionUpdated); len(s) != 1 || s[0].SessionID != sid || s[0].Model == "" || (wantModel != "" && s[0].Model != wantModel) {
		t.Errorf("resumed run's session.updated %+v, want session %q with its model", s, sid)
	}
	if last := r2.Last(); last.Type != agent.EventRunCompleted || last.Text != RecallText {
		t.Errorf("run 2 last event %+v", last)
	}
	reqs := requests()
	if len(reqs) != 2 {
		t.Fatalf("fake saw %d requests, want 2", len(reqs))
	}
	for _, want := range []string{"user: " + RememberPrompt, "assistant: " + RememberText, "user: " + RecallPrompt} {
		if !strings.Contains(reqs[1], want) {
			t.Errorf("resumed request lacks %q; transcript:\n%s", want, reqs[1])
		}
	}
	return sid
}

// CheckCancelMidStream runs SlowPrompt (the fake streams "word00 ",
// "word01 ", ... slowly), cancels at the delta holding "word02", and checks
// that Run returns nil within limit with run.interrupted last and that the
// stream did not run to its end (endWord). It returns the run.
func CheckCancelMidStream(t *testing.T, run Turn, endWord string, limit time.Duration) *Result {
	t.Helper()
	var cancelledAt time.Time
	r := run(agent.RunRequest{Prompt: SlowPrompt}, func(ev agent.Event, cancel context.CancelFunc) {
		if ev.Type == agent.EventAssistantDelta && cancelledAt.IsZero() && strings.Contains(ev.Text, "word02") {
			cancelledAt = time.Now()
			cancel()
		}
	})
	if cancelledAt.IsZero() {
		t.Fatalf("never saw the third delta; err %v", r.Err)
	}
	if r.Err != nil {
		t.Fatalf("Run after cancel = %v, want nil", r.Err)
	}
	if last := r.Last(); last.Type != agent.EventRunInterrupted {
		t.Errorf("last event %+v, want run.interrupted", last)
	}
	took := time.Since(cancelledAt)
	t.Logf("cancel → Run returned in %s", took.Round(time.Millisecond))
	if limit = Scale(limit); took > limit {
		t.Errorf("Run returned %s after cancel, over %s", took, limit)
	}
	if strings.Contains(r.Text(), endWord) {
		t.Error("stream ran to the end despite the cancel")
	}
	return r
}

// CheckAPIError runs BadPrompt (the fake answers it with an HTTP error whose
// message holds want) and checks that the run fails saying so.
func CheckAPIError(t *testing.T, run Turn, want string) {
	t.Helper()
	r := run(agent.RunRequest{Prompt: BadPrompt}, nil)
	if !errors.Is(r.Err, agent.ErrRunFailed) {
		t.Fatalf("Run = %v, want ErrRunFailed", r.Err)
	}
	if last := r.Last(); last.Type != agent.EventRunFailed || !strings.Contains(last.Text, want) {
		t.Errorf("last event %+v", last)
	}
}

// Transcripts returns each request's Transcript (for CheckResume): reqs are
// the requests a fake model server recorded.
func Transcripts[R any, P interface {
	*R
	Transcript() string
}](reqs []R) []string {
	out := make([]string, len(reqs))
	for i := range reqs {
		out[i] = P(&reqs[i]).Transcript()
	}
	return out
}
