// Provider tests against a fake kimi executable.

package kimi

import (
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// fakeKimi writes a fake kimi that records its argv (see
// providertest.FakeCLI), then runs body.
func fakeKimi(t *testing.T, body string) (bin, dir string) {
	t.Helper()
	return providertest.FakeCLI(t, "kimi", body)
}

// newTestProvider runs kimi on the fake bin (providertest.FakeLaunch).
func newTestProvider(bin string) *Provider {
	return New(nil, Options{Launch: providertest.FakeLaunch(bin)})
}

func TestRunCompletes(t *testing.T) {
	bin, dir := fakeKimi(t, providertest.PrintFixture(t, "tools.jsonl"))
	got := providertest.CheckRunCompleted(t, newTestProvider(bin), agent.RunRequest{
		Prompt: "fix the test", Model: "kimi-k2.5", ResumeID: "session_old", Args: []string{"--yolo"},
		Env: map[string]string{"KIMI_API_KEY": "k"},
	}).Types()
	if !slices.Contains(got, agent.EventToolCompleted) {
		t.Fatalf("events = %v", got)
	}
	if !slices.Contains(got, agent.EventSystem) {
		t.Errorf("resuming session_old but the CLI reported another: no session_not_resumed notice in %v", got)
	}
	want := []string{"-p", "fix the test", "--output-format", "stream-json", "--model=kimi-k2.5", "--session", "session_old", "--yolo"}
	if args := providertest.FakeArgs(t, dir); !slices.Equal(args, want) {
		t.Errorf("args = %q\nwant %q", args, want)
	}
}

func TestRunForkClearsResume(t *testing.T) {
	inv, err := Command(agent.RunRequest{Prompt: "p", ResumeID: "s1", Fork: true}, DefaultArgvLimit)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(inv.Args, "--session") || slices.Contains(inv.Args, "s1") {
		t.Fatalf("fork kept the resume id: %q", inv.Args)
	}
	inv, _ = Command(agent.RunRequest{Prompt: "p", ResumeID: "s1"}, DefaultArgvLimit)
	if !slices.Contains(inv.Args, "--session") {
		t.Fatalf("resume lost: %q", inv.Args)
	}
}

func TestRunLongPromptGoesToStdin(t *testing.T) {
	bin, dir := fakeKimi(t, providertest.RecordStdin+`
echo '{"role":"assistant","content":"got it"}'
echo '{"role":"meta","type":"session.resume_hint","session_id":"s9"}'`)
	prompt := strings.Repeat("long prompt ", 100)
	r := providertest.CheckRunCompleted(t, New(nil, Options{Launch: providertest.FakeLaunch(bin), ArgvLimit: 64}), agent.RunRequest{Prompt: prompt})
	args := providertest.FakeArgs(t, dir)
	if slices.Contains(args, "-p") || slices.Contains(args, prompt) || !slices.Equal(args[:5], []string{"--print", "--input-format", "stream-json", "--output-format", "stream-json"}) {
		t.Fatalf("args = %q", args)
	}
	if stdin := providertest.FakeStdin(t, dir); !strings.HasPrefix(stdin, `{"content":"long prompt long prompt`) || !strings.Contains(stdin, `"role":"user"`) || !strings.HasSuffix(stdin, "}\n") {
		t.Fatalf("stdin = %.120q", stdin)
	}
	if got := r.Types(); !slices.Equal(got, []agent.EventType{agent.EventAssistantDelta, agent.EventSessionUpdated, agent.EventRunCompleted}) {
		t.Fatalf("events = %v", got)
	}
}

func TestRunFailsWithoutHint(t *testing.T) {
	bin, _ := fakeKimi(t, `echo '{"role":"assistant","content":"half"}'
echo "Error: LLM provider error: 401 invalid api key" >&2
exit 1`)
	providertest.CheckRunFailed(t, newTestProvider(bin), agent.RunRequest{Prompt: "p"}, "401 invalid api key")
}

func TestRunCancelled(t *testing.T) {
	bin, _ := fakeKimi(t, `echo '{"role":"assistant","content":"thinking..."}'
exec sleep 30`)
	providertest.CheckInterrupted(t, providertest.Run(t, newTestProvider(bin), agent.RunRequest{Prompt: "p"},
		providertest.CancelOn(agent.EventAssistantDelta)))
}

func TestRunNotInstalled(t *testing.T) {
	providertest.CheckNotInstalled(t, newTestProvider, "kimi-cli")
}

func TestRunImagesDropped(t *testing.T) {
	bin, _ := fakeKimi(t, `echo '{"role":"meta","type":"session.resume_hint","session_id":"s"}'`)
	r := providertest.CheckRunCompleted(t, newTestProvider(bin), agent.RunRequest{Prompt: "p", Images: []agent.Image{{MediaType: "image/png", Data: []byte{1}}}})
	if r.Events[0].Type != agent.EventSystem || r.Events[0].Subtype != "images_dropped" {
		t.Fatalf("events %+v", r.Events)
	}
}

func TestDescriptor(t *testing.T) {
	d := Descriptor()
	if d.ID != string(ProviderID) || d.Executable != DefaultBin || d.InstallHint != installHint || d.NativeFork {
		t.Fatalf("descriptor %+v", d)
	}
	providertest.CheckDescriptor(t, d, registry.VerifiedFixtures)
	providertest.CheckDescribedArgs(t, d, func(req agent.RunRequest) ([]string, error) {
		inv, err := Command(req, DefaultArgvLimit)
		return inv.Args, err
	})
	long, err := Command(agent.RunRequest{Prompt: "hi"}, 1)
	if err != nil || long.Stdin == nil || d.PromptFallback != "stdin" {
		t.Errorf("a prompt over the argv limit: %+v %v (descriptor fallback %q)", long, err, d.PromptFallback)
	}
}

// TestCommandRefusesFlagValues: a model that could read as a flag never
// reaches argv; a valid one is one --model=M argument.
func TestCommandRefusesFlagValues(t *testing.T) {
	t.Parallel()
	providertest.CheckFlagValues(t, func(req agent.RunRequest) ([]string, error) {
		inv, err := Command(req, DefaultArgvLimit)
		return inv.Args, err
	}, true)
}
