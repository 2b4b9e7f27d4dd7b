// Self-tests of the shared checks: each Check* fails on bad input and
// passes on good input (a recorder stands in for the test it would fail).

package providertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/registry"
)

func TestCheckNotInstalled(t *testing.T) {
	const hint = "npm install -g fake-cli"
	missing := fmt.Errorf("%w: no-such-cli (install: %s)", agent.ErrNotInstalled, hint)
	with := func(r Runner, hint string) func(tb testing.TB) {
		return func(tb testing.TB) {
			CheckNotInstalled(tb, func(bin string) Runner {
				if !strings.HasSuffix(bin, "/no-such-cli") {
					tb.Errorf("bin %q", bin)
				}
				return r
			}, hint)
		}
	}
	checkCases(t, map[string]func(testing.TB){
		"the error with the hint": with(emitting(missing), hint),
	}, map[string]badCase{
		"nil error":                  {with(emitting(nil), hint), "want ErrNotInstalled"},
		"another error":              {with(emitting(errors.New("npm install -g fake-cli")), hint), "want ErrNotInstalled"},
		"without the hint":           {with(emitting(agent.ErrNotInstalled), hint), "want ErrNotInstalled"},
		"an event":                   {with(emitting(missing, ev(agent.EventRunFailed, "x")), hint), "no event"},
		"no hint to look for":        {with(emitting(missing), ""), "no install hint"},
		"no hint, the bare sentinel": {with(emitting(agent.ErrNotInstalled), ""), "no install hint"},
	})
}

func TestCheckCompleted(t *testing.T) {
	completed := []agent.Event{ev(agent.EventAssistantDelta, "a"), ev(agent.EventRunCompleted, "a")}
	checkCases(t, map[string]func(testing.TB){
		"completed":     func(tb testing.TB) { CheckCompleted(tb, &Result{Events: completed}) },
		"run completed": func(tb testing.TB) { CheckRunCompleted(tb, emitting(nil, completed...), agent.RunRequest{Prompt: "p"}) },
	}, map[string]badCase{
		"no event":             {func(tb testing.TB) { CheckCompleted(tb, &Result{}) }, "want nil and run.completed last"},
		"an error":             {func(tb testing.TB) { CheckCompleted(tb, &Result{Events: completed, Err: errors.New("x")}) }, "want nil"},
		"failed last":          {func(tb testing.TB) { CheckCompleted(tb, &Result{Events: []agent.Event{ev(agent.EventRunFailed, "")}}) }, "run.completed last"},
		"run without terminal": {func(tb testing.TB) { CheckRunCompleted(tb, emitting(nil, completed[0]), agent.RunRequest{Prompt: "p"}) }, "run.completed last"},
	})
}

func TestCheckFailed(t *testing.T) {
	failedErr := fmt.Errorf("%w: boom", agent.ErrRunFailed)
	failed := []agent.Event{ev(agent.EventAssistantDelta, "a"), ev(agent.EventRunFailed, "the API said boom")}
	checkCases(t, map[string]func(testing.TB){
		"failed": func(tb testing.TB) { CheckFailed(tb, &Result{Err: failedErr, Events: failed}, "boom") },
		"run failed": func(tb testing.TB) {
			CheckRunFailed(tb, emitting(failedErr, failed...), agent.RunRequest{Prompt: "p"}, "boom")
		},
	}, map[string]badCase{
		"no event":       {func(tb testing.TB) { CheckFailed(tb, &Result{Err: failedErr}, "") }, "want ErrRunFailed"},
		"another error":  {func(tb testing.TB) { CheckFailed(tb, &Result{Err: errors.New("boom"), Events: failed}, "boom") }, "want ErrRunFailed"},
		"nil error":      {func(tb testing.TB) { CheckFailed(tb, &Result{Events: failed}, "boom") }, "want ErrRunFailed"},
		"another text":   {func(tb testing.TB) { CheckFailed(tb, &Result{Err: failedErr, Events: failed}, "quota") }, `with "quota"`},
		"completed last": {func(tb testing.TB) { CheckFailed(tb, &Result{Err: failedErr, Events: failed[:1]}, "") }, "want ErrRunFailed"},
		"run completed": {func(tb testing.TB) {
			CheckRunFailed(tb, emitting(nil, ev(agent.EventRunCompleted, "")), agent.RunRequest{Prompt: "p"}, "")
		}, "want ErrRunFailed"},
	})
}

