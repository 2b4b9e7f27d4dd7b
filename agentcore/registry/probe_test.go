// Detection with fake executables: versions, hangs, crashes, models, auth, cache.

package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// script writes an executable shell script named name into dir.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// pathLook resolves names only inside dir (no host PATH).
func pathLook(dir string) func(string) (string, error) {
	return func(name string) (string, error) {
		if filepath.IsAbs(name) {
			if _, err := os.Stat(name); err != nil {
				return "", err
			}
			return name, nil
		}
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			return "", err
		}
		return p, nil
	}
}

func testOpts(dir string) ProbeOptions {
	return ProbeOptions{
		VersionTimeout: 2 * time.Second,
		ModelTimeout:   2 * time.Second,
		LookPath:       pathLook(dir),
		Env:            []string{"PATH=/usr/bin:/bin"},
		Getenv:         func(string) string { return "" },
		Home:           dir,
	}
}

func TestProbeOutcomes(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "good", `case "$1" in
--version) echo "good-cli v1.2.3 (build 7)";;
models) printf 'm/one\nm/two\n';;
esac`)
	script(t, dir, "sleepy", `exec sleep 30`)
	script(t, dir, "crash", `echo "boom: config unreadable" >&2; exit 3`)
	script(t, dir, "mute", `echo "hello"`)
	script(t, dir, "badmodels", `case "$1" in --version) echo 2.0.0;; *) echo "not logged in" >&2; exit 1;; esac`)
	script(t, dir, "stderrver", `echo "tool version 0.9.1" >&2`)

	defs := []Definition{
		{ID: "good", Name: "Good", Executable: "missing-name", Fallbacks: []string{"good"}, VerifiedVersions: []string{"1.2.3"},
			Models: Models{Command: &ModelCommand{Args: []string{"models"}, Parse: ParseSlashModels}, Fallback: []string{"fb"}}},
		{ID: "outdated", Name: "Outdated", Executable: "good", VerifiedVersions: []string{"1.0.0", "1.1.0"}},
		{ID: "sleepy", Name: "Sleepy", Executable: "sleepy", Version: VersionProbe{Timeout: 300 * time.Millisecond}, Models: Models{Fallback: []string{"fb"}}},
		{ID: "crash", Name: "Crash", Executable: "crash"},
		{ID: "mute", Name: "Mute", Executable: "mute"},
		{ID: "absent", Name: "Absent", Executable: "absent", InstallHint: "npm i -g absent", Models: Models{Fallback: []string{"a1"}}},
		{ID: "badmodels", Name: "BadModels", Executable: "badmodels", Models: Models{Command: &ModelCommand{Args: []string{"models"}}, Fallback: []string{"f1", "f2"}}},
		{ID: "stderrver", Name: "StderrVer", Executable: "stderrver"},
	}
	start := time.Now()
	reports := Probe(t.Context(), defs, testOpts(dir))
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("probe took %s", el)
	}
	got := map[string]Report{}
	for i, r := range reports {
		if r.ID != defs[i].ID {
			t.Fatalf("report %d is %q, want %q (order)", i, r.ID, defs[i].ID)
		}
		got[r.ID] = r
	}

	g := got["good"]
	if g.Status != StatusReady || g.Path != filepath.Join(dir, "good") || g.Version != "1.2.3" || g.VersionWarning != "" {
		t.Errorf("good = %+v", g)
	}
	if !slices.Equal(g.Models, []string{"m/one", "m/two"}) || g.ModelSource != ModelsLive || len(g.Problems) != 0 {
		t.Errorf("good models = %q %s %q", g.Models, g.ModelSource, g.Problems)
	}
	if !slices.Equal(g.Tried, []string{"missing-name", "good"}) {
		t.Errorf("good tried %q", g.Tried)
	}
	if w := got["outdated"].VersionWarning; w != "verified with 1.0.0, 1.1.0; found 1.2.3" {
		t.Errorf("outdated warning %q", w)
	}
	s := got["sleepy"]
	if s.Status != StatusBroken || len(s.Problems) != 1 || !strings.Contains(s.Problems[0], "timed out after 300ms") {
		t.Errorf("sleepy = %+v", s)
	}
	if !slices.Equal(s.Models, []string{"fb"}) || s.ModelSource != ModelsFallback {
		t.Errorf("sleepy models %q %s", s.Models, s.ModelSource)
	}
	c := got["crash"]
	if c.Status != StatusBroken || !strings.Contains(strings.Join(c.Problems, ""), "exit status 3") || !strings.Contains(strings.Join(c.Problems, ""), "boom: config unreadable") {
		t.Errorf("crash = %+v", c)
	}
	if m := got["mute"]; m.Status != StatusBroken || !strings.Contains(strings.Join(m.Problems, ""), `printed no version: "hello"`) {
		t.Errorf("mute = %+v", m)
	}
	a := got["absent"]
	if a.Status != StatusMissing || a.Path != "" || a.InstallHint != "npm i -g absent" || !slices.Equal(a.Models, []string{"a1"}) || a.ModelSource != ModelsFallback {
		t.Errorf("absent = %+v", a)
	}
	b := got["badmodels"]
	if b.Status != StatusReady || !slices.Equal(b.Models, []string{"f1", "f2"}) || b.ModelSource != ModelsFallback ||
		len(b.Problems) != 1 || !strings.Contains(b.Problems[0], "model list `badmodels models`: exit status 1: not logged in") {
		t.Errorf("badmodels = %+v", b)
	}
	if v := got["stderrver"].Version; v != "0.9.1" {
		t.Errorf("stderr version %q", v)
	}
}

