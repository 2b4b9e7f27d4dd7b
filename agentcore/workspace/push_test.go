package workspace

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestPushUnpushed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	wt := f.create("a")
	if p, err := f.g.Unpushed(ctx, wt, ""); err != nil || !p.Clean() {
		t.Errorf("fresh clone: Unpushed = %+v, %v", p, err)
	}
	writeFile(t, wt.Dir, "a.txt", "a\n")
	if p, _ := f.g.Unpushed(ctx, wt, ""); !slices.Equal(p.Files, []string{"a.txt"}) || p.Commits != 0 {
		t.Errorf("uncommitted: %+v", p)
	}
	id, err := f.g.Commit(ctx, wt, CommitOptions{Message: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := f.g.Unpushed(ctx, wt, ""); p.Commits != 1 || len(p.Files) != 0 {
		t.Errorf("committed: %+v", p)
	}
	if err := f.g.Push(ctx, wt, PushOptions{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Push before Import = %v, want ErrInvalid", err)
	}
	if head := f.importAll(wt); head != id {
		t.Errorf("Import = %s, want %s", head, id)
	}
	if err := f.g.Push(ctx, wt, PushOptions{Head: id}); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, f.origin, "rev-parse", "refs/heads/"+wt.Branch); got != id {
		t.Errorf("origin has %s, want %s", got, id)
	}
	if p, _ := f.g.Unpushed(ctx, wt, ""); !p.Clean() {
		t.Errorf("pushed: %+v", p)
	}
	// Head must be a commit the main clone has.
	other := f.create("b")
	f.commitIn(other, map[string]string{"b.txt": "b\n"})
	bHead := gitT(t, other.Dir, "rev-parse", "HEAD")
	for _, head := range []string{bHead, "not-an-id", strings.Repeat("0", 40)} {
		if err := f.g.Push(ctx, wt, PushOptions{Head: head}); !errors.Is(err, ErrInvalid) {
			t.Errorf("Push of %q = %v, want ErrInvalid", head, err)
		}
	}
	f.assertMainUntouched()
}

// TestPushNotFastForward pushes from the main clone to a bare remote; a
// push over someone else's commit is ErrNotFastForward and changes nothing.
func TestPushNotFastForward(t *testing.T) {
	t.Parallel()
	testPushNotFastForward(t, newFixture(t, Options{}))
}

func testPushNotFastForward(t *testing.T, f *fixture) {
	ctx := t.Context()
	wt := f.create("a")
	writeFile(t, wt.Dir, "a.txt", "a\n")
	if _, err := f.g.Commit(ctx, wt, CommitOptions{Message: "a"}); err != nil {
		t.Fatal(err)
	}
	f.importAll(wt)
	if err := f.g.Push(ctx, wt, PushOptions{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	if got, want := gitT(t, f.origin, "rev-parse", "refs/heads/"+wt.Branch), gitT(t, wt.Dir, "rev-parse", "HEAD"); got != want {
		t.Errorf("origin has %s, want %s", got, want)
	}
	theirs := f.pushFromElsewhere(wt.Branch, "theirs.txt", "someone else\n")
	writeFile(t, wt.Dir, "b.txt", "b\n")
	if _, err := f.g.Commit(ctx, wt, CommitOptions{Message: "b"}); err != nil {
		t.Fatal(err)
	}
	f.importAll(wt)
	err := f.g.Push(ctx, wt, PushOptions{})
	if !errors.Is(err, ErrNotFastForward) {
		t.Fatalf("Push over someone else's commit = %v, want ErrNotFastForward", err)
	}
	t.Logf("non-fast-forward: %v", err)
	if got := gitT(t, f.origin, "rev-parse", "refs/heads/"+wt.Branch); got != theirs {
		t.Errorf("origin's branch moved to %s", got)
	}
	f.assertMainUntouched()
}

// TestCredentialHidden pushes with a token through a fake remote helper
// that records git's and its own command lines and prints its environment's
// header to stderr: the token is in none of the command lines and not in
// the error.
func TestCredentialHidden(t *testing.T) {
	t.Parallel()
	const token = "ghs_SuperSecretToken1234567890"
	rec := t.TempDir()
	bin := fakeHelper(t, "git-remote-spy", `
tr '\0' ' ' < /proc/$$/cmdline > `+rec+`/helper.cmdline
tr '\0' ' ' < /proc/$PPID/cmdline > `+rec+`/git.cmdline
env | grep -i '^GIT_CONFIG_VALUE' > `+rec+`/helper.env
env | grep -i 'authorization' >&2
echo "fatal: the spy refuses $1 $2" >&2
exit 1
`)
	var mu sync.Mutex
	var argvs [][]string
	f := newFixture(t, Options{
		Env: []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")},
		Cmd: func(cmd *exec.Cmd) {
			mu.Lock()
			defer mu.Unlock()
			argvs = append(argvs, slices.Clone(cmd.Args))
		},
	})
	gitT(t, f.main, "remote", "add", "spy", "spy::https://forge.example/repo.git")
	wt := f.create("a")
	f.importAll(wt)
	err := f.g.Push(t.Context(), wt, PushOptions{Remote: "spy", Credential: &Credential{Username: "x-access-token", Token: token}})
	if err == nil {
		t.Fatal("push to the spy succeeded")
	}
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	secrets := []string{token, basic}
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error text holds a secret: %v", err)
		}
	}
	t.Logf("error: %v", err)
	if env := readFile(t, rec, "helper.env"); !strings.Contains(env, "Authorization: Basic "+basic) {
		t.Errorf("the header did not reach git through the environment: %q", env)
	}
	for _, name := range []string{"helper.cmdline", "git.cmdline"} {
		line := readFile(t, rec, name)
		if line == "" {
			t.Errorf("%s not recorded", name)
		}
		for _, s := range secrets {
			if strings.Contains(line, s) {
				t.Errorf("%s holds a secret: %q", name, line)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, argv := range argvs {
		for _, s := range secrets {
			if strings.Contains(strings.Join(argv, " "), s) {
				t.Errorf("argv holds a secret: %q", argv)
			}
		}
	}
}

func TestCredentialConfig(t *testing.T) {
	c := &Credential{Token: "tok"}
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:tok"))
	tests := []struct{ url, key string }{
		{"https://github.com/o/r.git", "http.https://github.com/.extraHeader"},
		{"http://gitea.local:3000/o/r", "http.http://gitea.local:3000/.extraHeader"},
		{"git@github.com:o/r.git", "http.extraHeader"},
		{"/srv/repo.git", "http.extraHeader"},
	}
	for _, tt := range tests {
		config, secrets := c.config(tt.url)
		if len(config) != 1 || config[0] != tt.key+"=Authorization: Basic "+basic {
			t.Errorf("config(%q) = %q", tt.url, config)
		}
		if !slices.Contains(secrets, "tok") || !slices.Contains(secrets, basic) {
			t.Errorf("secrets(%q) = %q", tt.url, secrets)
		}
	}
	var none *Credential
	if config, secrets := none.config("https://x"); config != nil || secrets != nil {
		t.Error("nil credential sends something")
	}
	g := New(Options{})
	env := g.bot("").environ(call{config: []string{"http.extraHeader=Authorization: Basic " + basic}})
	if !slices.Contains(env, "GIT_CONFIG_VALUE_"+itoa(len(fixedConfig))+"=Authorization: Basic "+basic) {
		t.Errorf("the header is not in the environment: %q", env)
	}
}

// TestPushToPath pushes to a remote given as a path, not a remote name.
func TestPushToPath(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	wt := f.create("a")
	f.importAll(wt)
	other := filepath.Join(f.root, "other.git")
	gitT(t, f.root, "init", "-q", "--bare", other)
	if err := f.g.Push(t.Context(), wt, PushOptions{Remote: other}); err != nil {
		t.Fatal(err)
	}
	if gitT(t, other, "rev-parse", "refs/heads/"+wt.Branch) == "" {
		t.Error("branch not pushed")
	}
}

// TestCredentialOverHTTP pushes to an HTTP forge that refuses everyone:
// the token arrives as a Basic header scoped to the forge, the refusal is
// ErrAuth, and the error holds no secret.
func TestCredentialOverHTTP(t *testing.T) {
	t.Parallel()
	const token = "glpat-AnotherSecret987"
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Basic realm="forge"`)
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer srv.Close()
	f := newFixture(t, Options{})
	wt := f.create("a")
	f.importAll(wt)
	err := f.g.Push(t.Context(), wt, PushOptions{Remote: srv.URL + "/o/r.git", Credential: &Credential{Username: "oauth2", Token: token}})
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("Push to a refusing forge = %v, want ErrAuth", err)
	}
	t.Logf("refused: %v", err)
	basic := base64.StdEncoding.EncodeToString([]byte("oauth2:" + token))
	if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), basic) {
		t.Errorf("error holds a secret: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0] != "Basic "+basic {
		t.Errorf("the forge saw Authorization %q", got)
	}
}
