// Tests of Session with the test binary re-executed as a scripted interactive CLI.

package procrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// sessionChild is the fake interactive CLI. It prints START (lines split by
// "|") once it read the "prompt" line, echoes every other stdin line as
// {"echo":...}, answers "interrupt" with {"type":"interrupted"} unless
// DEAF is set, and at EOF (or after START when QUIT is set) prints {"type":"eof"} and exits with EXIT, or
// lingers when LINGER is set. SIGINT is ignored when IGNORE_INT is set.
// BURST is written in one write after START; a partial last line of it is
// completed (as {"type":"x"}) before the next echo.
func sessionChild() int {
	if os.Getenv("IGNORE_INT") != "" {
		signal.Ignore(os.Interrupt)
	}
	out := bufio.NewWriter(os.Stdout)
	print := func(s string) { out.WriteString(s + "\n"); out.Flush() }
	sc := bufio.NewScanner(os.Stdin)
	var burst string
	for sc.Scan() {
		switch l := sc.Text(); {
		case l == "prompt":
			for s := range strings.SplitSeq(os.Getenv("START"), "|") {
				if s != "" {
					print(s)
				}
			}
			burst = os.Getenv("BURST")
			out.WriteString(burst)
			out.Flush()
			if os.Getenv("QUIT") != "" {
				return quit()
			}
		case l == "interrupt" && os.Getenv("DEAF") == "":
			print(`{"type":"interrupted"}`)
			return 0
		default:
			if burst != "" && !strings.HasSuffix(burst, "\n") {
				burst = ""
				print(`"x"}`)
			}
			b, _ := json.Marshal(map[string]string{"echo": l})
			print(string(b))
		}
	}
	print(`{"type":"eof"}`)
	if os.Getenv("LINGER") != "" {
		time.Sleep(time.Minute)
	}
	return quit()
}

func quit() int {
	os.Stderr.WriteString("child stderr tail\n")
	if os.Getenv("EXIT") != "" {
		return 3
	}
	return 0
}

// testWire speaks the fake CLI's protocol: {"req":id} asks, the echo of
// "answer:id" resolves, {"type":"done"} completes, {"type":"interrupted"}
// ends interrupted; {"timer":ms} arms a timer that completes the run.
type testWire struct {
	native    bool
	mu        sync.Mutex
	responded []string
}

func (w *testWire) Start(c *Conn) error { c.Write([]byte("prompt")); return nil }

