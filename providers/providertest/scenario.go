// Scenarios every real-CLI e2e test runs the same way, whatever the agent:
// resume, cancel mid-stream, an upstream error; and the shell-tool turns the
// one-shot CLIs' e2e tests (Copilot, Kilo, opencode, grok-cli, Continue) run
// against the Chat Completions fake: a tool call round trip, a turn resuming
// its session, a cancel while a tool runs.

package providertest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
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

// Prompts of the shell-tool scenarios, and the answer to ResumePrompt.
const (
	ShellPrompt  = "Run it"
	ResumePrompt = "And again"
	ResumeText   = "Second turn answer."
	HangPrompt   = "Hang"
)

// ShellScript scripts the fake's answer to ShellPrompt: a shell tool call
// that writes word to out.txt, leaves a process holding done behind
// (LeftBehind) and prints the file.
func ShellScript(word, done string) fakeopenai.Script {
	return fakeopenai.When(ShellPrompt, fakeopenai.WithTools(fakeopenai.Shell("echo "+word+" > out.txt; "+LeftBehind(done)+"; cat out.txt")))
}

// ResumeScript scripts the fake's answer to ResumePrompt: ResumeText.
func ResumeScript() fakeopenai.Script {
	return fakeopenai.When(ResumePrompt, fakeopenai.WithTools(fakeopenai.Text(ResumeText)))
}

// HangScript scripts the fake's answer to HangPrompt: a tool call held by
// Holding("started.txt", held), for CheckShellCancelled.
func HangScript(held string) fakeopenai.Script {
	return fakeopenai.When(HangPrompt, fakeopenai.WithTools(fakeopenai.Shell(Holding("started.txt", held))))
}

// CheckShellTurn runs ShellPrompt through p in work with approval accept
// and checks that the run completed, that the answer carries the tool's
// result ("Tool result: word"), that out.txt holds word and that no process
// holding done is left (the fake scripted with ShellScript). It returns the run for the CLI's own checks.
func CheckShellTurn(t testing.TB, p Runner, work, word, done string) *Result {
	t.Helper()
	r := Run(t, p, agent.RunRequest{Prompt: ShellPrompt, Cwd: work, Approval: agent.ApprovalAccept}, nil)
	if r.Err != nil || r.Last().Type != agent.EventRunCompleted {
		t.Fatalf("shell turn: %v, last %+v", r.Err, r.Last())
	}
	if !strings.Contains(r.Text(), "Tool result: "+word) {
		t.Errorf("answer %q lacks the tool round trip", r.Text())
	}
	if b, err := os.ReadFile(filepath.Join(work, "out.txt")); err != nil || string(b) != word+"\n" {
		t.Errorf("out.txt = %q, %v", b, err)
	}
	NoOrphans(t, done)
	return r
}

// CheckShellResumed runs ResumePrompt through p in work resuming session
// sid and checks that it completed with ResumeText and that the model saw
// the first turn: lastTranscript returns the transcript of the last request
// the fake was sent. It returns the run.
func CheckShellResumed(t testing.TB, p Runner, work, sid string, lastTranscript func() string) *Result {
	t.Helper()
	r := Run(t, p, agent.RunRequest{Prompt: ResumePrompt, Cwd: work, ResumeID: sid}, nil)
	if r.Err != nil || r.Last().Type != agent.EventRunCompleted || !strings.Contains(r.Text(), ResumeText) {
		t.Fatalf("resumed run: %v, last %+v", r.Err, r.Last())
	}
	if tr := lastTranscript(); !strings.Contains(tr, ShellPrompt) {
		t.Errorf("the resumed turn lacks the first:\n%s", tr)
	}
	return r
}

// CheckShellCancelled runs HangPrompt through p in work with approval
// accept and checks it as CheckCancelled does (the fake scripted with
// HangScript(held)).
func CheckShellCancelled(t testing.TB, p Runner, work, held string, limit time.Duration) {
	t.Helper()
	CheckCancelled(t, p, agent.RunRequest{Prompt: HangPrompt, Cwd: work, Approval: agent.ApprovalAccept},
		filepath.Join(work, "started.txt"), held, limit)
}

// LastTranscript returns the transcript of the last chat request fake
// recorded ("" before any), for CheckShellResumed.
func LastTranscript(fake *fakeopenai.Server) func() string {
	return func() string {
		reqs := fake.ChatRequests()
		if len(reqs) == 0 {
			return ""
		}
		return reqs[len(reqs)-1].Transcript()
	}
}