func TestProbeRunsConcurrently(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "slow", `sleep 0.5; echo 1.0.0`)
	var defs []Definition
	for i := range 6 {
		defs = append(defs, Definition{ID: "slow" + string(rune('a'+i)), Name: "Slow", Executable: "slow"})
	}
	start := time.Now()
	for _, r := range Probe(t.Context(), defs, testOpts(dir)) {
		if r.Status != StatusReady {
			t.Fatalf("%s = %+v", r.ID, r)
		}
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("6 probes of 0.5 s took %s: not concurrent", el)
	}
}

func TestProbeIsolatesPanics(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "ok", `echo 1.0.0`)
	defs := []Definition{
		{ID: "panicky", Name: "P", Executable: "ok", Models: Models{Command: &ModelCommand{Args: []string{"m"}, Parse: func(string) []string { panic("parser bug") }}}},
		{ID: "fine", Name: "F", Executable: "ok"},
	}
	opts := testOpts(dir)
	var logs bytes.Buffer
	opts.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	r := Probe(t.Context(), defs, opts)
	if r[0].Status != StatusBroken || !strings.Contains(strings.Join(r[0].Problems, ""), "parser bug") {
		t.Errorf("panicky = %+v", r[0])
	}
	// The log line carries the stack down to the parser that panicked.
	if !strings.Contains(logs.String(), `"stack":"goroutine `) || !strings.Contains(logs.String(), "TestProbeIsolatesPanics") {
		t.Errorf("panic logged without its stack: %s", logs.String())
	}
	if r[1].Status != StatusReady || r[1].Version != "1.0.0" {
		t.Errorf("fine = %+v", r[1])
	}
}

func TestProbeConfigModelsAndDiscover(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "ok", `echo 3.1.4`)
	var gotBin string
	var gotEnv []string
	defs := []Definition{
		{ID: "cfg", Name: "C", Executable: "ok", ConfigModels: []string{"mine"}, Models: Models{Command: &ModelCommand{Args: []string{"x"}}}},
		{ID: "disc", Name: "D", Executable: "ok", Env: map[string]string{"K": "v"}, Models: Models{Discover: func(ctx context.Context, bin string, env []string) ([]string, error) {
			gotBin, gotEnv = bin, env
			return []string{"d1"}, nil
		}}},
	}
	r := Probe(t.Context(), defs, testOpts(dir))
	if !slices.Equal(r[0].Models, []string{"mine"}) || r[0].ModelSource != ModelsConfig {
		t.Errorf("config = %q %s", r[0].Models, r[0].ModelSource)
	}
	if !slices.Equal(r[1].Models, []string{"d1"}) || r[1].ModelSource != ModelsLive || gotBin != filepath.Join(dir, "ok") || !slices.Contains(gotEnv, "K=v") {
		t.Errorf("discover = %+v bin %q env %q", r[1], gotBin, gotEnv)
	}
}

