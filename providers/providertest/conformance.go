// Checks of the provider contract (agentcore/agent) and of a provider's
// descriptor that every provider package's unit tests share: the
// not-installed error, the descriptor's identity, and the command line the
// descriptor documents against the one the provider builds.

package providertest

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/registry"
)

// CheckNotInstalled runs one turn of the provider newProvider returns for
// an executable that does not exist, and fails t unless Run returns
// agent.ErrNotInstalled with hint (the install hint, which must not be
// empty: every message holds "") in its message and emits nothing (the
// caller reports the error; there was no run).
func CheckNotInstalled[P Runner](t testing.TB, newProvider func(bin string) P, hint string) {
	t.Helper()
	if hint == "" {
		t.Fatalf("CheckNotInstalled: no install hint to look for")
	}
	p := newProvider(filepath.Join(t.TempDir(), "no-such-cli"))
	var evs Events
	err := p.Run(t.Context(), agent.RunRequest{Prompt: "p"}, evs.Emit)
	if !errors.Is(err, agent.ErrNotInstalled) || !strings.Contains(err.Error(), hint) || len(evs.All()) > 0 {
		t.Fatalf("Run = %v, events %v; want ErrNotInstalled naming %q and no event", err, evs.Types(), hint)
	}
}

// CheckCompleted fails t unless r is a completed run's result: Run
// returned nil and the last event is run.completed.
func CheckCompleted(t testing.TB, r *Result) {
	t.Helper()
	if r.Err != nil || r.Last().Type != agent.EventRunCompleted {
		t.Fatalf("Run = %v, events %s; want nil and run.completed last", r.Err, r.TypesText())
	}
}

// CheckRunCompleted runs one turn of p (see Run) and checks that it
// completed (CheckCompleted).
func CheckRunCompleted(t testing.TB, p Runner, req agent.RunRequest) *Result {
	t.Helper()
	r := Run(t, p, req, nil)
	CheckCompleted(t, r)
	return r
}

// CheckFailed fails t unless r is a failed run's result as the contract
// has it: Run returned an error wrapping agent.ErrRunFailed and the last
// event is run.failed, its text containing want. It returns that event.
func CheckFailed(t testing.TB, r *Result, want string) agent.Event {
	t.Helper()
	last := r.Last()
	if !errors.Is(r.Err, agent.ErrRunFailed) || last.Type != agent.EventRunFailed || !strings.Contains(last.Text, want) {
		t.Fatalf("Run = %v, events %s, last %+v; want ErrRunFailed and run.failed with %q", r.Err, r.TypesText(), last, want)
	}
	return last
}

// CheckRunFailed runs one turn of p (see Run) and checks that it failed
// with want in the run.failed text (CheckFailed).
func CheckRunFailed(t testing.TB, p Runner, req agent.RunRequest, want string) *Result {
	t.Helper()
	r := Run(t, p, req, nil)
	CheckFailed(t, r, want)
	return r
}

// BotSecrets are variables of the bot's own environment, one of each kind
// procrun keeps from every agent CLI (SLACK_*, MATRIX_*, THREADLINE_*,
// DATABASE_URL).
var BotSecrets = []string{"SLACK_BOT_TOKEN=xoxb-secret", "MATRIX_ACCESS_TOKEN=mx-secret", "THREADLINE_TOKEN=tl-secret", "DATABASE_URL=postgres://secret"}

// HostEnvWithBotSecrets returns a host environment (a Launch's HostEnv):
// base and then the BotSecrets.
func HostEnvWithBotSecrets(base ...string) func() []string {
	env := append(slices.Clip(base), BotSecrets...)
	return func() []string { return slices.Clone(env) }
}

// CheckNoBotSecrets fails t when the child environment env holds one of
// the BotSecrets' variables, and unless env is a child's environment at
// all: it is not empty and holds marker, a "KEY=value" the caller gave the
// child (one of HostEnvWithBotSecrets' base variables, say), so that an env
// that was never recorded, or is some other process's, does not pass.
func CheckNoBotSecrets(t testing.TB, env []string, marker string) {
	t.Helper()
	if k, _, ok := strings.Cut(marker, "="); !ok || k == "" {
		t.Fatalf("CheckNoBotSecrets: marker %q is not KEY=value", marker)
	}
	if !slices.Contains(env, marker) {
		t.Errorf("child environment %q lacks the marker %s: not the child's", env, marker)
	}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if slices.ContainsFunc(BotSecrets, func(s string) bool { return strings.HasPrefix(s, k+"=") }) {
			t.Errorf("a bot secret reached the child: %s", kv)
		}
	}
}

// CheckDescriptor fails t unless d is a valid registry definition
// (registry.Validate) with an executable and an install hint that says what
// verified it: by, unless by is empty.
func CheckDescriptor(t testing.TB, d registry.Definition, by registry.VerifiedBy) {
	t.Helper()
	if d.Executable == "" || d.InstallHint == "" {
		t.Errorf("descriptor %s: executable %q, install hint %q", d.ID, d.Executable, d.InstallHint)
	}
	if err := registry.Validate(d); err != nil || d.Verified.By == "" || by != "" && d.Verified.By != by {
		t.Errorf("%s: Validate = %v, verified %+v; want by %q", d.ID, err, d.Verified, by)
	}
}

