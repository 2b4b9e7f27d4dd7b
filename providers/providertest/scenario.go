// The harness every real-CLI e2e test runs in (the pinned CLI found, the
// test run again inside the loopback-only network namespace, the scripted
// model server started, the provider built on both, each turn run in the
// test's working directory and, when the run's processes are marked, none
// of them left after it), and the scenarios every such test runs the same
// way, whatever the agent: resume, cancel mid-stream, cancel at a pending
// question, an upstream error; and the shell-tool turns the one-shot CLIs'
// e2e tests (Copilot, Kilo, opencode, grok-cli, Continue) run against the
// Chat Completions fake: a tool call round trip, a turn resuming its
// session, a cancel while a tool runs. e2etests.go has them as whole tests.

package providertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/providertest/fakehttp"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

// CLI names a pinned agent CLI: its executable (node_modules/.bin/Name) and
// the variable that overrides it (see FindCLI).
type CLI struct {
	Name, EnvVar string
}

// Harness is one e2e test inside the netns: the CLI's executable, its
// scripted model server F, the provider P built on them and the turns'
// working directory.
type Harness[F any, P Runner] struct {
	T    *testing.T
	Bin  string
	Fake F
	Prov P
	// Cwd is the working directory of a turn whose request names none.
	Cwd string
	// Marker, when set (MarkEnv in the provider's environment), is what
	// every turn checks that no process it started is left with.
	Marker string
	// Home, when the build sets it, is the directory of the CLI's own
	// configuration (e.g. CODEX_HOME), for a test that adds to it.
	Home string
}

// Setup finds cli and runs t again inside a loopback-only netns (InNetns).
// In the outer process it returns nil: the test ran, or was skipped, in the
// child, and the caller returns. Inside it makes t's sandbox (unless
// THREADLINE_TEST_SANDBOX=off: every run of t then starts as the agent user
// through the sandbox helper, see Confine), starts the model server (start;
// the runs may connect to its port, and only they: CheckPeers), makes the
// working directory and builds the provider (build, which may set h.Marker
// and declares the CLI's directories with Launch or Sandboxed).
func Setup[F any, P Runner](t *testing.T, cli CLI, start func(t *testing.T) F, build func(h *Harness[F, P]) P) *Harness[F, P] {
	t.Helper()
	bin := FindCLI(t, cli.Name, cli.EnvVar)
	prepareSandbox(t)
	if !InNetns(t) {
		return nil
	}
	sandboxFor(t)
	h := &Harness[F, P]{T: t, Bin: bin, Fake: start(t), Cwd: t.TempDir()}
	if u, ok := any(h.Fake).(interface{ URL() string }); ok {
		SandboxConnects(t, u.URL())
	}
	if p, ok := any(h.Fake).(interface{ PeerUIDs() []int }); ok {
		CheckPeers(t, p.PeerUIDs)
	}
	h.Prov = build(h)
	return h
}

// NewSetup returns the setup of cli's e2e tests (Setup): called with a
// test's scripts, it starts newFake's model server on them (fakeapi.New,
// fakeresponses.New, fakeopenai.New) and builds the provider with build.
// Like Setup it returns nil in the outer test process, where the caller
// returns.
func NewSetup[S, F any, P Runner](cli CLI, newFake func(log fakehttp.Logger, scripts ...S) F, build func(h *Harness[F, P]) P) SetupFunc[S, F, P] {
	return func(t *testing.T, scripts ...S) *Harness[F, P] {
		t.Helper()
		return Setup(t, cli, func(t *testing.T) F { return newFake(t, scripts...) }, build)
	}
}

// Launch marks env for the turns' left-behind check (MarkEnv, h.Marker),
// declares its directories and endpoints to the sandbox (Sandboxed) and
// returns the launch of the CLI with env, a cancelled run killed after
// grace: the procrun.Launch of a provider under test.
func (h *Harness[F, P]) Launch(env map[string]string, grace time.Duration) procrun.Launch {
	h.Marker = MarkEnv(env)
	Sandboxed(h.T, env)
	return procrun.Launch{Bin: h.Bin, Env: env, StopGrace: grace}
}

// Run runs one turn of the provider (see Run) in h.Cwd unless req names a
// directory, and fails the test when Run returned nil or ErrRunFailed with
// no terminal event (the contract of agent.Provider: run.completed or
// run.interrupted, run.failed). With h.Marker set it also fails the test
// when one of the turn's processes is left after it (see MarkedLeft), and,
// for a turn that ended with a terminal event, when no marked process was
// seen alive while it ran (the check would see nothing; a turn refused
// before its start has no process to see).
func (h *Harness[F, P]) Run(req agent.RunRequest, onEvent OnEvent) *Result {
	h.T.Helper()
	if req.Cwd == "" {
		req.Cwd = h.Cwd
	}
	r := h.runMarked(req, onEvent)
	if (r.Err == nil || errors.Is(r.Err, agent.ErrRunFailed)) && r.Terminals() == 0 {
		h.T.Errorf("Run(%q) = %v with no terminal event: %v", req.Prompt, r.Err, r.Types())
	}
	return r
}