func TestProbeChildEnvIsMinimal(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "env.txt")
	script(t, dir, "envdump", `env > "`+out+`"; echo 1.0.0`)
	t.Setenv("THREADLINE_TEST_SECRET", "s3cr3t")
	t.Setenv("SOME_API_KEY", "k3y")
	opts := testOpts(dir)
	opts.Env = nil // the default: an allow-list of the host's
	Probe(t.Context(), []Definition{{ID: "e", Name: "E", Executable: "envdump", Env: map[string]string{"AGENT_VAR": "1"}}}, opts)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cr3t") || strings.Contains(string(b), "k3y") {
		t.Errorf("a host secret reached the probe:\n%s", b)
	}
	if !strings.Contains(string(b), "AGENT_VAR=1") || !strings.Contains(string(b), "PATH=") {
		t.Errorf("probe env lacks the agent's env or PATH:\n%s", b)
	}
}

func TestProbeAuth(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".tool"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".tool", "creds.json"), []byte(`{"token":"SECRET-VALUE"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	host := map[string]string{"HOST_ONLY_KEY": "SECRET-HOST", "TOOL_HOME": filepath.Join(home, ".tool")}
	opts := testOpts(dir)
	opts.Home = home
	opts.Getenv = func(k string) string { return host[k] }
	defs := []Definition{
		{ID: "envkey", Name: "E", Executable: "none", Env: map[string]string{"MY_KEY": "SECRET-ENV"}, Auth: AuthCheck{Env: []string{"MY_KEY"}}},
		{ID: "file", Name: "F", Executable: "none", Auth: AuthCheck{Files: []string{"~/.tool/creds.json"}}},
		{ID: "varfile", Name: "V", Executable: "none", Auth: AuthCheck{Files: []string{"${UNSET_DIR}/creds.json", "${TOOL_HOME}/creds.json"}}},
		{ID: "hostkey", Name: "H", Executable: "none", Auth: AuthCheck{Env: []string{"HOST_ONLY_KEY"}, Files: []string{"~/.nope/auth.json"}}},
		{ID: "missing", Name: "M", Executable: "none", Auth: AuthCheck{Env: []string{"UNSET_KEY"}, Files: []string{"~/.nope/auth.json"}, Note: "keyring not checked"}},
		{ID: "unknown", Name: "U", Executable: "none", Auth: AuthCheck{Note: "kept in the keyring"}},
	}
	r := Probe(t.Context(), defs, opts)
	want := []struct {
		state  AuthState
		detail string
	}{
		{AuthOK, "MY_KEY set in the agent's env"},
		{AuthOK, "credentials file ~/.tool/creds.json"},
		{AuthOK, "credentials file ~/.tool/creds.json"},
		{AuthOK, "HOST_ONLY_KEY set in the environment"},
		{AuthMissing, "no UNSET_KEY, no ~/.nope/auth.json; keyring not checked"},
		{AuthUnknown, "kept in the keyring"},
	}
	for i, w := range want {
		if r[i].Auth != w.state || r[i].AuthDetail != w.detail {
			t.Errorf("%s auth = %s %q\nwant %s %q", r[i].ID, r[i].Auth, r[i].AuthDetail, w.state, w.detail)
		}
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), "SECRET") || strings.Contains(Table(r), "SECRET") {
		t.Errorf("a secret value leaked into the report: %s", js)
	}
}

func TestProbeCache(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	bin := script(t, dir, "counted", `echo x >> "`+count+`"
case "$1" in --version) echo 1.0.0;; models) echo a/b;; esac`)
	runs := func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "x")
	}
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	opts := testOpts(dir)
	opts.Cache = NewCache(time.Minute, clock)
	defs := []Definition{{ID: "c", Name: "C", Executable: "counted", Models: Models{Command: &ModelCommand{Args: []string{"models"}, Parse: ParseSlashModels}}}}

	r := Probe(t.Context(), defs, opts)[0]
	if runs() != 2 || r.Cached || r.Version != "1.0.0" || !slices.Equal(r.Models, []string{"a/b"}) {
		t.Fatalf("first probe: runs %d, %+v", runs(), r)
	}
	r = Probe(t.Context(), defs, opts)[0]
	if runs() != 2 || !r.Cached || r.Version != "1.0.0" || !slices.Equal(r.Models, []string{"a/b"}) || r.ModelSource != ModelsLive {
		t.Fatalf("cached probe ran the CLI: runs %d, %+v", runs(), r)
	}
	// A new build of the binary (new mtime) misses.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(bin, later, later); err != nil {
		t.Fatal(err)
	}
	if r = Probe(t.Context(), defs, opts)[0]; runs() != 4 || r.Cached {
		t.Fatalf("changed binary hit the cache: runs %d", runs())
	}
	// The TTL expires.
	advance(2 * time.Minute)
	if r = Probe(t.Context(), defs, opts)[0]; runs() != 6 || r.Cached {
		t.Fatalf("expired entry was used: runs %d", runs())
	}
	if opts.Cache.Len() == 0 {
		t.Error("cache is empty")
	}
}

func TestProbeCancelled(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "sleepy", `exec sleep 30`)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	start := time.Now()
	opts := testOpts(dir)
	opts.VersionTimeout = 20 * time.Second
	r := Probe(ctx, []Definition{{ID: "s", Name: "S", Executable: "sleepy"}}, opts)[0]
	if time.Since(start) > 5*time.Second || r.Status != StatusBroken {
		t.Fatalf("cancel did not stop the probe: %s, %+v", time.Since(start), r)
	}
}

func TestTableAndJSON(t *testing.T) {
	reports := []Report{
		{ID: "claude", Name: "Claude Code", Status: StatusReady, Path: "/usr/bin/claude", Version: "2.2.0", VersionWarning: "verified with 2.1.328; found 2.2.0",
			Models: []string{"sonnet", "opus"}, ModelSource: ModelsFallback, Auth: AuthMissing, AuthDetail: "no ANTHROPIC_API_KEY", Format: FormatClaudeStreamJSON},
		{ID: "codex", Name: "Codex", Status: StatusMissing, Auth: AuthUnknown, Format: FormatCodexAppServer, InstallHint: "npm install -g @openai/codex"},
		{ID: "my-oc", Base: "opencode", Name: "OpenCode (profile my-oc)", Status: StatusBroken, Auth: AuthUnknown, Format: FormatJSONEvents, Dialect: DialectOpenCode,
			Problems: []string{"version probe `opencode --version`: timed out after 5s"}},
	}
	out := Table(reports)
	for _, want := range []string{
		"AGENT", "STATUS", "claude", "2.2.0 (!)", "2 (fallback)", "/usr/bin/claude", "json-events/opencode",
		"  claude: verified with 2.1.328; found 2.2.0\n",
		"  claude: sign-in: no ANTHROPIC_API_KEY\n",
		"  codex: install: npm install -g @openai/codex\n",
		"  my-oc: profile of opencode\n",
		"  my-oc: version probe `opencode --version`: timed out after 5s\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[1], "claude ") || !strings.HasPrefix(lines[2], "codex ") {
		t.Errorf("rows out of order:\n%s", out)
	}
	js, err := json.Marshal(reports[:1])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"id":"claude"`, `"status":"ready"`, `"model_source":"fallback"`, `"version_warning":"verified with 2.1.328; found 2.2.0"`, `"auth":"missing"`, `"format":"claude-stream-json"`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("json lacks %s: %s", want, js)
		}
	}
}