// CheckDescribedArgs fails t unless the command line command builds (the
// arguments for a request) is the one d.Args documents: for the prompt
// "hi", model "m1", an effort, resume id "s1" and the accept policy, the
// arguments hold d.Args.Base, the model and effort flags with their values
// ("--flag=v" or "--flag v"), the resume flag before "s1", the accept
// arguments (and lack them without the accept policy) and the argv prompt
// after its flag; a fork (when d has a fork flag) passes the fork flag and
// "s1". Every request must build (a builder error fails t), and d must
// document what it declares elsewhere, so that an empty flag does not pass
// for want of anything to look for: the effort flag with Caps.Effort, the
// model flag when it lists models, the resume flag with cli-flag or
// dir-snapshot resume, the fork flag with a native fork over that flag, the
// prompt file flag with file delivery, and at least one argument in all.
// It returns the arguments of the first request.
//
// This checks d against the builder, not either against the CLI: a
// provider whose builder reads its flags from d (jsonstream, plain) passes
// with a wrong flag in d. Such a package needs tests of literal command
// lines too (jsonstream's TestCommand, plain's TestCommands): only those
// compare the flags with what the CLI takes.
func CheckDescribedArgs(t testing.TB, d registry.Definition, command func(agent.RunRequest) ([]string, error)) []string {
	t.Helper()
	for _, miss := range undocumented(d) {
		t.Errorf("%s: descriptor %+v declares %s", d.ID, d.Args, miss)
	}
	effort := "high"
	if len(d.Efforts) > 0 && !slices.Contains(d.Efforts, effort) {
		effort = d.Efforts[0]
	}
	req := agent.RunRequest{Prompt: "hi", Model: "m1", ResumeID: "s1", Approval: agent.ApprovalAccept}
	if d.Args.Effort != "" {
		req.Effort = effort
	}
	args, err := command(req)
	if err != nil {
		t.Fatalf("%s: %+v: %v", d.ID, req, err)
	}
	lack := func(what string, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("%s: args %q lack %s (descriptor %+v)", d.ID, args, what, d.Args)
		}
	}
	lack("any argument", len(args) > 0)
	lack("the base arguments", ContainsRun(args, d.Args.Base))
	lack("the model", d.Args.Model == "" || hasFlag(args, d.Args.Model, "m1"))
	lack("the effort", d.Args.Effort == "" || hasFlag(args, d.Args.Effort, effort))
	lack("the resume id", d.Args.Resume == "" || hasFlag(args, d.Args.Resume, "s1"))
	lack("the accept arguments", ContainsRun(args, d.Args.Accept))
	switch {
	case d.Prompt == registry.DeliverArgv && d.Args.Prompt != "":
		lack("the prompt after its flag", hasFlag(args, d.Args.Prompt, "hi"))
	case d.Prompt == registry.DeliverArgv:
		lack("the prompt", slices.Contains(args, "hi"))
	case d.Prompt == registry.DeliverFile:
		i := slices.Index(args, d.Args.PromptFile)
		lack("the prompt file after its flag", d.Args.PromptFile != "" && i >= 0 && i+1 < len(args) && args[i+1] != "")
	}
	deny, err := command(agent.RunRequest{Prompt: "hi"})
	switch {
	case err != nil:
		t.Errorf("%s: without the accept policy: %v", d.ID, err)
	case len(d.Args.Accept) > 0 && ContainsRun(deny, d.Args.Accept):
		t.Errorf("%s: %q without the accept policy: %q", d.ID, d.Args.Accept, deny)
	}
	if d.Args.Fork != "" {
		fork, err := command(agent.RunRequest{Prompt: "hi", ResumeID: "s1", Fork: true})
		if err != nil || !slices.Contains(fork, d.Args.Fork) || !slices.Contains(fork, "s1") {
			t.Errorf("%s: fork args %q (%v)", d.ID, fork, err)
		}
	}
	return args
}

// undocumented lists what d declares outside d.Args that d.Args has no
// flag for (see CheckDescribedArgs).
func undocumented(d registry.Definition) []string {
	a := d.Args
	var out []string
	for _, c := range []struct {
		miss bool
		what string
	}{
		{d.Caps.Effort && a.Effort == "", "effort but no effort flag"},
		{(len(d.Models.Fallback) > 0 || d.Models.Command != nil || d.Models.FreeForm) && a.Model == "", "models but no model flag"},
		{(d.Resume == registry.ResumeCLIFlag || d.Resume == registry.ResumeSnapshot) && a.Resume == "", string(d.Resume) + " resume but no resume flag"},
		{d.NativeFork && d.Resume == registry.ResumeCLIFlag && a.Fork == "", "a native fork over the resume flag but no fork flag"},
		{(d.Prompt == registry.DeliverFile || d.PromptFallback == registry.DeliverFile) && a.PromptFile == "", "file delivery but no prompt file flag"},
		{len(a.Base) == 0 && a.Model == "" && a.Effort == "" && a.Resume == "" && a.Fork == "" && a.Prompt == "" && a.PromptFile == "" && len(a.Accept) == 0 && d.Prompt != registry.DeliverArgv, "no argument at all"},
	} {
		if c.miss {
			out = append(out, c.what)
		}
	}
	return out
}

// hasFlag reports whether args pass v to flag, as "flag=v" or "flag v".
func hasFlag(args []string, flag, v string) bool {
	return slices.Contains(args, flag+"="+v) || ContainsRun(args, []string{flag, v})
}

// ContainsRun reports whether sub occurs in s as consecutive elements (an
// empty sub always does).
func ContainsRun(s, sub []string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if slices.Equal(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
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
	r := registry.Probe(t.Context(), []registry.Definition{d}, registry.ProbeOptions{Confine: ProbeConfine(t)})[0]
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
