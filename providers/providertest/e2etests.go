// The scenarios as whole tests: each sets a CLI's harness up (its setup,
// see NewSetup) with the scenario's scripts and runs the scenario's check in
// it, and does nothing in the outer test process. The fake's script
// constructors are passed as the scenarios take them (When, Text, Slow of
// fakeapi, fakeresponses, fakeopenai), and requests returns what the fake
// was sent (a transcript a request, see Transcripts).

package providertest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

// SetupFunc is a CLI's e2e setup (see NewSetup): with a test's scripts, its
// harness; nil in the outer test process.
type SetupFunc[S, F any, P Runner] func(t *testing.T, scripts ...S) *Harness[F, P]

// Resume sets up with ResumeScripts and runs CheckResume in the harness.
func Resume[S, F any, P Runner](t *testing.T, setup SetupFunc[S, F, P], when func(substr string, s S) S, text func(chunks ...string) S, wantModel string, requests func(fake F) []string) {
	t.Helper()
	if h := setup(t, ResumeScripts(when, text)...); h != nil {
		CheckResume(t, h.Run, wantModel, func() []string { return requests(h.Fake) })
	}
}

// UnknownSession sets up with no script and runs CheckUnknownSession (req,
// id) in the harness.
func UnknownSession[S, F any, P Runner](t *testing.T, setup SetupFunc[S, F, P], req agent.RunRequest, id string, requests func(fake F) []string) {
	t.Helper()
	if h := setup(t); h != nil {
		CheckUnknownSession(t, h.Run, req, id, func() int { return len(requests(h.Fake)) })
	}
}

// CancelMidStream sets up with SlowScript and runs CheckCancelMidStream
// (limit, text) in the harness.
func CancelMidStream[S, F any, P Runner](t *testing.T, setup SetupFunc[S, F, P], when func(substr string, s S) S, slow func(n int, every time.Duration) S, limit time.Duration, text string) {
	t.Helper()
	if h := setup(t, SlowScript(when, slow)); h != nil {
		CheckCancelMidStream(t, h.Run, limit, text)
	}
}

// PendingPrompt is the prompt of CancelPending's turn.
const PendingPrompt = "e2e-pending: run it"

// CancelPending sets up with script (the fake's answer to PendingPrompt: a
// shell tool call that would write file in the working directory), runs
// PendingPrompt asking, with nobody to answer, checks it as
// CheckCancelAtInteraction does, that the card was resolved with one of
// statuses and that the command did not run.
func CancelPending[S, F any, P Runner](t *testing.T, setup SetupFunc[S, F, P], script S, file string, limit time.Duration, statuses ...string) {
	t.Helper()
	h := setup(t, script)
	if h == nil {
		return
	}
	req := agent.RunRequest{Prompt: PendingPrompt, Approval: agent.ApprovalAsk, Responses: make(chan agent.InteractionResponse)}
	r := CheckCancelAtInteraction(t, h.Run, req, limit)
	if res := r.Resolutions(); len(res) != 1 || !slices.Contains(statuses, res[0]) {
		t.Errorf("the pending card was resolved %v, want one of %v", res, statuses)
	}
	if h.Exists(file) {
		t.Errorf("the unanswered command ran: %s is there", file)
	}
}

// ChatSetup is the setup of a CLI against the Chat Completions fake.
type ChatSetup[P Runner] = SetupFunc[fakeopenai.Script, *fakeopenai.Server, P]

// ShellTurn sets up with ShellScript(word, a marker of t) and runs
// CheckShellTurn in the harness; outside the netns it returns nil, nil.
func ShellTurn[P Runner](t *testing.T, setup ChatSetup[P], word string) (*Harness[*fakeopenai.Server, P], *Result) {
	t.Helper()
	done := OrphanMarker(strings.ReplaceAll(t.Name(), "/", "-") + "-done")
	h := setup(t, ShellScript(word, done))
	if h == nil {
		return nil, nil
	}
	return h, CheckShellTurn(t, h.Run, h.Cwd, word, done)
}

// ShellCancel sets up with HangScript(a marker of t) and runs
// CheckShellCancelled in the harness.
func ShellCancel[P Runner](t *testing.T, setup ChatSetup[P], limit time.Duration) {
	t.Helper()
	held := OrphanMarker(strings.ReplaceAll(t.Name(), "/", "-") + "-cancel")
	if h := setup(t, HangScript(held)); h != nil {
		CheckShellCancelled(t, h.Prov, h.Cwd, held, limit)
	}
}