func TestCheckInterrupted(t *testing.T) {
	interrupted := []agent.Event{ev(agent.EventAssistantDelta, "a"), ev(agent.EventRunInterrupted, "")}
	checkCases(t, map[string]func(testing.TB){
		"interrupted": func(tb testing.TB) { CheckInterrupted(tb, &Result{Events: interrupted}) },
	}, map[string]badCase{
		"no event":       {func(tb testing.TB) { CheckInterrupted(tb, &Result{}) }, "cancelled run"},
		"an error":       {func(tb testing.TB) { CheckInterrupted(tb, &Result{Err: context.Canceled, Events: interrupted}) }, "cancelled run"},
		"completed last": {func(tb testing.TB) { CheckInterrupted(tb, &Result{Events: interrupted[:1]}) }, "cancelled run"},
		"completed before": {func(tb testing.TB) {
			CheckInterrupted(tb, &Result{Events: []agent.Event{ev(agent.EventRunCompleted, ""), ev(agent.EventRunInterrupted, "")}})
		}, "cancelled run"},
	})
}

func TestCheckNoBotSecrets(t *testing.T) {
	child := []string{"PATH=/usr/bin:/bin", "HOME=/home/x", "SLACKER=1", "MY_MATRIX_TOKEN=ok"}
	checkCases(t, map[string]func(testing.TB){
		"a child's env": func(tb testing.TB) { CheckNoBotSecrets(tb, child, "HOME=/home/x") },
	}, map[string]badCase{
		"no env":      {func(tb testing.TB) { CheckNoBotSecrets(tb, nil, "HOME=/home/x") }, "lacks the marker"},
		"another env": {func(tb testing.TB) { CheckNoBotSecrets(tb, child, "HOME=/home/y") }, "lacks the marker"},
		"no marker":   {func(tb testing.TB) { CheckNoBotSecrets(tb, child, "") }, "is not KEY=value"},
		"a bare key":  {func(tb testing.TB) { CheckNoBotSecrets(tb, child, "HOME") }, "is not KEY=value"},
		"a secret's value": {func(tb testing.TB) {
			CheckNoBotSecrets(tb, append(child, "SLACK_BOT_TOKEN=xoxb-secret"), "HOME=/home/x")
		}, "SLACK_BOT_TOKEN"},
		"a secret's key": {func(tb testing.TB) {
			CheckNoBotSecrets(tb, append(slices.Clone(child), "DATABASE_URL=postgres://other"), "HOME=/home/x")
		}, "DATABASE_URL"},
	})
	if env := HostEnvWithBotSecrets("HOME=/home/x")(); !slices.Contains(env, "HOME=/home/x") || !slices.Equal(env[1:], BotSecrets) {
		t.Errorf("HostEnvWithBotSecrets = %q", env)
	}
}

// testDefinition is a valid built-in definition whose arguments declare
// every kind of flag.
func testDefinition() registry.Definition {
	d := registry.Definition{
		ID: "fake", Name: "Fake CLI", Executable: "fake", InstallHint: "npm install -g fake-cli",
		Models:  registry.Models{Fallback: []string{"m1"}, FreeForm: true},
		Efforts: []string{"low", "high"},
		Args: registry.ArgSpec{
			Base: []string{"run", "--json"}, Model: "--model", Effort: "--effort", Resume: "--resume", Fork: "--fork",
			Prompt: "-p", Accept: []string{"--yolo"},
		},
		Prompt: registry.DeliverArgv, Format: registry.FormatJSONEvents, Dialect: registry.DialectOpenCode,
		Resume: registry.ResumeCLIFlag, NativeFork: true, Caps: registry.Capabilities{Effort: true},
		Skills: registry.SkillsInstructions, VerifiedVersions: []string{"1.2.3"},
	}
	d.Verified = registry.Fixtures("providertest TestCheckDescriptor", "a test definition")
	return d
}