func (w *testWire) Line(line []byte, c *Conn) error {
	var m struct {
		Req   string `json:"req"`
		Echo  string `json:"echo"`
		Type  string `json:"type"`
		Timer int    `json:"timer"`
		Dup   string `json:"dup"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return err
	}
	switch {
	case m.Req != "":
		c.Emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{ID: m.Req, Kind: agent.KindQuestion}})
	case m.Dup != "":
		return fmt.Errorf("%w: %s", agent.ErrDuplicateRequest, m.Dup)
	case strings.HasPrefix(m.Echo, "answer:"):
		c.Emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: strings.TrimPrefix(m.Echo, "answer:"), Status: agent.StatusAnswered}})
		c.Emit(agent.Event{Type: agent.EventRunCompleted})
	case m.Type == "done":
		c.Emit(agent.Event{Type: agent.EventRunCompleted})
	case m.Type == "interrupted":
		c.Emit(agent.Event{Type: agent.EventRunInterrupted, Text: "native"})
	case m.Timer > 0:
		c.After("t", time.Duration(m.Timer)*time.Millisecond)
	}
	return nil
}

func (w *testWire) Respond(resp agent.InteractionResponse, c *Conn) error {
	w.mu.Lock()
	w.responded = append(w.responded, resp.InteractionID)
	w.mu.Unlock()
	c.Write([]byte("answer:" + resp.InteractionID))
	return nil
}

func (w *testWire) Interrupt(c *Conn) error {
	if !w.native {
		return ErrNoNative
	}
	c.Write([]byte("interrupt"))
	return nil
}

func (w *testWire) Outcome(Outcome, *Conn) error { return nil }

func (w *testWire) Timer(name string, c *Conn) {
	c.Emit(agent.Event{Type: agent.EventRunCompleted, Text: "timer " + name})
}

type sessionResult struct {
	evs  []agent.Event
	err  error
	logs string
	took time.Duration
}

func (r sessionResult) types() string {
	var s []string
	for _, ev := range r.evs {
		t := string(ev.Type)
		if ev.Resolution != nil {
			t += "(" + ev.Resolution.InteractionID + ":" + ev.Resolution.Status + ")"
		}
		s = append(s, t)
	}
	return strings.Join(s, " ")
}

// runSession runs w against the fake CLI configured by env; onEvent may
// answer or cancel.
func runSession(t *testing.T, ctx context.Context, w Wire, s Session, onEvent func(agent.Event), env ...string) sessionResult {
	t.Helper()
	logger, logs := testLogger(t)
	s.Spec = childSpec(t, "session", env...)
	s.Wire, s.Logger, s.Provider = w, logger, "fake"
	if s.InterruptTimeout == 0 {
		s.InterruptTimeout = 30 * time.Second // generous: only a kill test waits for it
	}
	var r sessionResult
	start := time.Now()
	r.err = s.Run(ctx, func(ev agent.Event) {
		r.evs = append(r.evs, ev)
		if onEvent != nil {
			onEvent(ev)
		}
	})
	r.took, r.logs = time.Since(start), logs.String()
	return r
}

func TestSessionAnswerRoundTrip(t *testing.T) {
	w := &testWire{}
	answers := make(chan agent.InteractionResponse, 2)
	r := runSession(t, t.Context(), w, Session{Responses: answers}, func(ev agent.Event) {
		if ev.Type == agent.EventInteractionRequested {
			// An id nobody asked for is refused before the wire sees it.
			answers <- agent.InteractionResponse{InteractionID: "nope", Decision: agent.DecisionAnswer}
			answers <- agent.InteractionResponse{InteractionID: ev.Interaction.ID, Decision: agent.DecisionAnswer}
		}
	}, `START={"req":"a"}`)
	if r.err != nil {
		t.Fatalf("err = %v\n%s", r.err, r.logs)
	}
	if got, want := r.types(), "interaction.requested interaction.resolved(a:answered) run.completed"; got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	if len(w.responded) != 1 || w.responded[0] != "a" {
		t.Fatalf("wire answered %q, want only a", w.responded)
	}
	if !strings.Contains(r.logs, agent.ErrUnknownInteraction.Error()) || !strings.Contains(r.logs, "nope") {
		t.Fatalf("unknown id not logged:\n%s", r.logs)
	}
}

func TestSessionTurnEndedRule(t *testing.T) {
	r := runSession(t, t.Context(), &testWire{}, Session{}, nil, `START={"req":"a"}|{"req":"b"}|{"type":"done"}`)
	if r.err != nil {
		t.Fatalf("err = %v", r.err)
	}
	want := "interaction.requested interaction.requested interaction.resolved(a:turn_ended) interaction.resolved(b:turn_ended) run.completed"
	if got := r.types(); got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
}

func TestSessionDuplicateRequest(t *testing.T) {
	for name, start := range map[string]string{
		"ledger": `START={"req":"a"}|{"req":"a"}`, // the same id requested twice
		"wire":   `START={"req":"a"}|{"dup":"7"}`, // the wire's own detection
	} {
		t.Run(name, func(t *testing.T) {
			r := runSession(t, t.Context(), &testWire{}, Session{}, nil, start, "LINGER=1")
			if !errors.Is(r.err, agent.ErrRunFailed) || !errors.Is(r.err, agent.ErrDuplicateRequest) {
				t.Fatalf("err = %v", r.err)
			}
			if got, want := r.types(), "interaction.requested interaction.resolved(a:turn_ended) run.failed"; got != want {
				t.Fatalf("events = %s, want %s", got, want)
			}
			if r.took > 20*time.Second {
				t.Fatalf("the lingering child was not killed (%v)", r.took)
			}
		})
	}
}

func TestSessionExitWithoutResult(t *testing.T) {
	r := runSession(t, t.Context(), &testWire{}, Session{NoResult: "fake gave up"}, nil, `START={"n":1}`, "QUIT=1", "EXIT=1")
	if !errors.Is(r.err, agent.ErrRunFailed) {
		t.Fatalf("err = %v", r.err)
	}
	if _, ok := IsExit(r.err); !ok {
		t.Fatalf("err %v carries no exit status", r.err)
	}
	last := r.evs[len(r.evs)-1]
	if last.Type != agent.EventRunFailed || !strings.HasPrefix(last.Text, "fake gave up: ") || !strings.Contains(last.Text, "child stderr tail") {
		t.Fatalf("last = %+v", last)
	}
}

func TestSessionCancel(t *testing.T) {
	cases := []struct {
		name   string
		native bool
		env    []string
		last   string // text of run.interrupted
		killed bool
	}{
		{name: "native", native: true, last: "native"},
		{name: "signal", native: false, last: "interrupted"},
		{name: "deaf_then_kill", native: true, env: []string{"DEAF=1", "IGNORE_INT=1"}, last: "interrupted", killed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			grace := 30 * time.Second
			if tc.killed {
				grace = 300 * time.Millisecond
			}
			env := append([]string{`START={"req":"a"}`}, tc.env...)
			r := runSession(t, ctx, &testWire{native: tc.native}, Session{InterruptTimeout: grace}, func(ev agent.Event) {
				if ev.Type == agent.EventInteractionRequested {
					cancel()
				}
			}, env...)
			if r.err != nil {
				t.Fatalf("err = %v\n%s", r.err, r.logs)
			}
			last := r.evs[len(r.evs)-1]
			if last.Type != agent.EventRunInterrupted || last.Text != tc.last {
				t.Fatalf("events = %s, last = %+v", r.types(), last)
			}
			if want := "interaction.requested interaction.resolved(a:turn_ended) run.interrupted"; r.types() != want {
				t.Fatalf("events = %s, want %s", r.types(), want)
			}
			if tc.killed != strings.Contains(r.logs, "did not stop in time, killing") {
				t.Fatalf("kill logged = %v, want %v\n%s", !tc.killed, tc.killed, r.logs)
			}
			if tc.killed && r.took < grace {
				t.Fatalf("killed after %v, before the %v deadline", r.took, grace)
			}
		})
	}
}

func TestSessionCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := runSession(t, ctx, &testWire{}, Session{}, nil)
	if r.err != nil || r.types() != "run.interrupted" {
		t.Fatalf("err = %v, events = %s", r.err, r.types())
	}
}

func TestSessionExitDeadlineAfterTurn(t *testing.T) {
	// The turn completes; the CLI does not exit at stdin EOF: it is killed
	// after ExitTimeout and the run still completed.
	r := runSession(t, t.Context(), &testWire{}, Session{ExitTimeout: 200 * time.Millisecond}, nil,
		`START={"type":"done"}`, "LINGER=1")
	if r.err != nil || r.types() != "run.completed" {
		t.Fatalf("err = %v, events = %s", r.err, r.types())
	}
	if !strings.Contains(r.logs, "did not stop in time, killing") {
		t.Fatalf("no kill logged:\n%s", r.logs)
	}
}

func TestSessionWireTimer(t *testing.T) {
	r := runSession(t, t.Context(), &testWire{}, Session{}, nil, `START={"timer":20}`)
	if r.err != nil || r.types() != "run.completed" || r.evs[0].Text != "timer t" {
		t.Fatalf("err = %v, events = %+v", r.err, r.evs)
	}
}

func TestSessionNotInstalled(t *testing.T) {
	err := Session{Spec: Spec{Bin: "threadline-no-such-cli"}, Wire: &testWire{}, InstallHint: "npm i x"}.Run(t.Context(), func(agent.Event) {
		t.Error("event emitted")
	})
	if !errors.Is(err, agent.ErrNotInstalled) || !strings.Contains(err.Error(), "install: npm i x") {
		t.Fatalf("err = %v", err)
	}
}

func TestSessionRelayed(t *testing.T) {
	rel := testRelay(t)
	rr := rel.Run("run-s")
	answers := make(chan agent.InteractionResponse, 1)
	r := runSession(t, WithRelay(t.Context(), rr), &testWire{}, Session{Responses: answers}, func(ev agent.Event) {
		if ev.Type == agent.EventInteractionRequested {
			answers <- agent.InteractionResponse{InteractionID: ev.Interaction.ID}
		}
	}, `START={"req":"a"}`)
	if !rr.Relayed() {
		t.Fatal("the session's child did not run under the relay")
	}
	if r.err != nil || r.types() != "interaction.requested interaction.resolved(a:answered) run.completed" {
		t.Fatalf("err = %v, events = %s\n%s", r.err, r.types(), r.logs)
	}
	if _, err := os.Stat(rel.RunDir("run-s") + "/" + relayExit); err != nil {
		t.Fatalf("relay left no exit record: %v", err)
	}
}

// TestSessionBurstNotHeldBack: lines that came in one read with a partial
// line after them reach the wire before the rest of that line, which the
// child only writes once the wire answered the first of them.
func TestSessionBurstNotHeldBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	answers := make(chan agent.InteractionResponse, 1)
	r := runSession(t, ctx, &testWire{}, Session{Responses: answers}, func(ev agent.Event) {
		if ev.Type == agent.EventInteractionRequested {
			answers <- agent.InteractionResponse{InteractionID: ev.Interaction.ID, Decision: agent.DecisionAnswer}
		}
	}, "BURST={\"n\":1}\n{\"req\":\"a\"}\n{\"n\":2}\n{\"type\":")
	if r.err != nil {
		t.Fatalf("err = %v\n%s", r.err, r.logs)
	}
	if got, want := r.types(), "interaction.requested interaction.resolved(a:answered) run.completed"; got != want {
		t.Fatalf("events = %s, want %s\n%s", got, want, r.logs)
	}
}

// emittingWire answers like the claude wire: Respond writes the answer to the
// CLI and emits its resolution itself; the echo of the answer completes.
type emittingWire struct{ testWire }

func (w *emittingWire) Line(line []byte, c *Conn) error {
	if bytes.Contains(line, []byte(`"echo":"answer:`)) {
		c.Emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	}
	return w.testWire.Line(line, c)
}

