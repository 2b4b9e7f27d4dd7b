// Integration tests against a real LXD (scripts/ci-lxd-setup.sh prepares one):
// the preparer's lifecycle, the container command through procrun, and a
// project chat's run through the prompt service executing in the container.
// They skip when lxc, the daemon or the image is missing, unless
// THREADLINE_LXD=1, where that is a failure.

package execution_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/execution"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// Environment of the integration tests.
const (
	envRequire = "THREADLINE_LXD"       // "1": a missing LXD fails instead of skipping
	envImage   = "THREADLINE_LXD_IMAGE" // the image alias; default threadline-busybox
)

// requireLXD returns a client and the test image, or skips (fails under
// THREADLINE_LXD=1) with the reason.
func requireLXD(t *testing.T) (*execution.LXC, string) {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...) + "; run scripts/ci-lxd-setup.sh as root"
		if os.Getenv(envRequire) == "1" {
			t.Fatalf("%s (%s=1 requires LXD)", msg, envRequire)
		}
		t.Skipf("%s (set %s=1 to make this a failure)", msg, envRequire)
	}
	if _, err := exec.LookPath("lxc"); err != nil {
		unavailable("the lxc client is not installed")
	}
	c := &execution.LXC{}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	if _, err := c.List(ctx, ""); err != nil {
		unavailable("the LXD daemon does not answer: %v", err)
	}
	image := os.Getenv(envImage)
	if image == "" {
		image = "threadline-busybox"
	}
	if out, err := exec.CommandContext(ctx, "lxc", "image", "info", image).CombinedOutput(); err != nil {
		unavailable("the LXD image %q is missing: %s", image, bytes.TrimSpace(out))
	}
	return c, image
}

// uniqueName is a fresh instance name, deleted (with its container) in t.Cleanup.
func uniqueName(t *testing.T, c *execution.LXC) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "tl-it-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Delete(ctx, execution.Instance{Name: name}); err != nil && !errors.Is(err, execution.ErrInstanceNotFound) {
			t.Logf("cleanup: %v", err)
		}
	})
	return name
}

// memProjects is an in-memory execution.Projects.
type memProjects struct {
	mu       sync.Mutex
	projects map[string]execution.Project
	secrets  map[string][]agent.EnvVar
}

func (m *memProjects) Project(_ context.Context, name string) (execution.Project, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.projects[name]
	if !ok {
		return p, fmt.Errorf("%w: %s", execution.ErrProjectNotFound, name)
	}
	return p, nil
}

func (m *memProjects) ProjectSecrets(_ context.Context, name string) ([]agent.EnvVar, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.secrets[name], nil
}

func (m *memProjects) SetProjectStatus(_ context.Context, name, status string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.projects[name]
	p.Status = status
	m.projects[name] = p
	return nil
}

func subtypes(evs []agent.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Subtype)
	}
	return out
}

// exec runs argv in the instance and returns trimmed stdout, failing on an
// error or a non-zero exit.
func run(t *testing.T, c *execution.LXC, in execution.Instance, argv ...string) string {
	t.Helper()
	res, err := c.Exec(t.Context(), in, argv, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec %q: exit %d, %v: %s", argv, res.ExitCode, err, res.Stderr)
	}
	return strings.TrimSpace(string(res.Stdout))
}

