// Provider tests against fake CLIs, and the command lines per dialect.

package jsonstream

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// fakeCLI writes a fake CLI that records argv (one per line) to dir/args and
// stdin to dir/stdin, then prints the fixture (if any) and runs body.
func fakeCLI(t *testing.T, fixture, body string) (bin, dir string) {
	t.Helper()
	cat := ""
	if fixture != "" {
		cat = providertest.PrintFixture(t, fixture) + "\n"
	}
	return providertest.FakeCLI(t, "cli", providertest.RecordStdin+"\n"+cat+body)
}

// newTestProvider runs dialect d on the fake bin (providertest.FakeLaunch).
func newTestProvider(t *testing.T, d Dialect, bin string) *Provider {
	t.Helper()
	p, err := New(nil, Options{Launch: providertest.FakeLaunch(bin), Dialect: d})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunEachDialectCompletes(t *testing.T) {
	for _, tc := range turnFixtures {
		t.Run(string(tc.d), func(t *testing.T) {
			bin, dir := fakeCLI(t, tc.file, "")
			providertest.CheckRunCompleted(t, newTestProvider(t, tc.d, bin), agent.RunRequest{Prompt: "line one\nline two", Model: "m1"})
			wantStdin := "line one\nline two\n"
			if tc.d == GrokCLI { // the prompt is an argument; stdin is closed
				wantStdin = ""
			}
			if stdin := providertest.FakeStdin(t, dir); stdin != wantStdin {
				t.Errorf("stdin = %q", stdin)
			}
			want, _ := Command(tc.d, agent.RunRequest{Prompt: "line one\nline two", Model: "m1"}, DefaultArgvLimit)
			if args := providertest.FakeArgs(t, dir); strings.Join(args, "\n") != strings.Join(want, "\n") {
				t.Errorf("args (one a line) = %q, want %q", args, want)
			}
		})
	}
}

func TestCommand(t *testing.T) {
	req := agent.RunRequest{Model: "m", Effort: "high", ResumeID: "s1", Cwd: "/w", Args: []string{"--extra"}}
	accept := req
	accept.Approval = agent.ApprovalAccept
	fork := req
	fork.Fork = true
	for _, tc := range []struct {
		d    Dialect
		req  agent.RunRequest
		want []string
	}{
		{OpenCode, req, []string{"run", "--format", "json", "--thinking", "--model=m", "--variant=high", "-s", "s1", "--extra"}},
		{OpenCode, accept, []string{"run", "--format", "json", "--thinking", "--model=m", "--variant=high", "-s", "s1", "--auto", "--extra"}},
		{OpenCode, fork, []string{"run", "--format", "json", "--thinking", "--model=m", "--variant=high", "-s", "s1", "--fork", "--extra"}},
		{Mimo, fork, []string{"run", "--format", "json", "--thinking", "--model=m", "--variant=high", "-s", "s1", "--fork", "--extra"}},
		{CursorAgent, req, []string{"--print", "--output-format", "stream-json", "--stream-partial-output", "--trust", "--model=m", "--resume", "s1", "--workspace", "/w", "--extra"}},
		{CursorAgent, accept, []string{"--print", "--output-format", "stream-json", "--stream-partial-output", "--trust", "--force", "--model=m", "--resume", "s1", "--workspace", "/w", "--extra"}},
		{CursorAgent, fork, []string{"--print", "--output-format", "stream-json", "--stream-partial-output", "--trust", "--model=m", "--workspace", "/w", "--extra"}},
		{Copilot, accept, []string{"--output-format", "json", "--allow-all-tools", "--model=m", "--resume", "s1", "--extra"}},
		{Copilot, fork, []string{"--output-format", "json", "--model=m", "--extra"}},
		{Qoder, accept, []string{"-p", "--output-format", "stream-json", "--yolo", "-w", "/w", "--model=m", "-r", "s1", "--extra"}},
		{GrokCLI, accept, []string{"--model=m", "--extra", "--prompt", ""}},
		{GrokCLI, agent.RunRequest{Prompt: "-rf all\nof it"}, []string{"--prompt", "-rf all\nof it"}},
	} {
		got, err := Command(tc.d, tc.req, DefaultArgvLimit)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s %+v:\n got %q %v\nwant %q", tc.d, tc.req.Approval, got, err, tc.want)
		}
	}
	if _, err := Command("nope", req, DefaultArgvLimit); !errors.Is(err, ErrUnknownDialect) {
		t.Errorf("unknown dialect: %v", err)
	}
	if _, err := New(nil, Options{Dialect: "nope"}); !errors.Is(err, ErrUnknownDialect) {
		t.Errorf("New unknown dialect: %v", err)
	}
}

