// kill -9 of the bot during concurrent streaming runs: relayed runs are
// reattached and complete with every event persisted exactly once; a run whose
// relay died too is marked interrupted and its card expires. The test binary
// is re-executed as the bot, as the relay and as a fake Claude Code CLI.

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun/procruntest"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/providers/codex/fakeresponses"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/store"
)

const testRoleEnv = "TL_TEST_ROLE"

// testHelperEnv names the copy of the test binary that sandboxed runs use
// as their helper (see TestMain).
const testHelperEnv = "TL_TEST_SANDBOX_HELPER"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "sandbox" { // procrun starts `<helper> sandbox POLICY -- BIN ARGS`
		main()
	}
	if len(os.Args) > 1 && os.Args[1] == "relay" { // procrun starts `<exe> relay DIR`
		code, _ := mainImpl(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		os.Exit(code)
	}
	sandboxHelper = os.Getenv(testHelperEnv) // set by the test process for its children
	switch os.Getenv(testRoleEnv) {
	case "fakeclaude":
		os.Exit(fakeStreamingClaude())
	case "bot":
		os.Exit(testBot())
	case "cli": // the test binary as the threadline binary
		main()
	case "fakemcp": // an MCP server of an agent's own (an image tool)
		if err := fakeresponses.ServeMCP(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "fakemcp:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// The sandbox helper is this test binary, copied where the agent user
	// may run it (go test's build directory is root's), once per test run:
	// children find it in the environment.
	if sandboxHelper == "" && os.Geteuid() == 0 {
		dir, h, err := procruntest.ShareExecutable("threadline")
		if err != nil {
			fmt.Fprintln(os.Stderr, "sandbox helper:", err)
			os.Exit(1)
		}
		sandboxHelper = h
		os.Setenv(testHelperEnv, h)
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

const (
	fakeChunks = 120
	fakeTick   = 25 * time.Millisecond
)

// fakeStreamingClaude speaks enough Claude Code stream-json: init, fakeChunks text
// deltas fakeTick apart, for a prompt containing ASK a can_use_tool request
// after the tenth delta (waiting for its answer), then a result.
func fakeStreamingClaude() int {
	if slicesContains(os.Args[1:], "--version") {
		fmt.Println("2.1.0 (Claude Code)")
		return 0
	}
	in := bufio.NewReader(os.Stdin)
	first, _ := in.ReadString('\n')
	ask := strings.Contains(first, "ASK")
	sess := "sess-" + strconv.Itoa(os.Getpid())
	out := func(v any) {
		b, _ := json.Marshal(v)
		os.Stdout.Write(append(b, '\n'))
	}
	type m = map[string]any
	stream := func(ev m) { out(m{"type": "stream_event", "event": ev, "session_id": sess, "parent_tool_use_id": nil}) }
	out(m{"type": "system", "subtype": "init", "session_id": sess, "model": "fake", "cwd": ".", "tools": []string{}})
	stream(m{"type": "message_start", "message": m{"id": "msg_1", "type": "message", "role": "assistant", "model": "fake", "content": []any{}}})
	stream(m{"type": "content_block_start", "index": 0, "content_block": m{"type": "text", "text": ""}})
	for i := 1; i <= fakeChunks; i++ {
		time.Sleep(fakeTick)
		stream(m{"type": "content_block_delta", "index": 0, "delta": m{"type": "text_delta", "text": fmt.Sprintf("chunk %d ", i)}})
		if ask && i == 10 {
			out(m{"type": "control_request", "request_id": "req-1", "request": m{
				"subtype": "can_use_tool", "tool_name": "Bash", "input": m{"command": "echo hi"}, "tool_use_id": "toolu_1",
			}})
			for {
				line, err := in.ReadString('\n')
				if err != nil {
					return 3
				}
				if strings.Contains(line, `"control_response"`) {
					break
				}
			}
		}
	}
	stream(m{"type": "content_block_stop", "index": 0})
	stream(m{"type": "message_stop"})
	out(m{"type": "result", "subtype": "success", "is_error": false, "result": "done", "session_id": sess,
		"duration_ms": 1500, "num_turns": 1, "total_cost_usd": 0.001, "usage": m{"input_tokens": 1, "output_tokens": 2}})
	return 0
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// relayTestConfig is the config of the bot and of its restart. The app
// these tests open is not isolated (no withIsolation: the fake CLI is this
// test binary, in root's build directory), so neither is detection.
func relayTestConfig(db string) (*configs.Config, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return &configs.Config{
		Database: configs.DatabaseConfig{URL: db},
		Host:     configs.HostConfig{Isolation: configs.IsolationOff},
		Agents:   map[string]configs.AgentConfig{"claude": {Bin: exe, Env: map[string]string{testRoleEnv: "fakeclaude"}}},
	}, nil
}

// testBot starts TL_N runs (even chats interactive; chats 0, 4, 8, ... get
// their approval answered at once, chats 2, 6, ... leave it pending), prints
// their run ids and "started", and waits to be killed.
func testBot() int {
	ctx := context.Background()
	cfg, err := relayTestConfig(os.Getenv("TL_DB"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := openApp(ctx, cfg, log, agent.ApprovalAsk, withRelays(os.Getenv("TL_RELAYS")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	n, _ := strconv.Atoi(os.Getenv("TL_N"))
	for i := range n {
		id := fmt.Sprintf("c%02d", i)
		cwd := chatDir(os.Getenv("TL_CWD"), id) // as serve's loose chats: a directory each
		if err := a.store.CreateChat(ctx, &store.Chat{ID: id, Agent: "claude", Cwd: cwd}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		text := "stream"
		if i%2 == 0 {
			text = "stream ASK"
		}
		run, err := a.prompt.Start(ctx, prompt.StartRequest{ChatID: agent.ChatID(id), Prompt: text, By: "test", Interactive: i%2 == 0})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("run %s %s\n", id, run.ID)
		if i%4 == 0 {
			go func() {
				for {
					ins, _ := a.store.PendingInteractions(ctx, string(run.ID))
					for _, in := range ins {
						if a.prompt.RespondInteraction(ctx, agent.ChatID(id), run.ID, agent.InteractionResponse{InteractionID: in.ID, Decision: agent.DecisionApprove, By: "test"}) == nil {
							return
						}
					}
					time.Sleep(10 * time.Millisecond)
				}
			}()
		}
	}
	fmt.Println("started")
	select {}
}

type relayMeta struct {
	RelayPid int `json:"relay_pid"`
	ChildPid int `json:"child_pid"`
}

func TestKill9DuringConcurrentRunsReattaches(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	const n = 20
	dir := isolate(t)
	relays, err := os.MkdirTemp("", "tlk") // short: unix socket paths
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killRelays(relays); os.RemoveAll(relays) })
	db := filepath.Join(dir, "tl.db")
	exe, _ := os.Executable()

	bot := exec.Command(exe)
	bot.Env = append(os.Environ(), testRoleEnv+"=bot", "TL_DB="+db, "TL_RELAYS="+relays, "TL_N="+strconv.Itoa(n), "TL_CWD="+dir)
	var botErr strings.Builder
	bot.Stderr = &botErr
	stdout, err := bot.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bot.Start(); err != nil {
		t.Fatal(err)
	}
	runs := map[string]string{} // chat -> run
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "started" {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "run" {
			runs[f[1]] = f[2]
		}
	}
	if len(runs) != n {
		_ = bot.Process.Kill()
		_ = bot.Wait()
		t.Fatalf("bot started %d runs; stderr:\n%s", len(runs), botErr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	// Mid-stream: once every run has reached its approval point (ten deltas,
	// watching the database the bot writes) and a few more ticks passed, so
	// that answered approvals go on streaming; on a loaded machine the runs
	// start far apart, so waiting for the slowest beats a fixed sleep.
	if watch, err := store.Open(context.Background(), db, nil); err == nil {
		deadline := time.Now().Add(time.Duration(fakeChunks) * fakeTick)
		for time.Now().Before(deadline) && !allStreaming(watch, runs, 10) {
			time.Sleep(10 * time.Millisecond)
		}
		watch.Close()
	}
	time.Sleep(5 * fakeTick)
	if err := bot.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = bot.Wait()
	st, err := store.OpenAndMigrate(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string][]store.Event{}
	for chat := range runs {
		before[chat] = runEvents(t, st, chat, runs[chat])
	}
	st.Close()
	// One run loses its relay and agent too (say, the host's OOM killer): it
	// cannot be reattached. c02 has its approval pending.
	dead := "c02"
	var meta relayMeta
	// Its relay writes meta.json once the agent started; on a loaded machine
	// that can come after the others are done streaming: wait for it.
	var b []byte
	for deadline := time.Now().Add(providertest.Scale(time.Minute)); ; time.Sleep(20 * time.Millisecond) {
		b, _ = os.ReadFile(filepath.Join(relays, runs[dead], "meta.json"))
		if err := json.Unmarshal(b, &meta); err == nil && meta.RelayPid != 0 || time.Now().After(deadline) {
			break
		}
	}
	if err := json.Unmarshal(b, &meta); err != nil || meta.RelayPid == 0 {
		t.Fatalf("meta of %s: %s %v", dead, b, err)
	}
	_ = syscall.Kill(meta.RelayPid, syscall.SIGKILL)
	_ = syscall.Kill(-meta.ChildPid, syscall.SIGKILL)
	waitGone(t, meta.RelayPid)

	// Restart.
	ctx := context.Background()
	cfg, err := relayTestConfig(db)
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedLog
	a, err := openApp(ctx, cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})), agent.ApprovalAsk, withRelays(relays))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// Pending cards: still pending (not expired) and answerable on reattached
	// runs. Those are c02, c06, ... and any card of c00, c04, ... whose answer
	// the bot was delivering at the kill: procrun writes an answer to the
	// agent only once its resolution is persisted, so one not persisted yet
	// never reached the agent and the card is open again.
	pendingAnswered := 0
	for i := 0; i < n; i += 2 {
		chat := fmt.Sprintf("c%02d", i)
		if chat == dead {
			continue
		}
		if i%4 == 0 { // answered by the bot: only if that answer was lost
			if ins, err := a.store.PendingInteractions(ctx, runs[chat]); err != nil || len(ins) == 0 {
				continue
			}
		}
		if answerWhenAsked(t, a, chat, runs[chat]) {
			pendingAnswered++
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for chat, id := range runs {
		for {
			r, err := a.store.GetRun(ctx, id)
			if err == nil && r.Status != runhub.StatusRunning {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run of %s still %s; logs:\n%s", chat, r.Status, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	var reattached, completed, interrupted, lost, dups, persistedBefore, persistedAfter, finishedBefore int
	for chat, id := range runs {
		r, _ := a.store.GetRun(ctx, id)
		evs := runEvents(t, a.store, chat, id)
		persistedBefore += len(before[chat])
		persistedAfter += len(evs)
		seen := map[string]bool{}
		for _, e := range evs {
			k := e.Type + string(e.Payload)
			if seen[k] {
				dups++
				t.Errorf("%s: duplicate event %s %s", chat, e.Type, e.Payload)
			}
			seen[k] = true
		}
		for i, e := range before[chat] { // nothing persisted before the kill is lost or changed
			if i >= len(evs) || evs[i].Seq != e.Seq || string(evs[i].Payload) != string(e.Payload) {
				lost++
				t.Errorf("%s: event %d changed or lost", chat, e.Seq)
			}
		}
		switch chat {
		case dead:
			interrupted++
			var said bool
			for _, e := range evs[len(before[chat]):] {
				said = said || e.Type == string(agent.EventRunInterrupted)
			}
			if r.Status != runhub.StatusInterrupted || !said {
				t.Errorf("%s: status %s, run.interrupted appended: %v", chat, r.Status, said)
			}
			ins, _ := a.store.ListInteractions(ctx, chat)
			if len(ins) != 1 || ins[0].Status != store.InteractionExpired {
				t.Errorf("%s: card not expired: %+v", chat, ins)
			}
			continue
		}
		ended := false // the run finished before the kill (a loaded machine)
		for _, e := range before[chat] {
			ended = ended || e.Type == string(agent.EventRunCompleted)
		}
		switch {
		case ended:
			finishedBefore++
		case r.Owner == a.owner: // adopted by the restarted process
			reattached++
		}
		if r.Status == runhub.StatusCompleted {
			completed++
		} else {
			t.Errorf("%s: status %s (%s)", chat, r.Status, r.Error)
		}
		var text strings.Builder
		for _, e := range evs {
			if e.Type == string(agent.EventAssistantDelta) {
				var ev agent.Event
				_ = json.Unmarshal(e.Payload, &ev)
				text.WriteString(ev.Text)
			}
		}
		var want strings.Builder
		for i := 1; i <= fakeChunks; i++ {
			fmt.Fprintf(&want, "chunk %d ", i)
		}
		if text.String() != want.String() {
			t.Errorf("%s: answer %q", chat, text.String())
		}
		idx, _ := strconv.Atoi(chat[1:])
		if idx%2 == 0 {
			ins, _ := a.store.ListInteractions(ctx, chat)
			if len(ins) != 1 || ins[0].Status != store.InteractionApproved {
				t.Errorf("%s: interaction %+v", chat, ins)
			}
		}
		if _, err := os.Stat(filepath.Join(relays, id)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: relay dir left behind: %v", chat, err)
		}
	}
	if reattached+finishedBefore != n-1 || completed != n-1 || interrupted != 1 {
		t.Errorf("reattached %d (+%d finished before the kill), completed %d, interrupted %d of %d", reattached, finishedBefore, completed, interrupted, n)
	}
	if finishedBefore > n/4 {
		t.Errorf("%d runs finished before the kill: the kill came too late to test reattaching", finishedBefore)
	}
	t.Logf("kill -9 during %d concurrent runs: %d events persisted before the kill, %d after; %d reattached (+%d finished before the kill), %d completed, %d marked interrupted (relay killed too), %d pending cards answered after the restart, %d lost, %d duplicates",
		n, persistedBefore, persistedAfter, reattached, finishedBefore, completed, interrupted, pendingAnswered, lost, dups)
}

// answerWhenAsked approves the run's pending interaction once the reattached
// run knows it again.
func answerWhenAsked(t *testing.T, a *app, chat, runID string) bool {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ins, err := a.store.PendingInteractions(ctx, runID)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range ins {
			err := a.prompt.RespondInteraction(ctx, agent.ChatID(chat), agent.RunID(runID), agent.InteractionResponse{InteractionID: in.ID, Decision: agent.DecisionApprove, By: "test"})
			if err == nil {
				return true
			}
		}
		if len(ins) == 0 {
			if r, _ := a.store.GetRun(ctx, runID); r.Status != runhub.StatusRunning {
				return false
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%s: pending interaction never became answerable", chat)
	return false
}

// allStreaming reports whether every run (chat → run) has persisted at least
// n deltas.
func allStreaming(st *store.Store, runs map[string]string, n int) bool {
	for chat, id := range runs { // ids as the child printed them
		evs, err := st.EventsAfter(context.Background(), agent.ChatID(chat), 0, 10000)
		if err != nil {
			return false
		}
		deltas := 0
		for _, e := range evs {
			if e.RunID == agent.RunID(id) && e.Type == string(agent.EventAssistantDelta) {
				deltas++
			}
		}
		if deltas < n {
			return false
		}
	}
	return true
}

func runEvents(t *testing.T, st *store.Store, chat, runID string) []store.Event {
	t.Helper()
	evs, err := st.EventsAfter(context.Background(), agent.ChatID(chat), 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Event
	for _, e := range evs {
		if e.RunID == agent.RunID(runID) {
			out = append(out, e)
		}
	}
	return out
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for range 500 {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d did not die", pid)
}

// killRelays kills what a failed test left running.
func killRelays(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		var m relayMeta
		b, _ := os.ReadFile(filepath.Join(dir, e.Name(), "meta.json"))
		if json.Unmarshal(b, &m) == nil && m.RelayPid > 0 {
			_ = syscall.Kill(-m.ChildPid, syscall.SIGKILL)
			_ = syscall.Kill(m.RelayPid, syscall.SIGKILL)
		}
	}
}

// chatDir is chat's own directory below root, created (chats sharing one
// directory would take turns: worktrees.Manager.lockDir).
func chatDir(root, chat string) string {
	d := filepath.Join(root, chat)
	_ = os.MkdirAll(d, 0o755)
	return d
}

// logRelays logs each relay's own log and exit file in dir.
func logRelays(t *testing.T, dir string) {
	for _, name := range []string{"relay.log", "exit.json"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*", name))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			t.Logf("%s:\n%s", f, b)
		}
	}
}

type lockedLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestServeShutdownDetachesRelayedRuns: SIGTERM (ctx end) detaches relayed
// runs instead of interrupting them; the next start reattaches and finishes
// them, the pending card answerable, nothing persisted twice.
func TestServeShutdownDetachesRelayedRuns(t *testing.T) {
	dir := isolate(t)
	relays, err := os.MkdirTemp("", "tls")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killRelays(relays); os.RemoveAll(relays) })
	cfg, err := relayTestConfig(filepath.Join(dir, "tl.db"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.HTTP.Listen = "127.0.0.1:0"
	ctx := context.Background()
	var logs lockedLog
	log := slog.New(slog.NewTextHandler(&logs, nil))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the bot's log:\n%s", logs.String())
			logRelays(t, relays)
		}
	})
	a, err := openApp(ctx, cfg, log, agent.ApprovalAsk, withRelays(relays))
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]string{}
	for i, text := range []string{"stream ASK", "stream"} {
		chat := fmt.Sprintf("s%d", i)
		if err := a.store.CreateChat(ctx, &store.Chat{ID: chat, Agent: "claude", Cwd: chatDir(dir, chat)}); err != nil {
			t.Fatal(err)
		}
		r, err := a.prompt.Start(ctx, prompt.StartRequest{ChatID: agent.ChatID(chat), Prompt: text, By: "test", Interactive: i == 0})
		if err != nil {
			t.Fatal(err)
		}
		runs[chat] = string(r.ID)
	}
	// Mid-stream: every run has streamed ten deltas (watching the database;
	// a run may start late on a loaded machine, after its version probe).
	chatopstest.WaitFor(t, "both runs streaming", func() bool { return allStreaming(a.store, runs, 10) })
	front := &fakeFront{ran: make(chan struct{}), stopped: make(chan struct{})}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- serve(sctx, a, []frontEnd{front}) }()
	select {
	case <-front.ran:
	case err := <-done: // serve gave up before running its front-ends
		t.Fatalf("serve returned %v before running its front-end\n%s", err, logs.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "runs detached") || !strings.Contains(logs.String(), "runs=2") {
		t.Fatalf("no detach logged:\n%s", logs.String())
	}
	st, err := store.OpenAndMigrate(ctx, cfg.Database.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]int{}
	for chat, id := range runs {
		if r, _ := st.GetRun(ctx, id); r.Status != runhub.StatusRunning {
			t.Errorf("%s: detached run is %s", chat, r.Status)
		}
		before[chat] = len(runEvents(t, st, chat, id))
	}
	st.Close()

	a2, err := openApp(ctx, cfg, log, agent.ApprovalAsk, withRelays(relays))
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	if !answerWhenAsked(t, a2, "s0", runs["s0"]) {
		t.Fatal("pending card not answerable after the restart")
	}
	for chat, id := range runs {
		deadline := time.Now().Add(30 * time.Second)
		for {
			r, _ := a2.store.GetRun(ctx, id)
			if r.Status == runhub.StatusCompleted {
				break
			}
			if r.Status != runhub.StatusRunning || time.Now().After(deadline) {
				t.Fatalf("%s: %s (%s)\n%s", chat, r.Status, r.Error, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		evs := runEvents(t, a2.store, chat, id)
		seen := map[string]bool{}
		var deltas int
		for _, e := range evs {
			if seen[e.Type+string(e.Payload)] {
				t.Errorf("%s: duplicate %s %s", chat, e.Type, e.Payload)
			}
			seen[e.Type+string(e.Payload)] = true
			if e.Type == string(agent.EventAssistantDelta) {
				deltas++
			}
		}
		if deltas != fakeChunks || before[chat] == 0 || before[chat] >= len(evs) {
			t.Errorf("%s: %d deltas, %d events before the restart, %d after", chat, deltas, before[chat], len(evs))
		}
	}
}
