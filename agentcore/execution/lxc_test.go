// LXC client tests: argv and error mapping through a fake lxc that replays
// LXD's real messages (../shared/reference/lxd/LXD.md).

package execution

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeClient is a scripted lxc: it records its argv (one per line) and stdin
// in dir, then prints dir/stdout and dir/stderr and exits with dir/rc.
type fakeClient struct {
	dir string
	lxc *LXC
}

func newFakeClient(t *testing.T) *fakeClient {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "lxc")
	script := `#!/bin/sh
d="$FAKE_LXC_DIR"
: > "$d/argv"
for a in "$@"; do printf '%s\n' "$a" >> "$d/argv"; done
cat > "$d/stdin"
[ -f "$d/stdout" ] && cat "$d/stdout"
[ -f "$d/stderr" ] && cat "$d/stderr" >&2
[ -f "$d/sleep" ] && exec sleep "$(cat "$d/sleep")"
exit "$(cat "$d/rc" 2>/dev/null || echo 0)"
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return &fakeClient{dir: dir, lxc: &LXC{Bin: bin, Env: []string{"PATH=" + os.Getenv("PATH"), "FAKE_LXC_DIR=" + dir}}}
}

// reply sets what the next call prints and returns.
func (f *fakeClient) reply(t *testing.T, rc, stdout, stderr string) {
	t.Helper()
	for name, v := range map[string]string{"rc": rc, "stdout": stdout, "stderr": stderr} {
		if err := os.WriteFile(filepath.Join(f.dir, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fakeClient) argv(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "argv"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func (f *fakeClient) stdin(t *testing.T) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(f.dir, "stdin"))
	return string(b)
}

func TestLXCStart(t *testing.T) {
	f := newFakeClient(t)
	in := Instance{Name: "c1"}
	tests := []struct {
		name, rc, stderr string
		want             error
	}{
		{"started", "0", "", nil},
		{"already running is success", "1", "Error: The instance is already running\n", nil},
		{"missing", "1", "Error: Instance not found\n", ErrInstanceNotFound},
		{"daemon down", "1", `Error: Get "http://unix.socket/1.0": dial unix /var/lib/lxd/unix.socket: connect: no such file or directory` + "\n", ErrUnavailable},
		{"unknown remote", "1", "Error: The remote \"nosuch\" doesn't exist\n", ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.reply(t, tt.rc, "", tt.stderr)
			err := f.lxc.Start(t.Context(), in)
			if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("Start = %v, want %v", err, tt.want)
			}
			if got := f.argv(t); !slices.Equal(got, []string{"start", "c1"}) {
				t.Errorf("argv = %q", got)
			}
		})
	}
	t.Run("other errors keep LXD's text", func(t *testing.T) {
		f.reply(t, "1", "", "Error: Failed to run: some lxc failure\n")
		err := f.lxc.Start(t.Context(), in)
		if err == nil || !strings.Contains(err.Error(), "start c1: Failed to run: some lxc failure") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestLXCCreate(t *testing.T) {
	f := newFakeClient(t)
	f.reply(t, "0", "Creating c1\n", "")
	if err := f.lxc.Create(t.Context(), Instance{Remote: "cl", Name: "c1"}, "bb", []string{"default", "tl"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"init", "--profile", "default", "--profile", "tl", "--", "cl:bb", "cl:c1"}
	if got := f.argv(t); !slices.Equal(got, want) {
		t.Errorf("argv = %q, want %q", got, want)
	}
	if err := f.lxc.Create(t.Context(), Instance{Remote: "cl", Name: "c1"}, "local:bb", nil); err != nil {
		t.Fatal(err)
	}
	if got := f.argv(t); !slices.Equal(got, []string{"init", "--", "local:bb", "cl:c1"}) {
		t.Errorf("argv = %q", got)
	}
	f.reply(t, "1", "Creating c1\n", "Error: Image not found\n")
	if err := f.lxc.Create(t.Context(), Instance{Name: "c1"}, "nope", nil); !errors.Is(err, ErrImageNotFound) {
		t.Fatalf("err = %v", err)
	}
	for _, bad := range []string{"-bad", "--profile=x", "a b", "a\tb", "a\nb", "a:b:c", ":a", "a:", "a\x00b", "a\x7fb", "ïmage"} {
		if err := f.lxc.Create(t.Context(), Instance{Name: "c1"}, bad, nil); !errors.Is(err, ErrInvalidImage) {
			t.Errorf("image %q: err = %v, want ErrInvalidImage", bad, err)
		}
	}
}

func TestValidImage(t *testing.T) {
	for _, ok := range []string{"bb", "threadline-busybox", "debian/12", "images:debian/12/cloud", "local:bb", "bedc3e2d82f5",
		"bedc3e2d82f5f4c1d5e0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8", "my_img.v2"} {
		if !ValidImage(ok) {
			t.Errorf("ValidImage(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "-x", "--help", "a b", " a", "a\n", "a\r", "a:b:c", "r:-x", "r:", ":x", "/abs", "a;b", "$(x)", "a\x00"} {
		if ValidImage(bad) {
			t.Errorf("ValidImage(%q) = true", bad)
		}
	}
}

func TestLXCExec(t *testing.T) {
	f := newFakeClient(t)
	in := Instance{Name: "c1"}
	t.Run("exit code passes through", func(t *testing.T) {
		f.reply(t, "7", "out\n", "err\n")
		res, err := f.lxc.Exec(t.Context(), in, []string{"sh", "-c", "exit 7"}, []byte("input"))
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 7 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
			t.Errorf("res = %+v", res)
		}
		if got := f.argv(t); !slices.Equal(got, []string{"exec", "c1", "--force-noninteractive", "--", "sh", "-c", "exit 7"}) {
			t.Errorf("argv = %q", got)
		}
		if f.stdin(t) != "input" {
			t.Errorf("stdin = %q", f.stdin(t))
		}
	})
	t.Run("no stdin", func(t *testing.T) {
		f.reply(t, "0", "", "")
		if _, err := f.lxc.Exec(t.Context(), in, []string{"true"}, nil); err != nil {
			t.Fatal(err)
		}
		if got := f.argv(t); !slices.Contains(got, "--disable-stdin") {
			t.Errorf("argv = %q", got)
		}
	})
	for name, tt := range map[string]struct {
		rc, stderr string
		want       error
	}{
		"command not found": {"127", "Error: Command not found\n", ErrCommandNotFound},
		"stopped":           {"1", "Error: Instance is not running\n", ErrInstanceNotRunning},
		"missing":           {"1", "Error: Instance not found\n", ErrInstanceNotFound},
	} {
		t.Run(name, func(t *testing.T) {
			f.reply(t, tt.rc, "", tt.stderr)
			res, err := f.lxc.Exec(t.Context(), in, []string{"x"}, nil)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if res.ExitCode != atoi(tt.rc) {
				t.Errorf("exit code %d", res.ExitCode)
			}
		})
	}
	t.Run("a command's own failure is a result", func(t *testing.T) {
		f.reply(t, "1", "", "grep: nothing\n")
		res, err := f.lxc.Exec(t.Context(), in, []string{"grep", "x"}, nil)
		if err != nil || res.ExitCode != 1 {
			t.Fatalf("res %+v err %v", res, err)
		}
	})
	t.Run("cancel kills the client", func(t *testing.T) {
		f.reply(t, "0", "", "")
		if err := os.WriteFile(filepath.Join(f.dir, "sleep"), []byte("30"), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(filepath.Join(f.dir, "sleep"))
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := f.lxc.Exec(ctx, in, []string{"sleep", "30"}, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
	})
}

func TestLXCFiles(t *testing.T) {
	f := newFakeClient(t)
	in := Instance{Remote: "r", Name: "c1"}
	const secret = `{"token":"very-secret"}`
	f.reply(t, "0", "", "")
	if err := f.lxc.Push(t.Context(), in, "/root/.claude/.credentials.json", []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []string{"file", "push", "-", "r:c1/root/.claude/.credentials.json", "--mode", "0600", "--uid", "0", "--gid", "0"}
	got := f.argv(t)
	if !slices.Equal(got, want) {
		t.Errorf("argv = %q, want %q", got, want)
	}
	if strings.Contains(strings.Join(got, " "), "very-secret") || f.stdin(t) != secret {
		t.Error("content must go through stdin only")
	}
	if err := f.lxc.Push(t.Context(), in, "relative", nil, 0o644); err == nil {
		t.Error("relative path accepted")
	}

	f.reply(t, "0", "content", "")
	data, err := f.lxc.Pull(t.Context(), in, "/etc/x")
	if err != nil || string(data) != "content" {
		t.Fatalf("Pull = %q, %v", data, err)
	}
	if got := f.argv(t); !slices.Equal(got, []string{"file", "pull", "r:c1/etc/x", "-"}) {
		t.Errorf("argv = %q", got)
	}
	f.reply(t, "1", "", "Error: Not Found\n")
	if _, err := f.lxc.Pull(t.Context(), in, "/nope"); !errors.Is(err, ErrFileNotFound) {
		t.Fatalf("err = %v", err)
	}
}

func TestLXCList(t *testing.T) {
	f := newFakeClient(t)
	raw, err := os.ReadFile(filepath.Join("testdata", "list-running.json"))
	if err != nil {
		t.Fatal(err)
	}
	f.reply(t, "0", string(raw), "")
	got, err := f.lxc.List(t.Context(), "cl")
	if err != nil {
		t.Fatal(err)
	}
	if got["c1"] != "Running" || len(got) != 1 {
		t.Errorf("List = %v", got)
	}
	if a := f.argv(t); !slices.Equal(a, []string{"list", "cl:", "--format", "json"}) {
		t.Errorf("argv = %q", a)
	}
}

func TestLXCMissingClient(t *testing.T) {
	c := &LXC{Bin: filepath.Join(t.TempDir(), "lxc")}
	if err := c.Start(t.Context(), Instance{Name: "x"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
}

func TestClassify(t *testing.T) {
	tests := map[string]error{
		"Error: Failed checking instance exists \"local:x\": Instance not found": ErrInstanceNotFound,
		"Error: The instance is already stopped":                                 errAlreadyStopped,
		"Creating x\nError: Image not found":                                     ErrImageNotFound,
		"Error: Requested profile \"p\" doesn't exist":                           nil,
	}
	for stderr, want := range tests {
		err := classify(1, stderr)
		if want == nil {
			if err == nil || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrInstanceNotFound) {
				t.Errorf("classify(%q) = %v, want a plain error", stderr, err)
			}
			continue
		}
		if !errors.Is(err, want) {
			t.Errorf("classify(%q) = %v, want %v", stderr, err, want)
		}
	}
	if err := classify(3, ""); err == nil || err.Error() != "exit status 3" {
		t.Errorf("empty stderr: %v", err)
	}
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}