// runMarked is Run without the terminal-event check.
func (h *Harness[F, P]) runMarked(req agent.RunRequest, onEvent OnEvent) *Result {
	h.T.Helper()
	if h.Marker == "" {
		return Run(h.T, h.Prov, req, onEvent)
	}
	// Looked for while the turn runs, not at its events: a one-shot CLI
	// may print everything as it exits.
	stop, seen := make(chan struct{}), make(chan bool, 1)
	go func() { seen <- watchMarked(h.Marker, stop) }()
	r := Run(h.T, h.Prov, req, onEvent)
	close(stop)
	if !<-seen && r.Terminals() > 0 {
		h.T.Errorf("no process with %s=%s while the run ran: the left-behind check sees nothing", MarkerEnv, h.Marker)
	}
	if left := MarkedLeft(h.Marker); len(left) > 0 {
		h.T.Errorf("processes left after the run: %s", strings.Join(left, "; "))
	}
	return r
}

// watchMarked reports whether a process of marker was alive at some point
// before stop was closed, looking every 20 ms.
func watchMarked(marker string, stop <-chan struct{}) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if len(Marked(marker)) > 0 {
			return true
		}
		select {
		case <-stop:
			return false
		case <-tick.C:
		}
	}
}

// Ends runs one turn as Run does and fails the test at once unless Run
// returned nil and the last event is of type end.
func (h *Harness[F, P]) Ends(end agent.EventType, req agent.RunRequest, onEvent OnEvent) *Result {
	h.T.Helper()
	r := h.Run(req, onEvent)
	if r.Err != nil || r.Last().Type != end {
		h.T.Fatalf("Run(%q) = %v, last %+v; want %s", req.Prompt, r.Err, r.Last(), end)
	}
	return r
}

// Answering returns a channel for a request's Responses and an OnEvent
// that answers every interaction.requested on it with decide(interaction)
// (see Answer).
func Answering(decide func(in *agent.Interaction) agent.InteractionResponse) (chan agent.InteractionResponse, OnEvent) {
	ch := make(chan agent.InteractionResponse, 8)
	return ch, Answer(ch, decide)
}

// Path is name in the working directory.
func (h *Harness[F, P]) Path(name string) string { return filepath.Join(h.Cwd, name) }

// Exists reports whether name exists in the working directory (a tool
// call wrote it); see Exists.
func (h *Harness[F, P]) Exists(name string) bool { return Exists(h.T, h.Cwd, name) }

// CheckFile fails the test unless name in the working directory holds want
// (white space around it aside).
func (h *Harness[F, P]) CheckFile(name, want string) {
	h.T.Helper()
	if b, err := os.ReadFile(h.Path(name)); err != nil || strings.TrimSpace(string(b)) != want {
		h.T.Errorf("%s in the working directory: %q, %v; want %q", name, b, err, want)
	}
}

// DeadProxy points a child's HTTP(S)_PROXY at a closed local port, so that
// a proxy-aware client fails at once on anything but the fake (which the
// caller exempts where the client would use the proxy for it).
func DeadProxy(env map[string]string) {
	env["HTTP_PROXY"], env["HTTPS_PROXY"] = "http://127.0.0.1:9", "http://127.0.0.1:9"
}

// MarkerEnv is the variable MarkEnv sets in a child's environment.
const MarkerEnv = "E2E_RUN_MARKER"

// MarkEnv puts a fresh random marker in env (MarkerEnv) and returns it: the
// processes the CLI starts inherit it, and Marked finds them by it.
func MarkEnv(env map[string]string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	marker := hex.EncodeToString(b)
	env[MarkerEnv] = marker
	return marker
}

// Marked lists the live processes whose environment carries marker
// (MarkEnv), as "pid command line".
func Marked(marker string) []string {
	want := MarkerEnv + "=" + marker + "\x00"
	var out []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err != nil || !strings.Contains(string(env), want) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		out = append(out, d.Name()+" "+strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
	}
	return out
}