// fakeArgs builds testDefinition's command line by hand (not from the
// descriptor), with bug applied to the arguments of each request.
func fakeArgs(bug func(req agent.RunRequest, args []string) ([]string, error)) func(agent.RunRequest) ([]string, error) {
	return func(req agent.RunRequest) ([]string, error) {
		args := []string{"run", "--json"}
		if req.Model != "" {
			args = append(args, "--model="+req.Model)
		}
		if req.Effort != "" {
			args = append(args, "--effort", req.Effort)
		}
		if req.ResumeID != "" {
			args = append(args, "--resume", req.ResumeID)
		}
		if req.Fork {
			args = append(args, "--fork")
		}
		if req.Approval == agent.ApprovalAccept {
			args = append(args, "--yolo")
		}
		args = append(args, "-p", req.Prompt)
		if bug != nil {
			return bug(req, args)
		}
		return args, nil
	}
}

func TestCheckDescriptor(t *testing.T) {
	d := testDefinition()
	checkCases(t, map[string]func(testing.TB){
		"valid":             func(tb testing.TB) { CheckDescriptor(tb, d, "") },
		"verified as named": func(tb testing.TB) { CheckDescriptor(tb, d, registry.VerifiedFixtures) },
	}, map[string]badCase{
		"verified otherwise": {func(tb testing.TB) { CheckDescriptor(tb, d, registry.VerifiedRealCLI) }, `want by "real-cli"`},
		"empty":              {func(tb testing.TB) { CheckDescriptor(tb, registry.Definition{ID: "x"}, "") }, "install hint"},
		"not verified": {func(tb testing.TB) {
			d := testDefinition()
			d.Verified = registry.Verification{}
			CheckDescriptor(tb, d, "")
		}, "Validate"},
	})
}

func TestCheckDescribedArgs(t *testing.T) {
	with := func(d registry.Definition, command func(agent.RunRequest) ([]string, error)) func(tb testing.TB) {
		return func(tb testing.TB) { CheckDescribedArgs(tb, d, command) }
	}
	changed := func(change func(d *registry.Definition)) registry.Definition {
		d := testDefinition()
		change(&d)
		return d
	}
	drop := func(flag string) func(agent.RunRequest, []string) ([]string, error) {
		return func(_ agent.RunRequest, args []string) ([]string, error) {
			return slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, flag) }), nil
		}
	}
	d := testDefinition()
	checkCases(t, map[string]func(testing.TB){
		"as described": with(d, fakeArgs(nil)),
		"stdin prompt, no flags but the base": with(registry.Definition{ID: "x", Prompt: registry.DeliverStdin, Args: registry.ArgSpec{Base: []string{"exec"}}},
			func(agent.RunRequest) ([]string, error) { return []string{"exec"}, nil }),
	}, map[string]badCase{
		"nothing described, nothing built": {with(registry.Definition{ID: "x"}, func(agent.RunRequest) ([]string, error) { return nil, nil }), "no argument at all"},
		"nothing built": {with(registry.Definition{ID: "x", Prompt: registry.DeliverStdin, Args: registry.ArgSpec{Base: []string{"exec"}}},
			func(agent.RunRequest) ([]string, error) { return nil, nil }), "lack any argument"},
		"effort without its flag": {with(changed(func(d *registry.Definition) { d.Args.Effort = "" }), fakeArgs(nil)), "effort but no effort flag"},
		"models without the flag": {with(changed(func(d *registry.Definition) { d.Args.Model = "" }), fakeArgs(nil)), "models but no model flag"},
		"resume without its flag": {with(changed(func(d *registry.Definition) { d.Args.Resume = "" }), fakeArgs(nil)), "cli-flag resume but no resume flag"},
		"fork without its flag":   {with(changed(func(d *registry.Definition) { d.Args.Fork = "" }), fakeArgs(nil)), "no fork flag"},
		"file without its flag": {with(changed(func(d *registry.Definition) { d.Prompt, d.Args.Prompt = registry.DeliverFile, "" }), fakeArgs(nil)),
			"file delivery but no prompt file flag"},
		"a wrong model flag": {with(changed(func(d *registry.Definition) { d.Args.Model = "-m" }), fakeArgs(nil)), "lack the model"},
		"no base":            {with(d, fakeArgs(func(_ agent.RunRequest, a []string) ([]string, error) { return a[2:], nil })), "lack the base arguments"},
		"no effort":          {with(d, fakeArgs(drop("--effort"))), "lack the effort"},
		"no resume":          {with(d, fakeArgs(drop("--resume"))), "lack the resume id"},
		"no accept":          {with(d, fakeArgs(drop("--yolo"))), "lack the accept arguments"},
		"no prompt flag":     {with(d, fakeArgs(drop("-p"))), "lack the prompt after its flag"},
		"a refused request": {with(d, fakeArgs(func(agent.RunRequest, []string) ([]string, error) { return nil, agent.ErrInvalidArgValue })),
			"invalid"},
		"refuses without accept": {with(d, fakeArgs(func(req agent.RunRequest, a []string) ([]string, error) {
			if req.Approval != agent.ApprovalAccept {
				return nil, errors.New("refused")
			}
			return a, nil
		})), "without the accept policy: refused"},
		"accepts without the policy": {with(d, fakeArgs(func(_ agent.RunRequest, a []string) ([]string, error) {
			if !slices.Contains(a, "--yolo") {
				a = append(a, "--yolo")
			}
			return a, nil
		})), "without the accept policy"},
		"no fork": {with(d, fakeArgs(drop("--fork"))), "fork args"},
	})
}

