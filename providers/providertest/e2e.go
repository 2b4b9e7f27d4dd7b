// The harness of the real-CLI e2e tests: the pinned CLI found, the test run
// again inside the loopback-only network namespace, the scripted model
// server started, the provider built on both, each turn run in the test's
// working directory and, when the run's processes are marked, none of them
// left after it.

package providertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
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
}

// Setup finds cli and runs t again inside a loopback-only netns (InNetns).
// In the outer process it returns nil: the test ran, or was skipped, in the
// child, and the caller returns. Inside it starts the model server (start),
// makes the working directory and builds the provider (build, which may set
// h.Marker).
func Setup[F any, P Runner](t *testing.T, cli CLI, start func(t *testing.T) F, build func(h *Harness[F, P]) P) *Harness[F, P] {
	t.Helper()
	bin := FindCLI(t, cli.Name, cli.EnvVar)
	if !InNetns(t) {
		return nil
	}
	h := &Harness[F, P]{T: t, Bin: bin, Fake: start(t), Cwd: t.TempDir()}
	h.Prov = build(h)
	return h
}

// Run runs one turn of the provider (see Run) in h.Cwd unless req names a
// directory. With h.Marker set it also fails the test when one of the
// turn's processes is left after it (see MarkedLeft), and, for a turn that
// ended with a terminal event, when no marked process was seen alive at any
// of its events (the check would see nothing; a turn refused at its start
// may report after its process is gone).
func (h *Harness[F, P]) Run(req agent.RunRequest, onEvent OnEvent) *Result {
	h.T.Helper()
	if req.Cwd == "" {
		req.Cwd = h.Cwd
	}
	if h.Marker == "" {
		return Run(h.T, h.Prov, req, onEvent)
	}
	seen := false
	r := Run(h.T, h.Prov, req, func(ev agent.Event, cancel context.CancelFunc) {
		if !seen {
			seen = len(Marked(h.Marker)) > 0
		}
		if onEvent != nil {
			onEvent(ev, cancel)
		}
	})
	if !seen && r.Terminals() > 0 {
		h.T.Errorf("no process with %s=%s while the run ran: the left-behind check sees nothing", MarkerEnv, h.Marker)
	}
	if left := MarkedLeft(h.Marker); len(left) > 0 {
		h.T.Errorf("processes left after the run: %s", strings.Join(left, "; "))
	}
	return r
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

// Path is name in the working directory.
func (h *Harness[F, P]) Path(name string) string { return filepath.Join(h.Cwd, name) }

// Exists reports whether name exists in the working directory (a tool
// call wrote it).
func (h *Harness[F, P]) Exists(name string) bool {
	_, err := os.Stat(h.Path(name))
	return err == nil
}

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

// Scripting the scenarios of scenario.go with a fake model server's own
// script constructors (fakeapi, fakeresponses, fakeopenai: the same names,
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

// ChatFake is Setup's start of the Chat Completions fake (fakeopenai) with
// scripts.
func ChatFake(scripts ...fakeopenai.Script) func(t *testing.T) *fakeopenai.Server {
	return func(t *testing.T) *fakeopenai.Server { return fakeopenai.New(t, scripts...) }
}

// SharedCache points env's XDG_CACHE_HOME at <repo>/.cache/agents-xdg, the
// cache scripts/install-agents.sh and the e2e tests share (copilot unpacks
// 235 MB there on its first start).
func SharedCache(t testing.TB, env map[string]string) {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	env["XDG_CACHE_HOME"] = filepath.Join(root, ".cache", "agents-xdg")
}