func (w *emittingWire) Respond(resp agent.InteractionResponse, c *Conn) error {
	c.Write([]byte("answer:" + resp.InteractionID))
	c.Emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: resp.InteractionID, Status: agent.StatusApproved}})
	return nil
}

// relayWrites asks the run's relay how many stdin lines it wrote to the child.
func relayWrites(t *testing.T, rel Relay, runID string) int {
	t.Helper()
	c, err := net.Dial("unix", filepath.Join(rel.RunDir(runID), relaySock))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tok, err := os.ReadFile(filepath.Join(rel.RunDir(runID), relayTok))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(relayRequest{Op: "status", Token: string(tok)})
	if _, err := c.Write(append(req, '\n')); err != nil {
		t.Fatal(err)
	}
	var rep relayReply
	if err := json.NewDecoder(c).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	return rep.Writes
}

// TestSessionAnswerWrittenAfterItsResolution: an answer reaches the child
// only after the wire's resolution of it was emitted (and so, in the prompt
// service, persisted): a bot killed while handling the resolution must not
// leave an agent acting on a decision nobody recorded. Without the hold the
// relay has written the answer (2 writes) when the resolution is emitted.
func TestSessionAnswerWrittenAfterItsResolution(t *testing.T) {
	rel := testRelay(t)
	rr := rel.Run("run-h")
	answers := make(chan agent.InteractionResponse, 1)
	writesAtResolution := -1
	r := runSession(t, WithRelay(t.Context(), rr), &emittingWire{}, Session{Responses: answers}, func(ev agent.Event) {
		switch ev.Type {
		case agent.EventInteractionRequested:
			answers <- agent.InteractionResponse{InteractionID: ev.Interaction.ID, Decision: agent.DecisionApprove}
		case agent.EventInteractionResolved:
			writesAtResolution = relayWrites(t, rel, "run-h")
		}
	}, `START={"req":"a"}`)
	if r.err != nil || r.types() != "interaction.requested interaction.resolved(a:approved) run.completed" {
		t.Fatalf("err = %v, events = %s\n%s", r.err, r.types(), r.logs)
	}
	if writesAtResolution != 1 {
		t.Fatalf("relay had written %d lines when the resolution was emitted, want 1 (the prompt; the answer after)", writesAtResolution)
	}
}
