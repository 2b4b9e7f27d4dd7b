// Tests: the generated CODEX_HOME config, the child environment and the
// thread/turn requests (the test binary re-executed as a minimal
// app-server), and an end-to-end run of the real Codex CLI against the fake
// Responses API with MiniMax's configuration.

package minimax

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/codex/fakeresponses"
	"github.com/threadline-bot/threadline/providers/providertest"
)

const envFake = "MINIMAX_TEST_FAKE" // path of the record file: act as the app-server

func TestMain(m *testing.M) {
	providertest.RunSandboxIfAsked() // before the fakes: the helper passes their variables on
	if rec := os.Getenv(envFake); rec != "" {
		os.Exit(providertest.ServeFake("", rec, fakeAppServer))
	}
	providertest.Main(m)
}

// fakeAppServer answers the handshake, the thread and the turn, then
// completes the turn, keeping every stdin line in rec (see ServeFake).
func fakeAppServer(rec *os.File) int {
	providertest.RecordLines(rec, func(line []byte) bool {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(line, &m)
		switch m.Method {
		case "initialize":
			fmt.Printf(`{"id":%s,"result":{"userAgent":"fake"}}`+"\n", m.ID)
		case "thread/start":
			fmt.Printf(`{"id":%s,"result":{"thread":{"id":"thr-1"},"model":"MiniMax-M2.1","modelProvider":"minimax"}}`+"\n", m.ID)
		case "turn/start":
			fmt.Printf(`{"id":%s,"result":{"turn":{"id":"turn-1","status":"inProgress"}}}`+"\n", m.ID)
			fmt.Println(`{"method":"item/agentMessage/delta","params":{"threadId":"thr-1","turnId":"turn-1","itemId":"m1","delta":"hi"}}`)
			fmt.Println(`{"method":"turn/completed","params":{"threadId":"thr-1","turn":{"id":"turn-1","status":"completed","items":[]}}}`)
		}
		return true
	})
	return 0
}

