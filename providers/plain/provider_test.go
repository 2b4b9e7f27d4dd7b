// Provider tests against fake CLIs: streaming, sessions, failures, cancel.

package plain

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// fake writes a fake CLI recording argv (one per line) to dir/args and
// stdin to dir/stdin, then running body. $BRAIN is the brain directory.
func fake(t *testing.T, body string) (bin, dir string) {
	t.Helper()
	bin, dir = providertest.FakeCLI(t, "cli", "BRAIN=\"$DIR/brain\"\n"+`if [ "$FAKE_STDIN" = 1 ]; then `+providertest.RecordStdin+`; fi`+"\n"+body)
	if err := os.Mkdir(filepath.Join(dir, "brain"), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

func deltas(evs []agent.Event) (text string, n int) {
	var b strings.Builder
	for _, e := range evs {
		if e.Type == agent.EventAssistantDelta {
			b.WriteString(e.Text)
			n++
		}
	}
	return b.String(), n
}

// provider runs cli on the fake bin (providertest.FakeLaunch) with env,
// its brain and temporary files in dir.
func provider(t *testing.T, cli CLI, bin, dir string, env map[string]string) *Provider {
	t.Helper()
	launch := providertest.FakeLaunch(bin)
	launch.Env = env
	p, err := New(nil, Options{CLI: cli, BrainDir: filepath.Join(dir, "brain"), TempDir: dir, Launch: launch})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func args(t *testing.T, dir string) []string {
	t.Helper()
	return providertest.FakeArgs(t, dir)
}

const markdown = "# Plan\n\nFirst paragraph.\n\n\n- item one\n- item two\n\n```go\nfmt.Println(\"héllo\")\n```\n"

func TestAntigravityStreamsAndDiscoversSession(t *testing.T) {
	// The answer arrives in pieces; a new session directory appears.
	bin, dir := fake(t, "printf '# Plan\\n\\nFirst par'\n"+
		"sleep 0.2\n"+
		"printf 'agraph.\\n\\n\\n- item one\\n- item two\\n\\n'\n"+
		"mkdir \"$BRAIN/9c1e7f02-session\"\n"+
		"sleep 0.2\n"+
		"printf '```go\\nfmt.Println(\"h\\303'\n"+
		"sleep 0.1\n"+
		"printf '\\251llo\")\\n```\\n'\n")
	evs := providertest.CheckRunCompleted(t, provider(t, Antigravity, bin, dir, nil), agent.RunRequest{Prompt: "make a plan", Cwd: dir, Model: "gemini-2.5-pro"}).Events
	text, n := deltas(evs)
	if text != markdown {
		t.Errorf("text = %q\nwant %q", text, markdown)
	}
	if n < 2 {
		t.Errorf("%d deltas: the output was not streamed in chunks", n)
	}
	last := evs[len(evs)-2:]
	if last[0].Type != agent.EventSessionUpdated || last[0].SessionID != "9c1e7f02-session" || last[1].Type != agent.EventRunCompleted {
		t.Errorf("end = %+v", last)
	}
	want := []string{"--print", "--add-dir", dir, "--model=gemini-2.5-pro", "make a plan"}
	if got := args(t, dir); !slices.Equal(got, want) {
		t.Errorf("args = %q\nwant %q", got, want)
	}
}

func TestAntigravityAmbiguousSession(t *testing.T) {
	for _, tc := range []struct{ name, mk string }{
		{"none", ""},
		{"two", `mkdir "$BRAIN/a" "$BRAIN/b"`},
		{"symlink only", `ln -s /tmp "$BRAIN/link"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin, dir := fake(t, tc.mk+"\necho answer")
			r := providertest.CheckRunCompleted(t, provider(t, Antigravity, bin, dir, nil), agent.RunRequest{Prompt: "p"})
			if got := r.Types(); !slices.Equal(got, []agent.EventType{agent.EventAssistantDelta, agent.EventRunCompleted}) {
				t.Errorf("events = %v", got)
			}
		})
	}
}

func TestAntigravityResumeAndFork(t *testing.T) {
	bin, dir := fake(t, `mkdir -p "$BRAIN/new-$$"; echo continued`)
	r := providertest.CheckRunCompleted(t, provider(t, Antigravity, bin, dir, nil), agent.RunRequest{Prompt: "more", ResumeID: "old-id"})
	if got := r.Types(); slices.Contains(got, agent.EventSessionUpdated) {
		t.Errorf("a resumed run discovered a session: %v", got)
	}
	if a := args(t, dir); !slices.Equal(a[len(a)-3:], []string{"--resume", "old-id", "more"}) {
		t.Errorf("args = %q", a)
	}
	// A fork cannot continue natively: fresh run, new session discovered.
	r = providertest.CheckRunCompleted(t, provider(t, Antigravity, bin, dir, nil), agent.RunRequest{Prompt: "branch", ResumeID: "old-id", Fork: true})
	if a := args(t, dir); slices.Contains(a, "--resume") {
		t.Errorf("fork passed --resume: %q", a)
	}
	if got := r.Types(); !slices.Contains(got, agent.EventSessionUpdated) {
		t.Errorf("fork did not discover its session: %v", got)
	}
}

func TestSignInFailure(t *testing.T) {
	bin, dir := fake(t, `echo "Authentication required. Please visit the URL to log in: https://accounts.google.com/o/oauth2/auth?client=antigravity"
echo "Waiting for authentication (timeout 30s)..."
echo "Error: authentication timed out." >&2
exit 1`)
	r := providertest.CheckRunFailed(t, provider(t, Antigravity, bin, dir, nil), agent.RunRequest{Prompt: "p"}, "Run `agy` once in a terminal")
	if evs := r.Events; len(evs) < 2 || evs[len(evs)-2].Subtype != SubtypeSignIn {
		t.Errorf("no sign_in_required system event: %+v", evs)
	}
}

func TestFailureCarriesTail(t *testing.T) {
	bin, dir := fake(t, `i=0; while [ $i -lt 300 ]; do echo "noise line $i padding padding padding" >&2; i=$((i+1)); done
echo "fatal: model quota exhausted" >&2
exit 3`)
	last := providertest.CheckRunFailed(t, provider(t, Grok, bin, dir, nil), agent.RunRequest{Prompt: "p"}, "model quota exhausted").Last()
	if !strings.HasPrefix(last.Text, "Grok Build exited with status 3: ") || strings.Contains(last.Text, "noise line 1 ") {
		t.Fatalf("last = %.300q", last.Text)
	}
}

func TestNoOutputFails(t *testing.T) {
	bin, dir := fake(t, `exit 0`)
	if r := providertest.CheckRunFailed(t, provider(t, DeepSeek, bin, dir, nil), agent.RunRequest{Prompt: "p"}, ""); len(r.Events) != 1 {
		t.Fatalf("events %+v", r.Events)
	}
}

func TestCancel(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"obeys SIGINT", `trap 'echo stopping; exit 130' INT; echo working; while :; do sleep 0.05; done`},
		{"ignores SIGINT", `trap '' INT; echo working; while :; do sleep 0.05; done`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin, dir := fake(t, tc.body)
			providertest.CheckInterrupted(t, providertest.Run(t, provider(t, Aider, bin, dir, nil), agent.RunRequest{Prompt: "p"},
				providertest.CancelOn(agent.EventAssistantDelta)))
		})
	}
}

func TestPromptDelivery(t *testing.T) {
	t.Run("atomcode prompt file", func(t *testing.T) {
		bin, dir := fake(t, `while [ $# -gt 0 ]; do if [ "$1" = --prompt-file ]; then cat "$2"; echo; echo "$2" > "$(dirname "$0")/pf"; fi; shift; done`)
		r := providertest.CheckRunCompleted(t, provider(t, AtomCode, bin, dir, nil), agent.RunRequest{Prompt: "from a file\n\nwith lines", Approval: agent.ApprovalAccept, Model: "glm-5.2"})
		if text := r.Text(); text != "from a file\n\nwith lines\n" {
			t.Errorf("text = %q", text)
		}
		pf, _ := os.ReadFile(filepath.Join(dir, "pf"))
		if _, err := os.Stat(strings.TrimSpace(string(pf))); !os.IsNotExist(err) {
			t.Errorf("prompt file %q left behind (%v)", pf, err)
		}
		a := args(t, dir)
		if a[0] != "--prompt-file" || !slices.Equal(a[2:], []string{"-y", "--model=glm-5.2"}) {
			t.Errorf("args = %q", a)
		}
	})
	t.Run("qwen stdin", func(t *testing.T) {
		bin, dir := fake(t, `echo ok`)
		providertest.CheckRunCompleted(t, provider(t, Qwen, bin, dir, map[string]string{"FAKE_STDIN": "1"}), agent.RunRequest{Prompt: "via stdin"})
		if b := providertest.FakeStdin(t, dir); b != "via stdin\n" {
			t.Errorf("stdin = %q", b)
		}
		if a := args(t, dir); len(a) != 1 || a[0] != "" {
			t.Errorf("args = %q", a)
		}
	})
	t.Run("aider long prompt goes to a file", func(t *testing.T) {
		inv, err := Command(Aider, agent.RunRequest{Prompt: strings.Repeat("x", 100)}, 50, DefaultResumeFlag)
		if err != nil || !inv.PromptFile || !slices.Contains(inv.Args, "--message-file") || slices.Contains(inv.Args, "--message") {
			t.Fatalf("inv = %+v, %v", inv, err)
		}
		inv, _ = Command(Aider, agent.RunRequest{Prompt: "short"}, 50, DefaultResumeFlag)
		if inv.PromptFile || !slices.Equal(inv.Args[len(inv.Args)-2:], []string{"--message", "short"}) {
			t.Fatalf("short inv = %+v", inv)
		}
	})
	t.Run("argv-only too long", func(t *testing.T) {
		bin, dir := fake(t, `echo never`)
		p, _ := New(nil, Options{Launch: providertest.FakeLaunch(bin), CLI: Grok, ArgvLimit: 10, TempDir: dir})
		if r := providertest.CheckRunFailed(t, p, agent.RunRequest{Prompt: strings.Repeat("y", 11)}, ""); !errors.Is(r.Err, ErrPromptTooLarge) || len(r.Events) != 1 {
			t.Fatalf("Run = %v, events %+v", r.Err, r.Events)
		}
		if providertest.FakeStarted(t, dir) {
			t.Error("the CLI ran")
		}
	})
	t.Run("dash prompt", func(t *testing.T) {
		inv, _ := Command(DeepSeek, agent.RunRequest{Prompt: "--help me"}, 100, DefaultResumeFlag)
		if inv.Args[len(inv.Args)-1] != " --help me" {
			t.Fatalf("args = %q", inv.Args)
		}
	})
}

func TestCommands(t *testing.T) {
	req := agent.RunRequest{Prompt: "P", Model: "M", Effort: "high", Approval: agent.ApprovalAccept, Args: []string{"--x"}}
	for _, tc := range []struct {
		cli  CLI
		want []string
	}{
		{Aider, []string{"--no-pretty", "--no-git", "--no-auto-commits", "--no-suggest-shell-commands", "--no-show-model-warnings", "--yes-always", "--model=M", "--x", "--message", "P"}},
		{Grok, []string{"-p", "P", "--model=M", "--effort=high", "--x"}},
		{Qwen, []string{"--yolo", "--model=M", "--x"}},
		{DeepSeek, []string{"exec", "--auto", "--model=M", "--x", "P"}},
		{AtomCode, []string{"--prompt-file", PromptFileArg, "-y", "--model=M", "--x"}},
		{Antigravity, []string{"--print", "--model=M", "--x", "P"}},
		{Continue, []string{"-p", "--auto", "--x"}},
		{Crush, []string{"run", "--quiet", "--model=M", "--x"}},
	} {
		inv, err := Command(tc.cli, req, DefaultArgvLimit, DefaultResumeFlag)
		if err != nil || !slices.Equal(inv.Args, tc.want) {
			t.Errorf("%s: %q %v\nwant %q", tc.cli, inv.Args, err, tc.want)
		}
	}
	deny := req
	deny.Approval = agent.ApprovalDeny
	for _, cli := range CLIs {
		inv, _ := Command(cli, deny, DefaultArgvLimit, DefaultResumeFlag)
		for _, flag := range []string{"--yes-always", "--yolo", "--auto", "-y"} {
			if slices.Contains(inv.Args, flag) {
				t.Errorf("%s passed %s without ApprovalAccept", cli, flag)
			}
		}
	}
	if _, err := Command("nope", req, 1, ""); !errors.Is(err, ErrUnknownCLI) {
		t.Errorf("unknown CLI: %v", err)
	}
}

func TestNotInstalled(t *testing.T) {
	providertest.CheckNotInstalled(t, func(bin string) *Provider { return provider(t, Aider, bin, t.TempDir(), nil) }, "aider-install")
}

func TestDescriptors(t *testing.T) {
	for _, c := range CLIs {
		d, ok := Descriptor(c)
		if c == Qwen {
			if ok {
				t.Error("qwen has a plain descriptor (the registry runs it over ACP)")
			}
			continue
		}
		if !ok || d.ID != string(c) || d.Executable != clis[c].bin || d.InstallHint != clis[c].install {
			t.Fatalf("%s: descriptor %+v, table %+v", c, d, clis[c])
		}
		providertest.CheckDescriptor(t, d, "")
		args := providertest.CheckDescribedArgs(t, d, func(req agent.RunRequest) ([]string, error) {
			inv, err := Command(c, req, DefaultArgvLimit, DefaultResumeFlag)
			return inv.Args, err
		})
		if d.Prompt == registry.DeliverFile && !providertest.ContainsRun(args, []string{d.Args.PromptFile, PromptFileArg}) {
			t.Errorf("%s: args %q lack the prompt file %s", c, args, PromptFileArg)
		}
	}
}

// TestCrushRun: crush reads the prompt on stdin and prints the answer (the
// shape its docs show); "no providers configured" is a missing sign-in.
func TestCrushRun(t *testing.T) {
	bin, dir := fake(t, `read -r line; echo "You asked: $line"`)
	providertest.CheckRunCompleted(t, provider(t, Crush, bin, dir, map[string]string{"FAKE_STDIN": "1"}), agent.RunRequest{Prompt: "hello crush", Model: "openai/gpt-5"})
	if b := providertest.FakeStdin(t, dir); b != "hello crush\n" {
		t.Errorf("stdin = %q", b)
	}
	if a := args(t, dir); !slices.Equal(a, []string{"run", "--quiet", "--model=openai/gpt-5"}) {
		t.Errorf("args = %q", a)
	}
	bin, dir = fake(t, `echo "Error: no providers configured - please run 'crush' to set up a provider interactively" >&2; exit 1`)
	if evs := providertest.CheckRunFailed(t, provider(t, Crush, bin, dir, nil), agent.RunRequest{Prompt: "p"}, "run `crush` once").Events; evs[0].Subtype != SubtypeSignIn {
		t.Fatalf("events %+v", evs)
	}
}

// TestJulesDescriptor: Jules is a valid detection-only descriptor that
// says why nothing here runs it.
func TestJulesDescriptor(t *testing.T) {
	d := JulesDescriptor()
	if err := registry.Validate(d); err != nil || d.Verified.By != registry.VerifiedDocs || d.Verified.Reason == "" {
		t.Fatalf("Validate = %v, verified %+v", err, d.Verified)
	}
	if _, ok := Descriptor(CLI(d.ID)); ok {
		t.Error("jules has a runnable plain descriptor")
	}
}

// TestCommandRefusesFlagValues: a model or effort that could read as a flag
// never reaches argv, whatever the CLI; a valid model is one --model=M
// argument (none for Continue, which takes its model from its config).
func TestCommandRefusesFlagValues(t *testing.T) {
	t.Parallel()
	for _, cli := range CLIs {
		t.Run(string(cli), func(t *testing.T) {
			providertest.CheckFlagValues(t, func(req agent.RunRequest) ([]string, error) {
				inv, err := Command(cli, req, DefaultArgvLimit, DefaultResumeFlag)
				return inv.Args, err
			}, cli != Continue)
		})
	}
}