func TestCheckFlagValues(t *testing.T) {
	build := func(bound bool) func(agent.RunRequest) ([]string, error) {
		return func(req agent.RunRequest) ([]string, error) {
			if err := agent.CheckRunArgs(req); err != nil {
				return nil, err
			}
			if bound && req.Model != "" {
				return []string{"run", "--model=" + req.Model}, nil
			}
			return []string{"run"}, nil
		}
	}
	checkCases(t, map[string]func(testing.TB){
		"bound":   func(tb testing.TB) { CheckFlagValues(tb, build(true), true) },
		"unbound": func(tb testing.TB) { CheckFlagValues(tb, build(false), false) },
	}, map[string]badCase{
		"bound, said unbound": {func(tb testing.TB) { CheckFlagValues(tb, build(true), false) }, "bound: false"},
		"unbound, said bound": {func(tb testing.TB) { CheckFlagValues(tb, build(false), true) }, "bound: true"},
		"takes a flag value": {func(tb testing.TB) {
			CheckFlagValues(tb, func(req agent.RunRequest) ([]string, error) { return []string{"--model", req.Model}, nil }, true)
		}, "want ErrInvalidArgValue"},
		"refused with args": {func(tb testing.TB) {
			CheckFlagValues(tb, func(req agent.RunRequest) ([]string, error) {
				args, err := build(true)(req)
				return append(args, "x"), err
			}, true)
		}, "want ErrInvalidArgValue and no args"},
	})
}

func TestCheckVersion(t *testing.T) {
	// The fake CLI lies in a directory of root's, which the agent user
	// cannot reach: the sandboxed probe is TestProbeConfine's.
	t.Setenv(SandboxEnv, "off")
	bin, _ := FakeCLI(t, "fake", `echo "fake 1.2.3"`)
	d := testDefinition()
	checkCases(t, map[string]func(testing.TB){
		"a verified version": func(tb testing.TB) { CheckVersion(tb, d, bin) },
	}, map[string]badCase{
		"another version": {func(tb testing.TB) {
			d := testDefinition()
			d.VerifiedVersions = []string{"1.2.4"}
			CheckVersion(tb, d, bin)
		}, "verified"},
		"no CLI": {func(tb testing.TB) { CheckVersion(tb, d, bin+"-missing") }, "report"},
	})
}
