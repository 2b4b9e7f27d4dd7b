// Tests for the container command: environment order and masking, argv
// without values, the env file and its script, and Start through a fake lxc
// client and a real LXD.

package procrun

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
		Env:       []string{"PATH=/host/bin", "HOME=/home/bot", "LANG=C", "CLAUDE_X=1", "K=fixed", "ANTHROPIC_API_KEY=sk-ant-fixed"},
		ForcedEnv: []string{"FORCED=1"},
		Container: &agent.ContainerTarget{
			Remote: "cluster", Instance: "proj-a",
			Secrets: []agent.EnvVar{{Key: "K", Value: "secret value"}, {Key: "Q", Value: "it's\nmulti $(x) `y` \\"}},
			Runtime: []agent.EnvVar{{Key: "R", Value: "r"}},
		},
	}
	c, err := ContainerCommand(spec)
	if err != nil {
		t.Fatal(err)
	}
	if c.Bin != "lxc" {
		t.Errorf("bin = %q", c.Bin)
	}
	if !regexp.MustCompile(`^/run/threadline/env-[0-9a-f]{32}$`).MatchString(c.EnvPath) {
		t.Errorf("env file path = %q", c.EnvPath)
	}
	want := []string{"exec", "cluster:proj-a", "--cwd", "/workspace", "--force-noninteractive",
		"--", "/bin/sh", "-c", containerScript, "sh", c.EnvPath, "claude", "-p", "--model", "x y"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args =\n %q\nwant\n %q", c.Args, want)
	}
	for _, a := range c.Args {
		for _, v := range []string{"secret value", "sk-ant-fixed", "multi", "fixed", "CLAUDE_X", "FORCED"} {
			if strings.Contains(a, v) {
				t.Errorf("argument %q carries an environment entry (%s)", a, v)
			}
		}
	}
	wantFile := "CLAUDE_X='1'\nANTHROPIC_API_KEY='sk-ant-fixed'\nK='secret value'\nQ='it'\\''s\nmulti $(x) `y` \\'\nFORCED='1'\nR='r'\n"
	if string(c.content) != wantFile {
		t.Errorf("env file =\n%s\nwant\n%s", c.content, wantFile)
	}
	wantEnv := []string{"PATH=/host/bin", "HOME=/home/bot", "LANG=C", "LXD_CONF=/etc/threadline/lxc"}
	if !slices.Equal(c.ClientEnv, wantEnv) {
		t.Errorf("client env = %q, want %q", c.ClientEnv, wantEnv)
	}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s %x %q", c, c, c, c.content, c.content, c.content)} {
		if strings.Contains(s, "secret value") || strings.Contains(s, "sk-ant") || strings.Contains(s, hex.EncodeToString([]byte("secret"))) {
			t.Errorf("env file content printed: %s", s)
		}
	}
	if again, _ := ContainerCommand(spec); again.EnvPath == c.EnvPath {
		t.Errorf("two commands share the env file name %s", c.EnvPath)
	}

	t.Run("workdir and client", func(t *testing.T) {
		s := spec
		s.Container = &agent.ContainerTarget{Client: "/opt/lxc", Instance: "p", Workdir: "/srv/w"}
		c, err := ContainerCommand(s)
		if err != nil {
			t.Fatal(err)
		}
		if c.Bin != "/opt/lxc" || c.Args[1] != "p" || c.Args[3] != "/srv/w" {
			t.Errorf("bin %q args %q", c.Bin, c.Args)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		for _, inst := range []string{"", "a:b", "a/b", "a b", "-p", "--env=X", "p-", "1p", "a\nb", strings.Repeat("a", 64)} {
			s := spec
			s.Container = &agent.ContainerTarget{Instance: inst}
			if _, err := ContainerCommand(s); err == nil {
				t.Errorf("instance %q accepted", inst)
			}
		}
		for _, remote := range []string{"-r", "a:b", "a b", "a/b"} {
			s := spec
			s.Container = &agent.ContainerTarget{Remote: remote, Instance: "p"}
			if _, err := ContainerCommand(s); err == nil {
				t.Errorf("remote %q accepted", remote)
			}
		}
		s := spec
		s.Bin = ""
		if _, err := ContainerCommand(s); !errors.Is(err, agent.ErrNotInstalled) {
			t.Errorf("empty bin: %v", err)
		}
	})
}

