// Fake CLIs for the providers' unit tests: a shell script that records how
// it was started and what it read, the launch a provider runs it with, and a
// collector of the events a run emits.

package providertest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/registry"
)

// FakeCLI writes an executable shell script called name into a fresh
// temporary directory dir. It records its arguments, one a line, in
// dir/args, then runs body, in which $DIR is dir (e.g. `cat > "$DIR/stdin"`
// keeps stdin, `cat "$DIR/../fixture.jsonl"` prints a fixture).
func FakeCLI(t testing.TB, name, body string) (bin, dir string) {
	t.Helper()
	dir = t.TempDir()
	bin = filepath.Join(dir, name)
	script := "#!/bin/sh\nDIR='" + dir + "'\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$DIR/args\"\n" + body + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

// Testdata returns the absolute path of testdata/name in the package under
// test (for a fake CLI, which runs elsewhere).
func Testdata(t testing.TB, name string) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// PrintFixture returns the shell line of a FakeCLI body that prints the
// fixture testdata/name of the package under test.
func PrintFixture(t testing.TB, name string) string {
	t.Helper()
	return `cat "` + Testdata(t, name) + `"`
}

// RecordStdin is the shell line of a FakeCLI body that keeps its stdin in
// $DIR/stdin (see FakeStdin).
const RecordStdin = `cat > "$DIR/stdin"`

// FakeStdin returns what a FakeCLI in dir kept of its stdin (RecordStdin).
func FakeStdin(t testing.TB, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "stdin"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FakeStarted reports whether the FakeCLI in dir was started (it wrote its
// arguments).
func FakeStarted(t testing.TB, dir string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(dir, "args"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// FakeGrace is how long a cancelled run on a FakeLaunch waits for its CLI
// to stop before the kill.
const FakeGrace = 500 * time.Millisecond

// FakeLaunch is the launch of a provider under test on the fake CLI bin:
// the host environment is PATH alone (no secret of the test's environment
// reaches it) and a cancelled run is killed after FakeGrace.
func FakeLaunch(bin string) procrun.Launch {
	return procrun.Launch{Bin: bin, HostEnv: func() []string { return []string{"PATH=/usr/bin:/bin"} }, StopGrace: FakeGrace}
}

// FakeArgs returns the arguments a FakeCLI in dir was last started with.
func FakeArgs(t testing.TB, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// Events collects the events of runs; Emit may be called from any goroutine.
type Events struct {
	mu  sync.Mutex
	evs []agent.Event
}

// Emit records ev (the emit function of a Run).
func (e *Events) Emit(ev agent.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
}

// All returns a copy of the events so far.
func (e *Events) All() []agent.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]agent.Event(nil), e.evs...)
}

// Types returns the types of the events so far.
func (e *Events) Types() []agent.EventType { return Types(e.All()) }

// Last returns the last event so far (the zero event when there is none).
func (e *Events) Last() agent.Event {
	evs := e.All()
	if len(evs) == 0 {
		return agent.Event{}
	}
	return evs[len(evs)-1]
}

// CancelOn returns an OnEvent (see Run) that cancels the run at its first
// event of type typ.
func CancelOn(typ agent.EventType) OnEvent {
	return func(ev agent.Event, cancel context.CancelFunc) {
		if ev.Type == typ {
			cancel()
		}
	}
}

// CheckInterrupted fails t unless r is a cancelled run's result: Run
// returned nil, the last event is run.interrupted and no run.completed came.
func CheckInterrupted(t testing.TB, r *Result) {
	t.Helper()
	if r.Err != nil || r.Last().Type != agent.EventRunInterrupted || len(r.Of(agent.EventRunCompleted)) > 0 {
		t.Fatalf("cancelled run: Run = %v, events %+v", r.Err, r.Events)
	}
}

// CheckVersion probes d on the real CLI bin (as `threadline agents` does)
// and fails t unless it is ready at one of d's verified versions.
func CheckVersion(t testing.TB, d registry.Definition, bin string) {
	t.Helper()
	d.Bin = bin
	r := registry.Probe(t.Context(), []registry.Definition{d}, registry.ProbeOptions{})[0]
	if r.Status != registry.StatusReady || !slices.Contains(d.VerifiedVersions, r.Version) || r.VersionWarning != "" {
		t.Fatalf("%s: report %+v, verified %q", d.ID, r, d.VerifiedVersions)
	}
}

// FlagValues are model and effort values that could read as a flag or
// split into other arguments: every command line builder refuses them
// (agent.CheckRunArgs).
var FlagValues = []agent.RunRequest{
	{Prompt: "P", Model: "--auto"}, {Prompt: "P", Model: "-m"}, {Prompt: "P", Effort: "--auto"},
	{Prompt: "P", Model: "a b"}, {Prompt: "P", Model: "k\tx"}, {Prompt: "P", Model: "m\nx"}, {Prompt: "P", Model: "x\x00y"},
}

// CheckFlagValues checks a command line builder (command returns the
// arguments for a request): every FlagValues request is refused with
// agent.ErrInvalidArgValue and no arguments, and the valid model
// "provider/model-1" becomes the one argument "--model=provider/model-1"
// (when bound; else no model argument at all), never a bare -m or --model.
// It returns the arguments of the valid request.
func CheckFlagValues(t testing.TB, command func(agent.RunRequest) ([]string, error), bound bool) []string {
	t.Helper()
	for _, req := range FlagValues {
		if args, err := command(req); !errors.Is(err, agent.ErrInvalidArgValue) || args != nil {
			t.Errorf("%+v: args %q, err %v; want ErrInvalidArgValue and no args", req, args, err)
		}
	}
	args, err := command(agent.RunRequest{Prompt: "P", Model: "provider/model-1"})
	if err != nil || slices.Contains(args, "--model=provider/model-1") != bound || slices.Contains(args, "--model") || slices.Contains(args, "-m") {
		t.Errorf("args %q, err %v; want --model=provider/model-1 bound: %v", args, err, bound)
	}
	return args
}