// MarkedLeft lists the processes of marker still there after a run. A
// process killed with its group may need a moment to go; one that outlived
// its run stays, so the list is read until it is empty or for Scale(2s).
func MarkedLeft(marker string) []string {
	deadline := time.Now().Add(Scale(2 * time.Second))
	for {
		left := Marked(marker)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Scripting the scenarios below with a fake model server's own script
// constructors (fakeapi, fakeresponses, fakeopenai: the same names,
// each with its Script type).

// ResumeScripts scripts CheckResume's two turns: RememberPrompt answered
// with RememberText in chunks, RecallPrompt with RecallText.
func ResumeScripts[S any](when func(substr string, s S) S, text func(chunks ...string) S) []S {
	return []S{
		when(RememberPrompt, text(rememberChunks...)),
		when(RecallPrompt, text(recallChunks...)),
	}
}

// RememberText and RecallText in the chunks the fakes stream them in.
var (
	rememberChunks = []string{"Noted: ", "the word is ", "alpha."}
	recallChunks   = []string{"The word ", "was alpha."}
)

// The stream of SlowScript: SlowWords words ("word00 " ...), one every
// SlowEvery; SlowEnd is its last word, which a cancelled run never sees.
const (
	SlowWords = 300
	SlowEvery = 100 * time.Millisecond
	SlowEnd   = "word299"
)

// SlowScript scripts CheckCancelMidStream's turn: SlowPrompt answered with
// the slow stream.
func SlowScript[S any](when func(substr string, s S) S, slow func(n int, every time.Duration) S) S {
	return when(SlowPrompt, slow(SlowWords, SlowEvery))
}

// SharedCache points env's XDG_CACHE_HOME at <repo>/.cache/agents-xdg, the
// cache scripts/install-agents.sh and the e2e tests share (copilot unpacks
// 235 MB there on its first start); t's sandboxed runs may read it.
func SharedCache(t testing.TB, env map[string]string) {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	env["XDG_CACHE_HOME"] = filepath.Join(root, ".cache", "agents-xdg")
	SandboxReads(t, env["XDG_CACHE_HOME"])
}

// Turn runs one turn of an e2e harness in its working directory (a
// Harness's Run, or a test's own wrapper of it).
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

// CheckCancelAt runs req, cancels it at its first event for which at
// returns true, and fails the test at once unless such an event came and
// Run then returned nil with run.interrupted last; it fails it, too, when
// Run returned more than Scale(limit) after the cancel. It returns the run.
func CheckCancelAt(t testing.TB, run Turn, req agent.RunRequest, at func(ev agent.Event) bool, limit time.Duration) *Result {
	t.Helper()
	var cancelledAt time.Time
	r := run(req, func(ev agent.Event, cancel context.CancelFunc) {
		if cancelledAt.IsZero() && at(ev) {
			cancelledAt = time.Now()
			cancel()
		}
	})
	took := time.Since(cancelledAt)
	if cancelledAt.IsZero() {
		t.Fatalf("Run(%q) never came to the event to cancel at: %v, last %+v", req.Prompt, r.Err, r.Last())
	}
	if r.Err != nil || r.Last().Type != agent.EventRunInterrupted {
		t.Fatalf("Run after cancel = %v, last %+v; want nil and run.interrupted", r.Err, r.Last())
	}
	t.Logf("cancel → Run returned in %s", took.Round(time.Millisecond))
	if limit = Scale(limit); took > limit {
		t.Errorf("Run returned %s after cancel, over %s", took, limit)
	}
	return r
}

// CheckCancelMidStream runs SlowPrompt (the fake scripted with SlowScript
// streams "word00 ", "word01 ", ... slowly), cancels at the delta holding
// "word02", and checks it as CheckCancelAt does, that the stream did not
// run to its end (SlowEnd) and, when text is not empty, that the
// run.interrupted says text (the CLI's own end of a cancelled turn, not the
// kill). It returns the run.
func CheckCancelMidStream(t *testing.T, run Turn, limit time.Duration, text string) *Result {
	t.Helper()
	r := CheckCancelAt(t, run, agent.RunRequest{Prompt: SlowPrompt}, func(ev agent.Event) bool {
		return ev.Type == agent.EventAssistantDelta && strings.Contains(ev.Text, "word02")
	}, limit)
	if strings.Contains(r.Text(), SlowEnd) {
		t.Error("stream ran to the end despite the cancel")
	}
	if text != "" && r.Last().Text != text {
		t.Errorf("run.interrupted %q, want %q: the CLI did not end the turn itself in time (killed instead?)", r.Last().Text, text)
	}
	return r
}

// CheckCancelAtInteraction runs req (a turn whose tool call asks, with no
// answer coming), cancels at its interaction.requested, and checks it as
// CheckCancelAt does and that one interaction.resolved closed the card. It
// returns the run, for the CLI's own checks of the resolution.
func CheckCancelAtInteraction(t *testing.T, run Turn, req agent.RunRequest, limit time.Duration) *Result {
	t.Helper()
	// The user stops the turn instead of answering.
	r := CheckCancelAt(t, run, req, func(ev agent.Event) bool { return ev.Type == agent.EventInteractionRequested }, limit)
	if res := r.Of(agent.EventInteractionResolved); len(res) != 1 {
		t.Errorf("the pending card was not closed once: %+v", res)
	}
	return r
}

// CheckAPIError runs BadPrompt (the fake answers it with an HTTP error whose
// message holds want) and checks that the run fails saying so
// (CheckFailed). It returns the run, for the CLI's own checks.
func CheckAPIError(t *testing.T, run Turn, want string) *Result {
	t.Helper()
	r := run(agent.RunRequest{Prompt: BadPrompt}, nil)
	CheckFailed(t, r, want)
	return r
}

// StalePrompt is the prompt of CheckUnknownSession's turn.
const StalePrompt = "e2e-stale"

// CheckUnknownSession runs StalePrompt (with req's other fields) resuming
// session id, which the CLI does not know, and checks that Run fails with
// agent.ErrSessionNotFound and no terminal event (the core then starts
// afresh and retries) and that the model was not asked: requests returns
// how many requests the fake saw.
func CheckUnknownSession(t *testing.T, run Turn, req agent.RunRequest, id string, requests func() int) {
	t.Helper()
	req.Prompt, req.ResumeID = StalePrompt, id
	r := run(req, nil)
	if !errors.Is(r.Err, agent.ErrSessionNotFound) {
		t.Fatalf("Run(resume %s) = %v, want ErrSessionNotFound", id, r.Err)
	}
	if n := r.Terminals(); n != 0 {
		t.Errorf("%d terminal events for a stale session: %v", n, r.Types())
	}
	if n := requests(); n != 0 {
		t.Errorf("fake saw %d requests for a stale resume", n)
	}
}

// The streamed-text scenario: TextPrompt answered with a thinking block
// (TextReasoning in chunks), then TextAnswer in chunks.
const (
	TextPrompt    = "e2e-text: say hello"
	TextReasoning = "Pondering the request."
	TextAnswer    = "Hello from the fake API."
)

// TextScript scripts CheckStreamedText's turn with a fake's When and
// Thinking (fakeapi, fakeresponses).
func TextScript[S any](when func(substr string, s S) S, thinking func(reasoning []string, text ...string) S) S {
	return when(TextPrompt, thinking([]string{"Pondering ", "the request."}, "Hello ", "from ", "the ", "fake API."))
}

// CheckStreamedText runs TextPrompt (the fake scripted with TextScript)
// and checks that the answer streams in several assistant.delta events
// and the reasoning in reasoning.delta events, that a session is reported,
// usage too, and that the run completes with the answer. It returns the
// run, for the CLI's own checks.
func CheckStreamedText(t *testing.T, run Turn) *Result {
	t.Helper()
	r := run(agent.RunRequest{Prompt: TextPrompt}, nil)
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	if deltas := r.Of(agent.EventAssistantDelta); len(deltas) < 3 {
		t.Errorf("%d assistant.delta events, want the text in several deltas", len(deltas))
	}
	if got := r.Text(); got != TextAnswer {
		t.Errorf("streamed text %q", got)
	}
	var reasoning strings.Builder
	for _, ev := range r.Of(agent.EventReasoningDelta) {
		reasoning.WriteString(ev.Text)
	}
	if reasoning.String() != TextReasoning {
		t.Errorf("reasoning %q, want %q", reasoning.String(), TextReasoning)
	}
	if r.SessionID() == "" {
		t.Error("no session.updated with a session id")
	}
	if last := r.Last(); last.Type != agent.EventRunCompleted || last.Text != TextAnswer {
		t.Errorf("last event %+v", last)
	}
	if len(r.Of(agent.EventUsageUpdated)) == 0 {
		t.Error("no usage.updated")
	}
	return r
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

// CheckShellTurn runs ShellPrompt (a turn of run, e.g. a Harness's Run) in
// work with approval accept and checks that the run completed, that the
// answer carries the tool's result ("Tool result: word"), that out.txt
// holds word and that no process holding done is left (the fake scripted
// with ShellScript). It returns the run for the CLI's own checks.
func CheckShellTurn(t testing.TB, run Turn, work, word, done string) *Result {
	t.Helper()
	r := run(agent.RunRequest{Prompt: ShellPrompt, Cwd: work, Approval: agent.ApprovalAccept}, nil)
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

// CheckShellResumed runs ResumePrompt (a turn of run) in work resuming session
// sid and checks that it completed with ResumeText and that the model saw
// the first turn: lastTranscript returns the transcript of the last request
// the fake was sent. It returns the run.
func CheckShellResumed(t testing.TB, run Turn, work, sid string, lastTranscript func() string) *Result {
	t.Helper()
	r := run(agent.RunRequest{Prompt: ResumePrompt, Cwd: work, ResumeID: sid}, nil)
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