// TestContainerScript runs the fixed script with the host's /bin/sh on an
// env file of values holding every byte but NUL: each arrives unchanged in
// the exec'd command's environment, the file is gone, and a file that
// cannot be opened runs nothing (the shell exits on the failed redirection).
func TestContainerScript(t *testing.T) {
	var all []byte
	for b := 1; b < 256; b++ {
		all = append(all, byte(b))
	}
	vals := map[string]string{
		"ALL":   string(all),
		"QUOTE": "'", "QUOTES": "a''b'", "NL": "\n\nx\n", "SUBST": "$(touch /tmp/pwned) `id` ${HOME}", "BS": `\\'\`,
		"EMPTY": "", "EQ": "a=b=c", "f": "not our variable",
	}
	var env []string
	for k, v := range vals {
		env = append(env, k+"="+v)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "env-x")
	if err := os.WriteFile(file, envFile(env), 0o600); err != nil {
		t.Fatal(err)
	}
	envBin, err := exec.LookPath("env")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(containerShell, "-c", containerScript, "sh", file, envBin, "-0")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	got := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	for k, v := range vals {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("env file still there: %v", err)
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Errorf("a value was executed")
	}

	// The file is missing: the command does not run.
	marker := filepath.Join(dir, "ran")
	cmd = exec.Command(containerShell, "-c", containerScript, "sh", file, "touch", marker)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if err := cmd.Run(); err == nil {
		t.Errorf("missing file: the script succeeded")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran without its env file")
	}
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

// fakeLXC writes an lxc stand-in rooted at a fresh directory (returned
// with it): every call appends its arguments (one "arg:" line each, then
// "end") to ROOT/calls and its environment to ROOT/clientenv; `file push -
// REF/PATH` stores stdin at ROOT/fs/PATH with --mode (failing after a partial
// write when ROOT/fail-push exists); `exec ... -- rm -f -- PATH` removes
// ROOT/fs/PATH; any other exec runs the command after "--" on the host with
// the env file argument mapped into ROOT/fs, as LXD would in the instance.
func fakeLXC(t *testing.T) (lxc, root string) {
	t.Helper()
	root = t.TempDir()
	lxc = filepath.Join(root, "lxc")
	script := `#!/bin/sh
root='` + root + `'
for a in "$@"; do printf 'arg:%s\n' "$a" >>"$root/calls"; done
echo end >>"$root/calls"
env | sort >>"$root/clientenv"
case "$1" in
file)
	dest="/${4#*/}"
	mode=
	while [ $# -gt 0 ]; do [ "$1" = --mode ] && mode=$2; shift; done
	mkdir -p "$root/fs$(dirname "$dest")"
	if [ -e "$root/fail-push" ]; then
		head -c 3 >"$root/fs$dest"
		echo "Error: Instance is not running" >&2
		exit 1
	fi
	cat >"$root/fs$dest" && chmod "$mode" "$root/fs$dest"
	;;
exec)
	while [ "$1" != -- ]; do shift; done
	shift
	if [ "$1" = rm ]; then exec rm -f -- "$root/fs$4"; fi
	if [ -e "$root/fail-exec" ]; then echo "Error: Instance is not running" >&2; exit 1; fi
	sh=$1 c=$2 script=$3 name=$4 file=$5
	shift 5
	exec "$sh" "$c" "$script" "$name" "$root/fs$file" "$@"
	;;
esac
`
	if err := os.WriteFile(lxc, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return lxc, root
}

// fakeCalls returns the fake client's calls, each its argument list.
func fakeCalls(t *testing.T, root string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "calls"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var calls [][]string
	var cur []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if l == "end\n" {
			calls = append(calls, cur)
			cur = nil
		} else if a, ok := strings.CutPrefix(l, "arg:"); ok {
			cur = append(cur, strings.TrimSuffix(a, "\n"))
		} else if len(cur) > 0 { // a newline inside an argument
			cur[len(cur)-1] += "\n" + strings.TrimSuffix(l, "\n")
		}
	}
	return calls
}

func TestStartInContainer(t *testing.T) {
	lxc, root := fakeLXC(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	agentScript := `for k in AGENT_MODE API_KEY QUOTED; do eval "printf 'env:%s=%s\n' $k \"\$$k\""; done
echo "Error: the agent said $API_KEY here" >&2
exit 3`
	spec := Spec{
		Bin: "sh", Args: []string{"-c", agentScript}, Dir: t.TempDir(),
		Env: []string{"PATH=" + os.Getenv("PATH"), "AGENT_MODE=x"},
		Container: &agent.ContainerTarget{
			Client: lxc, Instance: "proj",
			Secrets: []agent.EnvVar{{Key: "API_KEY", Value: "sk-very-secret-value"}, {Key: "QUOTED", Value: "it's"}},
		},
	}
	proc, err := Start(t.Context(), logger, spec)
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	_ = proc.Each(func(line []byte) error {
		if e, ok := strings.CutPrefix(string(line), "env:"); ok {
			env = append(env, e)
		}
		return nil
	})
	werr := proc.Wait()
	if want := []string{"AGENT_MODE=x", "API_KEY=sk-very-secret-value", "QUOTED=it's"}; !slices.Equal(env, want) {
		t.Errorf("agent env = %q, want %q", env, want)
	}
	calls := fakeCalls(t, root)
	if len(calls) != 3 || !slices.Equal(calls[2][:4], []string{"exec", "proj", "--force-noninteractive", "--disable-stdin"}) {
		t.Fatalf("lxc calls = %q, want a push, an exec and (after the exit 3) the idempotent removal", calls)
	}
	path := strings.TrimPrefix(calls[0][3], "proj")
	if want := []string{"file", "push", "-", "proj" + path, "--create-dirs", "--mode", "0600", "--uid", "0", "--gid", "0"}; !slices.Equal(calls[0], want) {
		t.Errorf("push argv =\n %q\nwant\n %q", calls[0], want)
	}
	want := []string{"exec", "proj", "--cwd", "/workspace", "--force-noninteractive",
		"--", "/bin/sh", "-c", containerScript, "sh", path, "sh", "-c", agentScript}
	if !slices.Equal(calls[1], want) {
		t.Errorf("exec argv =\n %q\nwant\n %q", calls[1], want)
	}
	for _, c := range calls {
		for _, a := range c {
			if strings.Contains(a, "sk-very-secret") {
				t.Errorf("secret on the lxc command line: %q", a)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(root, "fs", path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("env file left behind: %v", err)
	}
	clientEnv, _ := os.ReadFile(filepath.Join(root, "clientenv"))
	if strings.Contains(string(clientEnv), "sk-very-secret") || strings.Contains(string(clientEnv), "AGENT_MODE=") {
		t.Errorf("client env carries a container entry:\n%s", clientEnv)
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

// TestContainerEnvRemovedAfterEarlyExit: when `lxc exec` starts but ends
// before the in-container script ran (here it refuses: the instance is not
// running), Wait removes the env file the script would have removed, for a
// direct and a relayed start; a successful run costs no removal.
func TestContainerEnvRemovedAfterEarlyExit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		relayed bool
		fail    bool
	}{{"direct", false, true}, {"relayed", true, true}, {"success", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			lxc, root := fakeLXC(t)
			if tc.fail {
				if err := os.WriteFile(filepath.Join(root, "fail-exec"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			spec := Spec{Bin: "sh", Args: []string{"-c", "echo ran"}, Container: &agent.ContainerTarget{
				Client: lxc, Instance: "proj", Secrets: []agent.EnvVar{{Key: "API_KEY", Value: "sk-very-secret-value"}},
			}}
			ctx := t.Context()
			if tc.relayed {
				ctx = WithRelay(ctx, testRelay(t).Run("early-exit"))
			}
			p, err := Start(ctx, nil, spec)
			if err != nil {
				t.Fatal(err)
			}
			calls := fakeCalls(t, root)
			if len(calls) == 0 || calls[0][0] != "file" {
				t.Fatalf("lxc calls = %q, want a push first", calls)
			}
			path := strings.TrimPrefix(calls[0][3], "proj")
			_, _ = readAll(p)
			werr := p.Wait()
			calls = fakeCalls(t, root)
			if !tc.fail {
				if werr != nil || len(calls) != 2 {
					t.Fatalf("Wait = %v, lxc calls = %q, want success after a push and an exec", werr, calls)
				}
				return
			}
			if pe, ok := IsExit(werr); !ok || pe.ExitCode != 1 {
				t.Fatalf("Wait = %v, want exit 1", werr)
			}
			if _, err := os.Stat(filepath.Join(root, "fs", path)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("env file left in the container: %v", err)
			}
			if len(calls) != 3 || !slices.Equal(calls[2], []string{"exec", "proj", "--force-noninteractive", "--disable-stdin", "--", "rm", "-f", "--", path}) {
				t.Errorf("lxc calls = %q, want push, exec, removal", calls)
			}
			_ = p.Wait() // idempotent: no second removal
			if n := len(fakeCalls(t, root)); n != 3 {
				t.Errorf("%d lxc calls after a second Wait, want 3", n)
			}
		})
	}
}

// TestStartInContainerPushFails: a failed push starts nothing, removes the
// partial file and names the client's error, without the secret.
func TestStartInContainerPushFails(t *testing.T) {
	lxc, root := fakeLXC(t)
	if err := os.WriteFile(filepath.Join(root, "fail-push"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Bin: "sh", Args: []string{"-c", "echo ran"}, Container: &agent.ContainerTarget{
		Client: lxc, Instance: "proj", Secrets: []agent.EnvVar{{Key: "API_KEY", Value: "sk-very-secret-value"}},
	}}
	_, err := Start(t.Context(), nil, spec)
	if err == nil || !strings.Contains(err.Error(), "Instance is not running") || strings.Contains(err.Error(), "sk-very") {
		t.Fatalf("Start = %v, want the push error", err)
	}
	calls := fakeCalls(t, root)
	if len(calls) != 2 || calls[0][0] != "file" || !slices.Equal(calls[1][:4], []string{"exec", "proj", "--force-noninteractive", "--disable-stdin"}) {
		t.Fatalf("lxc calls = %q, want a push then a removal", calls)
	}
	path := strings.TrimPrefix(calls[0][3], "proj")
	if got := calls[1][4:]; !slices.Equal(got, []string{"--", "rm", "-f", "--", path}) {
		t.Errorf("removal = %q", got)
	}
	if _, err := os.Stat(filepath.Join(root, "fs", path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("partial env file left behind: %v", err)
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

// requireLXDInstance creates and starts a fresh instance of the CI image
// (scripts/ci-lxd-setup.sh) with /workspace, deleted in t.Cleanup. It skips
// when LXD is missing, unless THREADLINE_LXD=1, where that is a failure.
func requireLXDInstance(t *testing.T) string {
	t.Helper()
	unavailable := func(why string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(why, args...) + "; run scripts/ci-lxd-setup.sh as root"
		if os.Getenv("THREADLINE_LXD") == "1" {
			t.Fatalf("%s (THREADLINE_LXD=1 requires LXD)", msg)
		}
		t.Skipf("%s (set THREADLINE_LXD=1 to make this a failure)", msg)
	}
	if _, err := exec.LookPath("lxc"); err != nil {
		unavailable("the lxc client is not installed")
	}
	image := os.Getenv("THREADLINE_LXD_IMAGE")
	if image == "" {
		image = "threadline-busybox"
	}
	if out, err := exec.Command("lxc", "image", "info", image).CombinedOutput(); err != nil {
		unavailable("LXD or its image %q is missing: %s", image, bytes.TrimSpace(out))
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "tl-pr-" + hex.EncodeToString(b)
	t.Cleanup(func() { _ = exec.Command("lxc", "delete", "--force", name).Run() })
	for _, argv := range [][]string{{"launch", image, name}, {"exec", name, "--", "mkdir", "-p", "/workspace"}} {
		if out, err := exec.Command("lxc", argv...).CombinedOutput(); err != nil {
			t.Fatalf("lxc %q: %v: %s", argv, err, out)
		}
	}
	return name
}

// cmdlineScan reads every host process's /proc/PID/cmdline over and over
// until stop is closed, and reports each one holding any of the secrets.
type cmdlineScan struct {
	stop  chan struct{}
	done  chan struct{}
	scans atomic.Int64
	procs int      // owned by the scanner until done
	hits  []string // owned by the scanner until done
}

func scanCmdlines(secrets ...string) *cmdlineScan {
	s := &cmdlineScan{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
			for _, p := range paths {
				b, err := os.ReadFile(p)
				if err != nil {
					continue // the process ended
				}
				s.procs++
				for _, sec := range secrets {
					if !bytes.Contains(b, []byte(sec)) {
						continue
					}
					if hit := fmt.Sprintf("%s: %q", p, bytes.ReplaceAll(b, []byte{0}, []byte{' '})); !slices.Contains(s.hits, hit) {
						s.hits = append(s.hits, hit)
					}
				}
			}
			s.scans.Add(1)
			select {
			case <-s.stop:
				return
			default:
			}
		}
	}()
	return s
}

// finish stops the scan and fails t on a hit or when too few scans ran.
func (s *cmdlineScan) finish(t *testing.T) {
	t.Helper()
	close(s.stop)
	<-s.done
	t.Logf("scanned /proc/*/cmdline %d times (%d process reads)", s.scans.Load(), s.procs)
	if s.scans.Load() < 3 {
		t.Errorf("only %d scans of /proc ran during the run", s.scans.Load())
	}
	for _, h := range s.hits {
		t.Errorf("secret in a command line: %s", h)
	}
}

// TestLXDContainerSecretsOffArgv runs an agent in a real container, directly
// and under a relay: it sees the project secrets and the provider's fixed
// env (values with quotes, newlines and shell syntax) in its environment, the
// env file is gone once it runs, and while it runs no process on the host has
// a secret value in its command line.
func TestLXDContainerSecretsOffArgv(t *testing.T) {
	name := requireLXDInstance(t)
	const (
		projectSecret = "sk-proj-3f9a1c7e-secret"
		fixedSecret   = "sk-ant-fixed-8d2b4e-secret"
		oddSecret     = "it's a\nmulti-line $(touch /pwned) `id` secret"
	)
	// The agent prints its variables, the env files left, "started", then
	// waits for a line on stdin: the scan runs while it is alive.
	// It prints digests, not values: a relay's journal masks the values
	// themselves, and the check must not put them in its own argv.
	agentScript := `for k in PROJECT_TOKEN ANTHROPIC_API_KEY ODD; do eval "printf %s \"\$$k\"" | sha256sum | sed "s/ .*//; s/^/env:$k=/"; done
echo "files:$(ls -A /run/threadline | tr '\n' ' ')"
echo "pwned:$(test -e /pwned && echo yes || echo no)"
echo started
read -r line
echo "got:$line"`
	spec := Spec{
		Bin: "sh", Args: []string{"-c", agentScript}, Stdin: true,
		Env: []string{"PATH=" + os.Getenv("PATH"), "ANTHROPIC_API_KEY=" + fixedSecret},
		Container: &agent.ContainerTarget{Instance: name, Secrets: []agent.EnvVar{
			{Key: "PROJECT_TOKEN", Value: projectSecret}, {Key: "ODD", Value: oddSecret},
		}},
	}
	for _, mode := range []string{"direct", "relayed"} {
		t.Run(mode, func(t *testing.T) {
			ctx := t.Context()
			if mode == "relayed" {
				ctx = WithRelay(ctx, testRelay(t).Run("run-"+mode))
			}
			scan := scanCmdlines(projectSecret, fixedSecret, "multi-line")
			start := time.Now()
			proc, err := Start(ctx, nil, spec)
			if err != nil {
				scan.finish(t)
				t.Fatal(err)
			}
			t.Logf("%s start (env file push + lxc exec) took %v", mode, time.Since(start).Round(time.Millisecond))
			var lines []string
			started := make(chan struct{})
			eachDone := make(chan error, 1)
			go func() {
				eachDone <- proc.Each(func(l []byte) error {
					lines = append(lines, string(l))
					if string(l) == "started" {
						close(started)
					}
					return nil
				})
			}()
			select {
			case <-started:
			case <-time.After(60 * time.Second):
				_ = proc.Kill()
				scan.finish(t)
				t.Fatal("the agent did not start")
			}
			// The agent is alive: let the scan cover it for a few rounds more.
			for n := scan.scans.Load() + 3; scan.scans.Load() < n; {
				time.Sleep(10 * time.Millisecond)
			}
			out, err := exec.Command("lxc", "exec", name, "--", "ls", "-A", "/run/threadline").CombinedOutput()
			if err != nil || len(bytes.TrimSpace(out)) != 0 {
				t.Errorf("/run/threadline while the agent runs: %q, %v", out, err)
			}
			if err := proc.WriteLine([]byte("bye")); err != nil {
				t.Fatal(err)
			}
			<-eachDone
			werr := proc.Wait()
			scan.finish(t)
			if werr != nil {
				t.Fatalf("Wait = %v", werr)
			}
			want := []string{
				"env:PROJECT_TOKEN=" + sha256hex(projectSecret),
				"env:ANTHROPIC_API_KEY=" + sha256hex(fixedSecret),
				"env:ODD=" + sha256hex(oddSecret),
				"files:", "pwned:no", "started", "got:bye",
			}
			if !slices.Equal(lines, want) {
				t.Errorf("agent output =\n %q\nwant\n %q", lines, want)
			}
		})
	}
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// BenchmarkLXDContainerStart measures a container run of `true` from Start to
// Wait with the env file (push + exec), against the former plain `lxc exec
// --env K=V` with the same environment on its command line.
func BenchmarkLXDContainerStart(b *testing.B) {
	name := benchInstance(b)
	spec := Spec{Bin: "true", Env: []string{"PATH=" + os.Getenv("PATH"), "ANTHROPIC_API_KEY=sk-bench"},
		Container: &agent.ContainerTarget{Instance: name, Secrets: []agent.EnvVar{{Key: "TOKEN", Value: "sk-bench-token"}}}}
	b.Run("envfile", func(b *testing.B) {
		for b.Loop() {
			p, err := Start(b.Context(), nil, spec)
			if err != nil {
				b.Fatal(err)
			}
			_ = p.Each(func([]byte) error { return nil })
			if err := p.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("argv", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("lxc", "exec", name, "--cwd", "/workspace", "--force-noninteractive",
				"--env=ANTHROPIC_API_KEY=sk-bench", "--env=TOKEN=sk-bench-token", "--", "true")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
}

// benchInstance is requireLXDInstance for a benchmark.
func benchInstance(b *testing.B) string {
	b.Helper()
	if _, err := exec.LookPath("lxc"); err != nil {
		b.Skip("no lxc client")
	}
	image := os.Getenv("THREADLINE_LXD_IMAGE")
	if image == "" {
		image = "threadline-busybox"
	}
	rb := make([]byte, 4)
	_, _ = rand.Read(rb)
	name := "tl-pb-" + hex.EncodeToString(rb)
	b.Cleanup(func() { _ = exec.Command("lxc", "delete", "--force", name).Run() })
	for _, argv := range [][]string{{"launch", image, name}, {"exec", name, "--", "mkdir", "-p", "/workspace"}} {
		if out, err := exec.Command("lxc", argv...).CombinedOutput(); err != nil {
			if os.Getenv("THREADLINE_LXD") == "1" {
				b.Fatalf("lxc %q: %v: %s", argv, err, out)
			}
			b.Skipf("LXD unavailable: lxc %q: %v: %s", argv, err, out)
		}
	}
	return name
}