func TestRunOpenCodeErrorFails(t *testing.T) {
	bin, _ := fakeCLI(t, "opencode-http500.jsonl", "exit 1")
	r := providertest.CheckRunFailed(t, newTestProvider(t, OpenCode, bin), agent.RunRequest{Prompt: "p"}, "")
	if got := r.Types(); !slices.Equal(got, []agent.EventType{agent.EventRunFailed}) {
		t.Fatalf("events = %v", got)
	}
}

func TestRunExitWithoutEndFails(t *testing.T) {
	// The last step ended with tool-calls and the CLI died: no success.
	bin, _ := fakeCLI(t, "", `head -4 "`+providertest.Testdata(t, "opencode-tool.jsonl")+`"
echo "opencode: killed by the OOM reaper" >&2
exit 137`)
	providertest.CheckRunFailed(t, newTestProvider(t, OpenCode, bin), agent.RunRequest{Prompt: "p"}, "OOM reaper")
}

func TestRunCancelled(t *testing.T) {
	bin, _ := fakeCLI(t, "", `echo '{"type":"step_start","sessionID":"ses_x","part":{}}'
exec sleep 30`)
	providertest.CheckInterrupted(t, providertest.Run(t, newTestProvider(t, OpenCode, bin), agent.RunRequest{Prompt: "p"},
		providertest.CancelOn(agent.EventSessionUpdated)))
}

func TestRunResumeAndFork(t *testing.T) {
	// Resuming the same session reports no session.updated; a fork does.
	bin, _ := fakeCLI(t, "opencode-text.jsonl", "")
	if r := providertest.CheckRunCompleted(t, newTestProvider(t, OpenCode, bin), agent.RunRequest{Prompt: "p", ResumeID: "ses_01"}); len(r.Of(agent.EventSessionUpdated)) > 0 {
		t.Errorf("resume re-announced the session: %v", r.Types())
	}
	if r := providertest.CheckRunCompleted(t, newTestProvider(t, OpenCode, bin), agent.RunRequest{Prompt: "p", ResumeID: "ses_01", Fork: true}); len(r.Of(agent.EventSessionUpdated)) == 0 {
		t.Errorf("fork did not report its session: %v", r.Types())
	}
}

func TestRunNotInstalled(t *testing.T) {
	providertest.CheckNotInstalled(t, func(bin string) *Provider { return newTestProvider(t, Copilot, bin) }, "@github/copilot")
}

func TestDescriptors(t *testing.T) {
	for _, dl := range Dialects {
		d, ok := Descriptor(dl)
		if !ok || d.Dialect != string(dl) || d.Executable == "" {
			t.Fatalf("%s: descriptor %+v", dl, d)
		}
		providertest.CheckDescriptor(t, d, "")
		args := providertest.CheckDescribedArgs(t, d, func(req agent.RunRequest) ([]string, error) {
			return Command(dl, req, DefaultArgvLimit)
		})
		if !slices.Equal(args[:len(d.Args.Base)], d.Args.Base) {
			t.Errorf("%s: args %q do not start with %q", dl, args, d.Args.Base)
		}
	}
	if _, ok := Descriptor("nosuch"); ok {
		t.Error("unknown dialect has a descriptor")
	}
}

// TestGrokCLIPromptTooLarge: grok-cli takes the prompt as one argument; one
// over the argv limit fails the run before anything starts.
func TestGrokCLIPromptTooLarge(t *testing.T) {
	bin, dir := fakeCLI(t, "grok-cli-tool.jsonl", "")
	p, err := New(nil, Options{Launch: providertest.FakeLaunch(bin), Dialect: GrokCLI, ArgvLimit: 8})
	if err != nil {
		t.Fatal(err)
	}
	r := providertest.CheckRunFailed(t, p, agent.RunRequest{Prompt: "a prompt of 25 characters"}, "")
	if !errors.Is(r.Err, ErrPromptTooLarge) || len(r.Events) != 1 {
		t.Fatalf("Run = %v, events %v", r.Err, r.Types())
	}
	if providertest.FakeStarted(t, dir) {
		t.Error("the CLI ran")
	}
	if _, err := Command(GrokCLI, agent.RunRequest{Prompt: "nul\x00byte"}, DefaultArgvLimit); !errors.Is(err, ErrPromptTooLarge) {
		t.Errorf("a NUL byte in an argv prompt: %v", err)
	}
}

