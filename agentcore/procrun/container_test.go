// Tests for the container command: environment order and masking, argv, and
// Start through a fake lxc client.

package procrun

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

func TestContainerEnvOrder(t *testing.T) {
	got := ContainerEnv(
		[]string{"A=fixed", "S1=fixed", "F=fixed"},
		[]agent.EnvVar{{Key: "S1", Value: "secret1"}, {Key: "S2", Value: "secret2"}, {Key: "F", Value: "secret-f"}},
		[]string{"F=forced"},
		[]agent.EnvVar{{Key: "Z", Value: "z"}, {Key: "B", Value: "b"}},
	)
	// A secret replaces a fixed entry, a forced entry replaces a secret, and
	// runtime variables come last in key order; every key appears once, at the
	// position of the entry that won.
	want := []string{"A=fixed", "S1=secret1", "S2=secret2", "F=forced", "B=b", "Z=z"}
	if !slices.Equal(got, want) {
		t.Fatalf("ContainerEnv =\n %q\nwant\n %q", got, want)
	}
}

func TestContainerEnvRuntimeMasksSecrets(t *testing.T) {
	tests := map[string]struct {
		runtime []agent.EnvVar
		want    []string
	}{
		"valid runtime key wins": {
			runtime: []agent.EnvVar{{Key: "TOKEN", Value: "runtime"}},
			want:    []string{"OTHER=o", "TOKEN=runtime"},
		},
		"invalid runtime value still masks the secret": {
			runtime: []agent.EnvVar{{Key: "TOKEN", Value: "bad\x00value"}},
			want:    []string{"OTHER=o"},
		},
		"bot-secret runtime key is dropped and masks": {
			runtime: []agent.EnvVar{{Key: "SLACK_BOT_TOKEN", Value: "x"}},
			want:    []string{"TOKEN=secret", "OTHER=o"},
		},
		"invalid runtime key masks the same-named secret": {
			runtime: []agent.EnvVar{{Key: "9BAD", Value: "x"}},
			want:    []string{"TOKEN=secret", "OTHER=o"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			secrets := []agent.EnvVar{{Key: "TOKEN", Value: "secret"}, {Key: "OTHER", Value: "o"}, {Key: "9BAD", Value: "x"}, {Key: "SLACK_BOT_TOKEN", Value: "y"}}
			got := ContainerEnv(nil, secrets, nil, tt.runtime)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestContainerEnvDropsInvalid(t *testing.T) {
	got := ContainerEnv(
		[]string{"noequals", "=v", "A-B=1", "OK=1", "DATABASE_URL=postgres://x", "THREADLINE_X=1"},
		[]agent.EnvVar{{Key: "", Value: "x"}, {Key: "SP", Value: "a b=c"}, {Key: "NUL", Value: "a\x00b"}, {Key: "MATRIX_TOKEN", Value: "m"}},
		[]string{"_F1=x"},
		nil,
	)
	want := []string{"OK=1", "SP=a b=c", "_F1=x"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestContainerCommand(t *testing.T) {
	t.Setenv("LXD_CONF", "/etc/threadline/lxc")
	spec := Spec{
		Bin:       "claude",
		Args:      []string{"-p", "--model", "x y"},
		Dir:       "/host/dir",
		Env:       []string{"PATH=/host/bin", "HOME=/home/bot", "LANG=C", "CLAUDE_X=1", "K=fixed"},
		ForcedEnv: []string{"FORCED=1"},
		Container: &agent.ContainerTarget{
			Remote: "cluster", Instance: "proj-a",
			Secrets: []agent.EnvVar{{Key: "K", Value: "secret value"}},
			Runtime: []agent.EnvVar{{Key: "R", Value: "r"}},
		},
	}
	bin, args, env, err := ContainerCommand(spec)
	if err != nil {
		t.Fatal(err)
	}
	if bin != "lxc" {
		t.Errorf("bin = %q", bin)
	}
	want := []string{"exec", "cluster:proj-a", "--cwd", "/workspace", "--force-noninteractive",
		"--env=CLAUDE_X=1", "--env=K=secret value", "--env=FORCED=1", "--env=R=r",
		"--", "claude", "-p", "--model", "x y"}
	if !slices.Equal(args, want) {
		t.Errorf("args =\n %q\nwant\n %q", args, want)
	}
	wantEnv := []string{"PATH=/host/bin", "HOME=/home/bot", "LANG=C", "LXD_CONF=/etc/threadline/lxc"}
	if !slices.Equal(env, wantEnv) {
		t.Errorf("client env = %q, want %q", env, wantEnv)
	}

	t.Run("workdir and client", func(t *testing.T) {
		s := spec
		s.Container = &agent.ContainerTarget{Client: "/opt/lxc", Instance: "p", Workdir: "/srv/w"}
		bin, args, _, err := ContainerCommand(s)
		if err != nil {
			t.Fatal(err)
		}
		if bin != "/opt/lxc" || args[1] != "p" || args[3] != "/srv/w" {
			t.Errorf("bin %q args %q", bin, args)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		for _, inst := range []string{"", "a:b", "a/b", "a b"} {
			s := spec
			s.Container = &agent.ContainerTarget{Instance: inst}
			if _, _, _, err := ContainerCommand(s); err == nil {
				t.Errorf("instance %q accepted", inst)
			}
		}
		s := spec
		s.Bin = ""
		if _, _, _, err := ContainerCommand(s); !errors.Is(err, agent.ErrNotInstalled) {
			t.Errorf("empty bin: %v", err)
		}
	})
}

func TestContainerTargetHidesSecrets(t *testing.T) {
	tgt := &agent.ContainerTarget{Instance: "p", Secrets: []agent.EnvVar{{Key: "API_KEY", Value: "sk-very-secret"}}}
	for _, s := range []string{fmt.Sprint(tgt), fmt.Sprintf("%v %+v %#v", *tgt, *tgt, *tgt), fmt.Sprintf("%v %#v", tgt.Secrets, tgt.Secrets[0])} {
		if strings.Contains(s, "sk-very-secret") {
			t.Errorf("secret printed: %s", s)
		}
		if !strings.Contains(s, "API_KEY") {
			t.Errorf("key not named: %s", s)
		}
	}
}

// fakeLXC writes an lxc stand-in that prints its argv (one argument per line
// on stdout, as JSON-safe lines), prints its environment and a secret on
// stderr, and exits with $FAKE_RC from its own argv's env entries.
func fakeLXC(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "lxc")
	script := `#!/bin/sh
for a in "$@"; do printf 'arg:%s\n' "$a"; done
env | sort | sed 's/^/clientenv:/'
echo "Error: the agent said sk-very-secret-value here" >&2
exit 3
`
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStartInContainer(t *testing.T) {
	lxc := fakeLXC(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	spec := Spec{
		Bin: "agent-cli", Args: []string{"--flag"}, Dir: t.TempDir(),
		Env: []string{"PATH=" + os.Getenv("PATH"), "AGENT_MODE=x"},
		Container: &agent.ContainerTarget{
			Client: lxc, Instance: "proj",
			Secrets: []agent.EnvVar{{Key: "API_KEY", Value: "sk-very-secret-value"}},
		},
	}
	proc, err := Start(t.Context(), logger, spec)
	if err != nil {
		t.Fatal(err)
	}
	var args, clientEnv []string
	_ = proc.Each(func(line []byte) error {
		s := string(line)
		if a, ok := strings.CutPrefix(s, "arg:"); ok {
			args = append(args, a)
		} else if e, ok := strings.CutPrefix(s, "clientenv:"); ok {
			clientEnv = append(clientEnv, e)
		}
		return nil
	})
	werr := proc.Wait()
	want := []string{"exec", "proj", "--cwd", "/workspace", "--force-noninteractive",
		"--env=AGENT_MODE=x", "--env=API_KEY=sk-very-secret-value", "--", "agent-cli", "--flag"}
	if !slices.Equal(args, want) {
		t.Errorf("lxc argv =\n %q\nwant\n %q", args, want)
	}
	for _, e := range clientEnv {
		if strings.Contains(e, "sk-very-secret") || strings.HasPrefix(e, "AGENT_MODE=") {
			t.Errorf("client env carries a container entry: %s", e)
		}
	}
	pe, ok := IsExit(werr)
	if !ok || pe.ExitCode != 3 {
		t.Fatalf("Wait = %v, want exit 3", werr)
	}
	if strings.Contains(pe.Error(), "sk-very-secret") || !strings.Contains(pe.Error(), "the agent said *** here") {
		t.Errorf("stderr not masked: %s", pe.Error())
	}
	if strings.Contains(logs.String(), "sk-very-secret") {
		t.Errorf("secret logged:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "the agent said *** here") {
		t.Errorf("masked stderr line not logged:\n%s", logs.String())
	}
}

func TestStartContainerClientMissing(t *testing.T) {
	spec := Spec{Bin: "claude", Container: &agent.ContainerTarget{Client: filepath.Join(t.TempDir(), "nope"), Instance: "p"}}
	_, err := Start(t.Context(), nil, spec)
	if !errors.Is(err, ErrContainerClient) || errors.Is(err, agent.ErrNotInstalled) {
		t.Fatalf("err = %v, want ErrContainerClient (not ErrNotInstalled)", err)
	}
}

func TestForcedEnvOnHost(t *testing.T) {
	spec := Spec{
		Bin:       os.Args[0],
		Env:       []string{childEnv + "=env", "X=env", "Y=keep"},
		ForcedEnv: []string{"X=forced"},
	}
	proc, err := Start(t.Context(), nil, spec)
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	_ = proc.Each(func(line []byte) error {
		if bytes.Contains(line, []byte(`"env"`)) {
			env = append(env, string(line))
		}
		return nil
	})
	if err := proc.Wait(); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(env, "\n")
	if !strings.Contains(joined, `"X=forced"`) || strings.Contains(joined, `"X=env"`) || !strings.Contains(joined, `"Y=keep"`) {
		t.Fatalf("child env:\n%s", joined)
	}
}