func TestLXDPreparerLifecycle(t *testing.T) {
	c, image := requireLXD(t)
	name := uniqueName(t, c)
	in := execution.Instance{Name: name}
	home := t.TempDir()
	instructions := filepath.Join(home, "AGENTS.md")
	credHost := filepath.Join(home, "cred", "credentials.json")
	if err := os.WriteFile(instructions, []byte("# shared instructions\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(credHost), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(credHost, []byte(`{"token":"host"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	projects := &memProjects{
		projects: map[string]execution.Project{"p": {Name: "p", Container: name}},
		secrets:  map[string][]agent.EnvVar{"p": {{Key: "API_KEY", Value: "sk-it-secret"}}},
	}
	prep := execution.New(nil, execution.Options{
		LXD: c, Projects: projects, Image: image, Instructions: instructions,
		Agents: map[agent.ProviderID]execution.Agent{
			"shagent": {
				Bin: "sh", Instructions: "/root/.agent/AGENTS.md",
				Links:       []execution.Link{{Path: "/root/.agent/skills", Target: "/workspace/.skills"}},
				Credentials: []execution.Credential{{Host: credHost, Path: "/root/.agent/credentials.json"}},
			},
			"missing": {Bin: "no-such-agent", InstallHint: "npm install -g no-such-agent"},
		},
	})
	prepare := func(t *testing.T, provider agent.ProviderID) (*agent.ContainerTarget, []agent.Event, error) {
		t.Helper()
		var evs []agent.Event
		start := time.Now()
		tgt, err := prep.Prepare(t.Context(), provider, agent.RunRequest{Project: "p"}, func(e agent.Event) { evs = append(evs, e) })
		t.Logf("prepare took %v", time.Since(start).Round(time.Millisecond))
		return tgt, evs, err
	}

	t.Run("create", func(t *testing.T) {
		tgt, evs, err := prepare(t, "shagent")
		if err != nil {
			t.Fatal(err)
		}
		if got := subtypes(evs); !slices.Equal(got, []string{execution.SubtypeContainerStarting, execution.SubtypeContainerPreparing}) {
			t.Errorf("events = %v", got)
		}
		if tgt.Instance != name || tgt.Dir() != "/workspace" || len(tgt.Secrets) != 1 {
			t.Errorf("target = %v", tgt)
		}
		st, _ := c.List(t.Context(), "")
		if st[name] != "Running" {
			t.Errorf("status = %q", st[name])
		}
		if out, _ := exec.Command("lxc", "config", "get", name, "boot.autostart").Output(); strings.TrimSpace(string(out)) != "true" {
			t.Errorf("boot.autostart = %q", out)
		}
		run(t, c, in, "test", "-d", "/workspace")
		if got, err := c.Pull(t.Context(), in, "/root/.agent/AGENTS.md"); err != nil || string(got) != "# shared instructions\n" {
			t.Errorf("instructions = %q, %v", got, err)
		}
		if got := run(t, c, in, "stat", "-c", "%a %U", "/root/.agent/credentials.json"); got != "600 root" {
			t.Errorf("credentials mode/owner = %q", got)
		}
		if got := run(t, c, in, "readlink", "/root/.agent/skills"); got != "/workspace/.skills" {
			t.Errorf("link -> %q", got)
		}
	})

	t.Run("start when already running", func(t *testing.T) {
		_, evs, err := prepare(t, "shagent")
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 0 {
			t.Errorf("events = %v, want none", subtypes(evs))
		}
	})

	t.Run("stopped behind our back", func(t *testing.T) {
		if out, err := exec.Command("lxc", "stop", "--force", name).CombinedOutput(); err != nil {
			t.Fatalf("lxc stop: %v %s", err, out)
		}
		if _, _, err := prepare(t, "shagent"); err != nil {
			t.Fatal(err)
		}
		if st, _ := c.List(t.Context(), ""); st[name] != "Running" {
			t.Errorf("status = %q", st[name])
		}
	})

	t.Run("deleted behind our back", func(t *testing.T) {
		if err := c.Delete(t.Context(), in); err != nil {
			t.Fatal(err)
		}
		_, evs, err := prepare(t, "shagent")
		if err != nil {
			t.Fatal(err)
		}
		if got := subtypes(evs); !slices.Equal(got, []string{execution.SubtypeContainerStarting, execution.SubtypeContainerPreparing}) {
			t.Errorf("events = %v", got)
		}
		run(t, c, in, "test", "-d", "/workspace")
	})

	t.Run("credential sync after a run", func(t *testing.T) {
		run(t, c, in, "sh", "-c", `printf '{"token":"refreshed"}' > /root/.agent/credentials.json`)
		start := time.Now()
		prep.Completed(t.Context(), "shagent", &agent.ContainerTarget{Instance: name})
		t.Logf("credential sync took %v", time.Since(start).Round(time.Millisecond))
		got, err := os.ReadFile(credHost)
		if err != nil || string(got) != `{"token":"refreshed"}` {
			t.Fatalf("host credentials = %q, %v", got, err)
		}
	})

	t.Run("agent CLI missing", func(t *testing.T) {
		_, _, err := prepare(t, "missing")
		if !errors.Is(err, execution.ErrAgentMissing) || !strings.Contains(err.Error(), "npm install -g no-such-agent") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestLXDWorkspaceMount(t *testing.T) {
	c, image := requireLXD(t)
	name := uniqueName(t, c)
	ws := t.TempDir()
	if err := os.Chmod(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "README"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	projects := &memProjects{projects: map[string]execution.Project{"p": {Name: "p", Container: name, Workspace: ws}}}
	prep := execution.New(nil, execution.Options{LXD: c, Projects: projects, Image: image, Agents: map[agent.ProviderID]execution.Agent{"shagent": {Bin: "sh"}}})
	if _, err := prep.Prepare(t.Context(), "shagent", agent.RunRequest{Project: "p"}, func(agent.Event) {}); err != nil {
		t.Fatal(err)
	}
	if got := run(t, c, execution.Instance{Name: name}, "cat", "/workspace/README"); got != "from the host" {
		t.Errorf("workspace file = %q", got)
	}
}

// newContainer creates and starts a fresh instance with /workspace.
func newContainer(t *testing.T) (*execution.LXC, execution.Instance) {
	t.Helper()
	c, image := requireLXD(t)
	in := execution.Instance{Name: uniqueName(t, c)}
	if err := c.Create(t.Context(), in, image, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	run(t, c, in, "mkdir", "-p", "/workspace")
	return c, in
}

func TestLXDExec(t *testing.T) {
	c, in := newContainer(t)

	t.Run("cwd, env order, stdin, exit code", func(t *testing.T) {
		spec := procrun.Spec{
			Bin:       "sh",
			Args:      []string{"-c", `pwd; for k in K SP F R M container; do eval "echo $k=\$$k"; done; while read -r l; do echo "in:$l"; done; exit 7`},
			Env:       []string{"PATH=/host/only/bin", "HOME=/home/host", "F=fixed"},
			ForcedEnv: []string{"F=forced"},
			Stdin:     true,
			Container: &agent.ContainerTarget{
				Instance: in.Name,
				Secrets:  []agent.EnvVar{{Key: "K", Value: "secret-k"}, {Key: "SP", Value: "a b=c"}, {Key: "F", Value: "secret-f"}, {Key: "M", Value: "masked"}},
				Runtime:  []agent.EnvVar{{Key: "R", Value: "runtime"}, {Key: "M", Value: "bad\x00"}},
			},
		}
		proc, err := procrun.Start(t.Context(), nil, spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []string{"one", "two words"} {
			if err := proc.WriteLine([]byte(l)); err != nil {
				t.Fatal(err)
			}
		}
		_ = proc.CloseStdin()
		var lines []string
		_ = proc.Each(func(l []byte) error { lines = append(lines, string(l)); return nil })
		werr := proc.Wait()
		want := []string{"/workspace", "K=secret-k", "SP=a b=c", "F=forced", "R=runtime", "M=", "container=lxc", "in:one", "in:two words"}
		if !slices.Equal(lines, want) {
			t.Errorf("output =\n %q\nwant\n %q", lines, want)
		}
		if pe, ok := procrun.IsExit(werr); !ok || pe.ExitCode != 7 {
			t.Errorf("Wait = %v, want exit 7", werr)
		}
	})

	t.Run("host PATH does not cross", func(t *testing.T) {
		proc, err := procrun.Start(t.Context(), nil, procrun.Spec{
			Bin: "sh", Args: []string{"-c", "echo $PATH; echo $HOME"},
			Env: []string{"PATH=/host/only/bin", "HOME=/home/host"}, Container: &agent.ContainerTarget{Instance: in.Name},
		})
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		_ = proc.Each(func(l []byte) error { lines = append(lines, string(l)); return nil })
		if err := proc.Wait(); err != nil {
			t.Fatal(err)
		}
		if len(lines) != 2 || strings.Contains(lines[0], "/host/only") || lines[1] != "/root" {
			t.Errorf("container PATH/HOME = %q", lines)
		}
	})

	t.Run("missing command is exit 127", func(t *testing.T) {
		proc, err := procrun.Start(t.Context(), nil, procrun.Spec{Bin: "no-such-cli", Container: &agent.ContainerTarget{Instance: in.Name}})
		if err != nil {
			t.Fatal(err)
		}
		_ = proc.Each(func([]byte) error { return nil })
		pe, ok := procrun.IsExit(proc.Wait())
		if !ok || pe.ExitCode != 127 || !strings.Contains(pe.Stderr, "Command not found") {
			t.Errorf("Wait = %v", pe)
		}
	})

	t.Run("LXC exec with stdin and exit codes", func(t *testing.T) {
		res, err := c.Exec(t.Context(), in, []string{"sh", "-c", "cat; exit 3"}, []byte("piped"))
		if err != nil || res.ExitCode != 3 || string(res.Stdout) != "piped" {
			t.Errorf("res %+v err %v", res, err)
		}
		res, err = c.Exec(t.Context(), in, []string{"no-such-cmd"}, nil)
		if !errors.Is(err, execution.ErrCommandNotFound) || res.ExitCode != 127 {
			t.Errorf("missing command: %+v %v", res, err)
		}
	})

	t.Run("push and pull", func(t *testing.T) {
		run(t, c, in, "mkdir", "-p", "/root/sub")
		if err := c.Push(t.Context(), in, "/root/sub/f", []byte("data\n"), 0o640); err != nil {
			t.Fatal(err)
		}
		if got := run(t, c, in, "stat", "-c", "%a", "/root/sub/f"); got != "640" {
			t.Errorf("mode %s", got)
		}
		if got, err := c.Pull(t.Context(), in, "/root/sub/f"); err != nil || string(got) != "data\n" {
			t.Errorf("pull %q %v", got, err)
		}
		if _, err := c.Pull(t.Context(), in, "/root/nope"); !errors.Is(err, execution.ErrFileNotFound) {
			t.Errorf("pull missing: %v", err)
		}
		if err := c.Push(t.Context(), in, "/no/dir/f", []byte("x"), 0o644); !errors.Is(err, execution.ErrFileNotFound) {
			t.Errorf("push into a missing directory: %v", err)
		}
	})

	t.Run("cancel stops the process inside", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		p := &lineParser{started: make(chan struct{})}
		var evs []agent.Event
		done := make(chan error, 1)
		go func() {
			spec := procrun.Spec{
				Bin: "sh", Args: []string{"-c", "echo started; exec sleep 600"},
				Container: &agent.ContainerTarget{Instance: in.Name},
			}
			o := procrun.NewOneShot(nil, "shagent", "", 2*time.Second)
			done <- o.Session(nil, spec, &procrun.LineWire{Parser: p}).Run(ctx, func(e agent.Event) { evs = append(evs, e) })
		}()
		select {
		case <-p.started:
		case <-time.After(20 * time.Second):
			t.Fatal("not started")
		}
		start := time.Now()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run = %v, want nil on cancel", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
		t.Logf("cancel took %v", time.Since(start).Round(time.Millisecond))
		if len(evs) == 0 || evs[len(evs)-1].Type != agent.EventRunInterrupted {
			t.Errorf("events = %v", evs)
		}
		// The process inside is gone too.
		deadline := time.Now().Add(10 * time.Second)
		for {
			ps := run(t, c, in, "ps")
			if !strings.Contains(ps, "sleep 600") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sleep still running in the container:\n%s", ps)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}

// lineParser turns {"text":...} into deltas and {"done":true} into a
// completion, and closes started at "started".
type lineParser struct {
	once    sync.Once
	started chan struct{}
}

func (p *lineParser) Parse(line []byte) ([]agent.Event, error) {
	if string(line) == "started" && p.started != nil {
		p.once.Do(func() { close(p.started) })
		return nil, nil
	}
	var m struct {
		Text string `json:"text"`
		Done bool   `json:"done"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, err
	}
	if m.Done {
		return []agent.Event{{Type: agent.EventRunCompleted}}, nil
	}
	return []agent.Event{{Type: agent.EventAssistantDelta, Text: m.Text}}, nil
}

// shellAgent is a scripted agent.Provider: its "CLI" is sh running a fixed
// script, through procrun, so a project run executes in the container.
type shellAgent struct{ script string }

func (shellAgent) ID() agent.ProviderID { return "shagent" }

func (a shellAgent) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	spec := procrun.Spec{Bin: "sh", Args: []string{"-c", a.script}, Dir: req.Cwd, Env: procrun.Environ(os.Environ(), nil, nil), Container: req.Container}
	w := &procrun.LineWire{OneWay: procrun.OneWay{Stdin: []byte(req.Prompt)}, Parser: &lineParser{}}
	return procrun.NewOneShot(nil, a.ID(), "", 0).Session(nil, spec, w).Run(ctx, emit)
}

type chatsWithProject struct{ st *store.Store }

func (c chatsWithProject) Chat(ctx context.Context, id agent.ChatID) (prompt.Chat, error) {
	sc, err := c.st.GetChat(ctx, string(id))
	if err != nil {
		return prompt.Chat{}, err
	}
	return prompt.Chat{ID: agent.ChatID(sc.ID), Agent: sc.Agent, Cwd: sc.Cwd, Project: sc.Project, Sessions: sc.Sessions}, nil
}

func (c chatsWithProject) SetSession(ctx context.Context, chatID agent.ChatID, provider, sessionID string) error {
	return c.st.SetSession(ctx, string(chatID), provider, sessionID)
}

// TestLXDProjectRunEndToEnd runs a project chat's prompt through the prompt
// service: the preparer creates the container and the scripted agent's
// command runs inside it (its hostname is the container's, its cwd is
// /workspace, the project secret is in its env and the env file it came in
// is gone), while the persisted events hold no secret value.
func TestLXDProjectRunEndToEnd(t *testing.T) {
	c, image := requireLXD(t)
	name := uniqueName(t, c)
	const secret = "sk-e2e-secret-value"
	projects := &memProjects{
		projects: map[string]execution.Project{"e2e": {Name: "e2e", Container: name}},
		secrets:  map[string][]agent.EnvVar{"e2e": {{Key: "PROJECT_TOKEN", Value: secret}}},
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prep := execution.New(logger, execution.Options{Projects: projects, Image: image,
		Agents: map[agent.ProviderID]execution.Agent{"shagent": {Bin: "sh"}}})
	st := storetest.Open(t, store.DialectSQLite)
	hub := runhub.New(st, logger, runhub.Options{Owner: "it"})
	t.Cleanup(func() { hub.Close() })
	script := `read -r prompt
tok=missing; [ "$PROJECT_TOKEN" = "` + secret + `" ] && tok=present
printf '{"text":"host=%s cwd=%s token=%s envfiles=[%s] prompt=%s"}\n' "$(hostname)" "$(pwd)" "$tok" "$(ls -A /run/threadline)" "$prompt"
echo '{"done":true}'`
	svc := prompt.New(hub, chatsWithProject{st}, st, []agent.Provider{shellAgent{script: script}}, logger,
		prompt.Options{Owner: "it", Preparer: prep})
	chat := store.Chat{ID: "chat-" + name, Agent: "shagent", Project: "e2e", Cwd: t.TempDir()}
	if err := st.CreateChat(t.Context(), &chat); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r, err := svc.Start(t.Context(), prompt.StartRequest{ChatID: agent.ChatID(chat.ID), Prompt: "hello", By: "it"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("run did not end")
	}
	t.Logf("project run (container created) took %v", time.Since(start).Round(time.Millisecond))
	if r.Status() != runhub.StatusCompleted {
		t.Fatalf("status %s err %v", r.Status(), r.Err())
	}
	evs, err := st.EventsAfter(t.Context(), agent.ChatID(chat.ID), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	var answer string
	for _, ev := range evs {
		var e agent.Event
		_ = json.Unmarshal(ev.Payload, &e)
		typ := ev.Type
		if e.Subtype != "" {
			typ += "/" + e.Subtype
		}
		types = append(types, typ)
		if ev.Type == string(agent.EventAssistantDelta) {
			answer += e.Text
		}
		if strings.Contains(string(ev.Payload), secret) {
			t.Errorf("secret persisted in %s", ev.Type)
		}
	}
	want := "user.message run.started system/container_starting system/container_preparing assistant.delta run.completed"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	if wantAnswer := "host=" + name + " cwd=/workspace token=present envfiles=[] prompt=hello"; answer != wantAnswer {
		t.Errorf("answer = %q, want %q", answer, wantAnswer)
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("secret logged")
	}
}