func TestConfigTOML(t *testing.T) {
	p := New(nil, Options{CodexHome: t.TempDir(), BaseURL: "https://example.test/v1", Model: `M"2`})
	// testdata/config.toml is the whole file for these options.
	want, err := os.ReadFile(filepath.Join("testdata", "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.ConfigTOML(); got != string(want) {
		t.Errorf("config.toml:\n%s\nwant:\n%s", got, want)
	}
	d := New(nil, Options{CodexHome: t.TempDir()})
	if !strings.Contains(d.ConfigTOML(), `base_url = "https://api.minimax.io/v1"`) || !strings.Contains(d.ConfigTOML(), `model = "MiniMax-M2.1"`) {
		t.Errorf("defaults:\n%s", d.ConfigTOML())
	}
	if !strings.HasSuffix(New(nil, Options{}).CodexHome(), filepath.Join("threadline", "minimax", "codex-home")) {
		t.Error("default CODEX_HOME is not MiniMax's own")
	}
}

func TestRunConfigEnvAndRequests(t *testing.T) {
	home := filepath.Join(t.TempDir(), "mm-home")
	fake := providertest.SelfFake(t, envFake, map[string]string{KeyEnv: "mm-configured"})
	p := New(nil, Options{
		Launch: procrun.Launch{
			Bin:     fake.Bin,
			Env:     fake.Env,
			HostEnv: providertest.HostEnvWithBotSecrets("PATH=/usr/bin:/bin", "HOME=/home/x", "OPENAI_API_KEY=sk-host", "CODEX_HOME=/home/x/.codex"),
		},
		CodexHome: home,
	})
	r := providertest.Run(t, p, agent.RunRequest{Prompt: "hello"}, nil)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if last := r.Last(); last.Type != agent.EventRunCompleted || last.Native == nil || last.Native.Provider != ProviderID {
		t.Errorf("last %+v", last)
	}
	for _, ev := range r.Events {
		if ev.Native != nil && ev.Native.Provider != ProviderID {
			t.Errorf("event %s carries provider %q", ev.Type, ev.Native.Provider)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(home, "config.toml"))
	if err != nil || string(cfg) != p.ConfigTOML() {
		t.Errorf("config.toml %q, %v", cfg, err)
	}
	head := providertest.ReadRecord(t, fake.Record)
	if !slices.Equal(head.Argv, append(config(p.opts).Overrides(), "app-server")) {
		t.Errorf("argv %q", head.Argv)
	}
	for _, want := range []string{"CODEX_HOME=" + home, KeyEnv + "=mm-configured", "HOME=/home/x"} {
		if !slices.Contains(head.Env, want) {
			t.Errorf("child env lacks %s: %q", want, head.Env)
		}
	}
	providertest.CheckNoBotSecrets(t, head.Env, "HOME=/home/x")
	for _, kv := range head.Env {
		if strings.HasPrefix(kv, "OPENAI_API_KEY=") || kv == "CODEX_HOME=/home/x/.codex" {
			t.Errorf("child env has %s", kv)
		}
	}
	var thread, turn string
	for _, l := range head.Stdin {
		switch {
		case strings.Contains(string(l), `"method":"thread/start"`):
			thread = string(l)
		case strings.Contains(string(l), `"method":"turn/start"`):
			turn = string(l)
		}
	}
	if !strings.Contains(thread, `"model":"MiniMax-M2.1","modelProvider":"minimax"`) {
		t.Errorf("thread/start %s", thread)
	}
	if !strings.Contains(turn, `"model":"MiniMax-M2.1"`) {
		t.Errorf("turn/start %s", turn)
	}
}

// TestRunOwnCodexHome: a run whose env sets CODEX_HOME (a sandboxed one:
// its chat's agent state, where the provider writes nothing) runs Codex
// there, configured by the -c overrides (the same settings as config.toml).
func TestRunOwnCodexHome(t *testing.T) {
	home, own := t.TempDir(), filepath.Join(t.TempDir(), "codex-home")
	fake := providertest.SelfFake(t, envFake, map[string]string{KeyEnv: "mm-configured"})
	p := New(nil, Options{CodexHome: home, BaseURL: "https://example.test/v1", Launch: procrun.Launch{Bin: fake.Bin, Env: fake.Env,
		HostEnv: func() []string { return []string{"PATH=/usr/bin:/bin"} }}})
	providertest.CheckRunCompleted(t, p, agent.RunRequest{Prompt: "x", Env: map[string]string{"CODEX_HOME": own}})
	head := providertest.ReadRecord(t, fake.Record)
	if !slices.Contains(head.Env, "CODEX_HOME="+own) {
		t.Errorf("child env %q, want CODEX_HOME=%s", head.Env, own)
	}
	if _, err := os.Stat(own); err == nil {
		t.Errorf("the provider wrote the run's CODEX_HOME %s", own)
	}
	want := []string{"-c", `model_provider="minimax"`, "-c", "check_for_update_on_startup=false",
		"-c", `model_providers.minimax={name = "MiniMax", base_url = "https://example.test/v1", env_key = "MINIMAX_API_KEY", wire_api = "responses"}`,
		"-c", "features.plugins=false", "-c", "features.remote_plugin=false", "-c", "features.apps=false", "-c", "analytics.enabled=false", "app-server"}
	if !slices.Equal(head.Argv, want) {
		t.Errorf("argv %q\nwant %q", head.Argv, want)
	}
	if st := Descriptor().State; st.Env["CODEX_HOME"] != ".minimax/codex-home" || len(st.Shared) != 0 {
		t.Errorf("sandboxed state %+v: want MiniMax's own CODEX_HOME, nothing shared", st)
	}
}

func TestHostKeyDoesNotPass(t *testing.T) {
	fake := providertest.SelfFake(t, envFake, nil)
	p := New(nil, Options{CodexHome: t.TempDir(), Launch: procrun.Launch{Bin: fake.Bin, Env: fake.Env,
		HostEnv: func() []string { return []string{"PATH=/usr/bin:/bin", KeyEnv + "=mm-host"} }}})
	if err := p.Run(t.Context(), agent.RunRequest{Prompt: "x"}, func(agent.Event) {}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(fake.Record)
	if strings.Contains(string(data), "mm-host") {
		t.Error("the host's MINIMAX_API_KEY reached the child without being configured")
	}
}

func TestNotInstalled(t *testing.T) {
	providertest.CheckNotInstalled(t, func(bin string) *Provider {
		return New(nil, Options{Launch: procrun.Launch{Bin: bin}, CodexHome: t.TempDir()})
	}, "npm install -g @openai/codex")
}

// TestE2EMiniMaxConfig runs the real Codex CLI with the generated MiniMax
// config, its endpoint pointed at the fake Responses API.
func TestE2EMiniMaxConfig(t *testing.T) {
	bin := providertest.FindCLI(t, "codex", "THREADLINE_CODEX_BIN")
	if !providertest.InNetns(t) {
		return
	}
	fake := fakeresponses.New(t, fakeresponses.When("e2e-minimax", fakeresponses.Text("Hello ", "from ", "MiniMax.")))
	dir := t.TempDir()
	env := map[string]string{KeyEnv: "mm-dummy", "HOME": filepath.Join(dir, "home"), "NO_PROXY": "127.0.0.1"}
	providertest.Sandboxed(t, env)
	providertest.SandboxConnects(t, fake.URL())
	providertest.CheckPeers(t, fake.PeerUIDs)
	p := New(nil, Options{Launch: procrun.Launch{Bin: bin, Env: env}, CodexHome: filepath.Join(dir, "codex-home"), BaseURL: fake.BaseURL()})
	req := agent.RunRequest{Prompt: "e2e-minimax: hi", Cwd: t.TempDir()}
	if providertest.IsSandboxed(t) {
		// As a sandboxed chat's run starts (agentcore/execution): the state
		// switches point into the chat's agent state, made beforehand.
		state := t.TempDir()
		providertest.Sandboxed(t, nil, state)
		req.Env = map[string]string{}
		for k, rel := range Descriptor().State.Env {
			req.Env[k] = filepath.Join(state, rel)
			if err := os.MkdirAll(req.Env[k], 0o700); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := providertest.CheckRunCompleted(t, p, req)
	if r.Text() != "Hello from MiniMax." {
		t.Errorf("text %q", r.Text())
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].Body.Model != DefaultModel || !reqs[0].HasAuth {
		t.Fatalf("fake saw %d requests: %+v", len(reqs), reqs)
	}
}

// TestE2EAsOrdinaryUser: the codex binary with MiniMax's configuration runs
// sandboxed as an ordinary user too.
func TestE2EAsOrdinaryUser(t *testing.T) {
	providertest.AsOrdinaryUser(t, "^TestE2EMiniMaxConfig$")
}