// TestGrokCLIOutcomes: grok-cli's turn ends with its exit. A clean exit after
// the final message completes with it; its error message (exit 0) and an
// "Error: …" before a non-zero exit fail with the text; no final message
// fails as a run without a result, with the stderr tail.
func TestGrokCLIOutcomes(t *testing.T) {
	for name, tc := range map[string]struct {
		fixture, body string
		want          agent.EventType
		text          string
	}{
		"completed":   {"grok-cli-tool.jsonl", "", agent.EventRunCompleted, ""},
		"model error": {"grok-cli-error.jsonl", "", agent.EventRunFailed, "grok-cli: Grok API error: 500 boom upstream"},
		"exit 1":      {"", `echo '{"role":"assistant","content":"Error: bad thing"}'; exit 1`, agent.EventRunFailed, "grok-cli: Error: bad thing"},
		"no key":      {"", `echo '❌ Error: API key required. Set GROK_API_KEY' >&2; exit 1`, agent.EventRunFailed, "API key required"},
	} {
		t.Run(name, func(t *testing.T) {
			bin, _ := fakeCLI(t, tc.fixture, tc.body)
			r := providertest.Run(t, newTestProvider(t, GrokCLI, bin), agent.RunRequest{Prompt: "p"}, nil)
			if tc.want == agent.EventRunCompleted {
				providertest.CheckCompleted(t, r)
				return
			}
			providertest.CheckFailed(t, r, tc.text)
			if strings.Contains(r.Text(), tc.text) {
				t.Errorf("the failure was also shown as the answer: %v", r.Events)
			}
		})
	}
}

// TestRunSweepsEscapedTools: a tool the CLI started in a session of its own
// (as opencode and kilo start shell commands) is out of reach of the process
// group kill; it carries the run's token, and is killed by it once the run
// ended.
func TestRunSweepsEscapedTools(t *testing.T) {
	marker := providertest.OrphanMarker("escaped")
	bin, _ := fakeCLI(t, "opencode-text.jsonl", `[ -n "$`+RunTokenEnv+`" ] || exit 9
setsid sh -c "echo > '$DIR/up'; sleep 300; : `+marker+`" >/dev/null 2>&1 &
while [ ! -e "$DIR/up" ]; do sleep 0.01; done`)
	providertest.CheckRunCompleted(t, newTestProvider(t, OpenCode, bin), agent.RunRequest{Prompt: "p"})
	providertest.NoOrphans(t, marker)
}

// TestCommandRefusesFlagValues: "--auto" as a model (opencode would read it
// as auto-approve after "-m") or as an effort is refused by every dialect, as
// is an unknown mode, and a valid value is one argument bound to its flag.
func TestCommandRefusesFlagValues(t *testing.T) {
	t.Parallel()
	for _, d := range Dialects {
		t.Run(string(d), func(t *testing.T) {
			if args, err := Command(d, agent.RunRequest{Mode: "yolo"}, DefaultArgvLimit); !errors.Is(err, agent.ErrInvalidArgValue) || args != nil {
				t.Errorf("mode yolo: args %q, err %v", args, err)
			}
			args := providertest.CheckFlagValues(t, func(req agent.RunRequest) ([]string, error) {
				return Command(d, req, DefaultArgvLimit)
			}, true)
			if slices.Contains(args, "--variant") {
				t.Errorf("bare --variant in %q", args)
			}
		})
	}
	args, err := Command(OpenCode, agent.RunRequest{Effort: "high"}, DefaultArgvLimit)
	if err != nil || !slices.Contains(args, "--variant=high") || strings.Contains(strings.Join(args, " "), "--auto") {
		t.Errorf("opencode effort: %q %v", args, err)
	}
}
