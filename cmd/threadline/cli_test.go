// Tests of the command line itself: --help, flags after the prompt, and
// config errors as a user sees them.

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpExitsZero: `<cmd> --help` (and -h, and --help after other
// arguments) prints the command's usage and flags to stdout and exits 0 from
// the built binary, for every command.
func TestHelpExitsZero(t *testing.T) {
	isolate(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "threadline serve"},
		{[]string{"help"}, "threadline run"},
		{[]string{"serve", "--help"}, "-http-only"},
		{[]string{"chat", "--help"}, "-agent"},
		{[]string{"chat", "-h"}, "-agent"},
		{[]string{"run", "--help"}, "-interactions"},
		{[]string{"run", "--agent", "claude", "a prompt", "--help"}, "-events"},
		{[]string{"migrate", "--help"}, "-config"},
		{[]string{"audit", "--help"}, "-since"},
		{[]string{"agents", "--help"}, "-json"},
		{[]string{"doctor", "--help"}, "-config"},
		{[]string{"chats", "--help"}, "-json"},
		{[]string{"init", "--help"}, "-platform"},
		{[]string{"project", "--help"}, "threadline project add NAME"},
		{[]string{"project", "add", "--help"}, "-container"},
		{[]string{"project", "access", "web", "--help"}, "-channels"},
		{[]string{"project", "list", "--help"}, "-config"},
		{[]string{"project", "remove", "--help"}, "-delete-container"},
		{[]string{"project", "secret", "--help"}, "threadline project secret set"},
		{[]string{"project", "secret", "set", "--help"}, "-config"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command(exe, tc.args...)
			cmd.Env = append(os.Environ(), testRoleEnv+"=cli")
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			if err != nil || cmd.ProcessState.ExitCode() != 0 {
				t.Fatalf("exit %v\nstderr: %s", err, errOut.String())
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("stdout lacks %q:\n%s", tc.want, out.String())
			}
			if errOut.Len() != 0 || strings.Contains(out.String(), "help requested") {
				t.Errorf("stderr: %q", errOut.String())
			}
		})
	}
}

// TestFlagsAfterThePrompt: flags are taken wherever they are; "--" makes the
// rest the prompt; an unknown flag or a prompt in several words is an exit 2
// error that says what to do.
func TestFlagsAfterThePrompt(t *testing.T) {
	dir := isolate(t)
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("host: {isolation: off}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The --agent after the prompt is taken: the run fails on that agent.
	code, _, _, err := run(t, "", "run", "--config", cfg, "hello", "--agent", "nosuch-agent")
	if code != 1 || err == nil || !strings.Contains(err.Error(), `unknown agent "nosuch-agent"`) {
		t.Errorf("flag after the prompt: exit %d, %v", code, err)
	}
	code, _, _, err = run(t, "", "run", "--config", cfg, "--agent", "nosuch-agent", "--", "--not-a-flag")
	if code != 1 || err == nil || !strings.Contains(err.Error(), `unknown agent "nosuch-agent"`) {
		t.Errorf("a prompt after --: exit %d, %v", code, err)
	}
	code, _, _, err = run(t, "", "run", "--config", cfg, "hello", "--agnet", "claude")
	if code != 2 || err == nil || !strings.Contains(err.Error(), "-agnet") || !strings.Contains(err.Error(), "threadline run --help") {
		t.Errorf("an unknown flag after the prompt: exit %d, %v", code, err)
	}
	code, _, _, err = run(t, "", "run", "--config", cfg, "--agent", "claude", "fix", "the", "bug")
	if code != 2 || err == nil || !strings.Contains(err.Error(), "got 3") || !strings.Contains(err.Error(), "quote the prompt") {
		t.Errorf("a prompt in three words: exit %d, %v", code, err)
	}
	code, _, _, err = run(t, "", "doctor", "--config", cfg, "extra")
	if code != 2 || err == nil || !strings.Contains(err.Error(), "takes no arguments") {
		t.Errorf("doctor extra: exit %d, %v", code, err)
	}
}

// TestConfigKeyErrorFromCommands: a misspelt key stops every command with
// its key path and the nearest valid key; doctor reports it and exits 1.
func TestConfigKeyErrorFromCommands(t *testing.T) {
	dir := isolate(t)
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("defaults:\n  agnet: claude\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const want = "line 2: unknown key defaults.agnet (did you mean defaults.agent?)"
	code, _, _, err := run(t, "", "run", "--config", cfg, "--agent", "claude", "hi")
	if code != 1 || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("run: exit %d, %v", code, err)
	}
	code, out, _, _ := run(t, "", "doctor", "--config", cfg)
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("doctor: exit %d\n%s", code, out)
	}
}
