// Preparer tests against the fake LXD at the seam.

package execution

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

type events struct {
	mu  sync.Mutex
	evs []agent.Event
}

func (e *events) emit(ev agent.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
}

func (e *events) subtypes() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.evs {
		if ev.Type != agent.EventSystem {
			out = append(out, "not-system:"+string(ev.Type))
			continue
		}
		out = append(out, ev.Subtype)
	}
	return out
}

type fixture struct {
	lxd      *fakeLXD
	projects *fakeProjects
	prep     *Preparer
	logs     *bytes.Buffer
	home     string
}

const secretValue = "sk-project-secret-123"

func newFixture(t *testing.T, mutate func(*Options)) *fixture {
	t.Helper()
	f := &fixture{
		lxd: newFakeLXD(),
		projects: &fakeProjects{
			projects: map[string]Project{"web": {Name: "web", Container: "web-c", Status: StatusRunning}},
			secrets:  map[string][]agent.EnvVar{"web": {{Key: "API_KEY", Value: secretValue}, {Key: "B", Value: "b"}}},
		},
		logs: &bytes.Buffer{},
		home: t.TempDir(),
	}
	instructions := filepath.Join(f.home, "AGENTS.md")
	if err := os.WriteFile(instructions, []byte("be kind"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := Options{
		LXD: f.lxd, Projects: f.projects, Client: "/usr/bin/lxc", Image: "img", Profiles: []string{"default", "tl"},
		Instructions: instructions,
		Agents: map[agent.ProviderID]Agent{
			"claude": {
				Bin: "claude", InstallHint: "npm install -g @anthropic-ai/claude-code",
				Instructions: "/root/.claude/CLAUDE.md",
				Assets:       []Asset{{Source: filepath.Join(f.home, "settings.json"), Path: "/root/.claude/settings.json"}},
				Links:        []Link{{Path: "/root/.agents/skills", Target: "/workspace/.skills"}},
				Credentials:  []Credential{{Host: filepath.Join(f.home, ".claude", ".credentials.json"), Path: "/root/.claude/.credentials.json"}},
			},
		},
	}
	if mutate != nil {
		mutate(&opts)
	}
	f.prep = New(slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})), opts)
	return f
}

func (f *fixture) prepare(t *testing.T, project string) (*agent.ContainerTarget, *events, error) {
	t.Helper()
	ev := &events{}
	tgt, err := f.prep.Prepare(t.Context(), "claude", agent.RunRequest{ChatID: "c1", RunID: "r1", Project: project}, ev.emit)
	return tgt, ev, err
}

func (f *fixture) checkNoSecretLogged(t *testing.T) {
	t.Helper()
	if strings.Contains(f.logs.String(), secretValue) {
		t.Errorf("secret value logged:\n%s", f.logs.String())
	}
}

func TestPrepareRunningContainer(t *testing.T) {
	f := newFixture(t, nil)
	c := f.lxd.add("web-c", true, "claude")

	tgt, ev, err := f.prepare(t, "web")
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.subtypes(); !slices.Equal(got, []string{SubtypeContainerPreparing}) {
		t.Errorf("events = %v, want only container_preparing (stored status is running)", got)
	}
	want := agent.ContainerTarget{Client: "/usr/bin/lxc", Instance: "web-c", Workdir: "/workspace",
		Secrets: []agent.EnvVar{{Key: "API_KEY", Value: secretValue}, {Key: "B", Value: "b"}}}
	if tgt.Client != want.Client || tgt.Instance != want.Instance || tgt.Remote != "" || tgt.Workdir != want.Workdir || !slices.Equal(tgt.Secrets, want.Secrets) {
		t.Errorf("target = %#v", tgt)
	}
	for _, d := range []string{"/workspace", "/root/.claude", "/root/.agents"} {
		if !c.dirs[d] {
			t.Errorf("directory %s not created", d)
		}
	}
	if c.config["boot.autostart"] != "true" {
		t.Error("boot autostart not enabled")
	}
	if got := c.files["/root/.claude/CLAUDE.md"]; string(got.data) != "be kind" || got.mode != 0o644 {
		t.Errorf("instructions = %q %v", got.data, got.mode)
	}
	if _, ok := c.files["/root/.claude/settings.json"]; ok {
		t.Error("a missing asset was pushed")
	}
	if _, ok := c.files["/root/.claude/.credentials.json"]; ok {
		t.Error("credentials pushed although the host has none")
	}
	if c.links["/root/.agents/skills"] != "/workspace/.skills" {
		t.Errorf("links = %v", c.links)
	}

	t.Run("second run: start again, no events", func(t *testing.T) {
		_, ev, err := f.prepare(t, "web")
		if err != nil {
			t.Fatal(err)
		}
		if got := ev.subtypes(); len(got) != 0 {
			t.Errorf("events = %v, want none", got)
		}
		if n := f.lxd.count("start"); n != 2 {
			t.Errorf("start called %d times, want once per run", n)
		}
		if n := f.lxd.count("create"); n != 0 {
			t.Errorf("create called %d times", n)
		}
	})
	f.checkNoSecretLogged(t)
}

func TestPrepareStoppedContainer(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Remote = "cluster" })
	f.projects.projects["web"] = Project{Name: "web", Container: "web-c", Status: "stopped"}
	c := f.lxd.add("cluster:web-c", false, "claude")
	tgt, ev, err := f.prepare(t, "web")
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.subtypes(); !slices.Equal(got, []string{SubtypeContainerStarting, SubtypeContainerPreparing}) {
		t.Errorf("events = %v", got)
	}
	if !c.running {
		t.Error("container not started")
	}
	if f.projects.status("web") != StatusRunning {
		t.Errorf("status = %q, want running", f.projects.status("web"))
	}
	if tgt.Remote != "cluster" || tgt.Ref() != "cluster:web-c" {
		t.Errorf("target %v", tgt)
	}
}

func TestPrepareCreatesMissingContainer(t *testing.T) {
	f := newFixture(t, nil)
	f.lxd.binsOnCreate = []string{"claude"}
	ws := t.TempDir()
	f.projects.projects["web"] = Project{Name: "web", Container: "web-c", Image: "other", Workspace: ws, Status: StatusRunning}
	_, ev, err := f.prepare(t, "web")
	if err != nil {
		t.Fatal(err)
	}
	c := f.lxd.get("web-c")
	if c == nil || !c.running {
		t.Fatal("container not created and started")
	}
	if c.image != "other" || !slices.Equal(c.profiles, []string{"default", "tl"}) {
		t.Errorf("created from %q with %v", c.image, c.profiles)
	}
	if c.devices["workspace"] != ws+":/workspace:true" {
		t.Errorf("devices = %v", c.devices)
	}
	if c.config["boot.autostart"] != "true" {
		t.Error("boot autostart not enabled")
	}
	sub := ev.subtypes()
	if !slices.Equal(sub, []string{SubtypeContainerStarting, SubtypeContainerPreparing}) {
		t.Errorf("events = %v", sub)
	}
	if !strings.Contains(ev.evs[0].Text, "not found; creating it from image other") {
		t.Errorf("starting text = %q", ev.evs[0].Text)
	}

	t.Run("deleted behind our back", func(t *testing.T) {
		_ = f.lxd.Delete(t.Context(), Instance{Name: "web-c"})
		_, ev, err := f.prepare(t, "web")
		if err != nil {
			t.Fatal(err)
		}
		if f.lxd.get("web-c") == nil || f.lxd.count("create") != 2 {
			t.Fatalf("not recreated (creates: %d)", f.lxd.count("create"))
		}
		// Recreated: provisioning starts again.
		if got := ev.subtypes(); !slices.Equal(got, []string{SubtypeContainerStarting, SubtypeContainerPreparing}) {
			t.Errorf("events = %v", got)
		}
	})
}

func TestPrepareDefaultImageAndErrors(t *testing.T) {
	t.Run("default image", func(t *testing.T) {
		f := newFixture(t, nil)
		f.lxd.binsOnCreate = []string{"claude"}
		if _, _, err := f.prepare(t, "web"); err != nil {
			t.Fatal(err)
		}
		if c := f.lxd.get("web-c"); c == nil || c.image != "img" {
			t.Fatalf("instance %+v", c)
		}
	})
	t.Run("no image", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.Image = "" })
		_, _, err := f.prepare(t, "web")
		if !errors.Is(err, ErrNoImage) {
			t.Fatalf("err = %v, want ErrNoImage", err)
		}
		if f.lxd.count("create") != 0 {
			t.Error("create called")
		}
	})
	t.Run("image missing in LXD", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { o.Image = "nope" })
		_, _, err := f.prepare(t, "web")
		if !errors.Is(err, ErrImageNotFound) {
			t.Fatalf("err = %v, want ErrImageNotFound", err)
		}
	})
	t.Run("unknown project", func(t *testing.T) {
		f := newFixture(t, nil)
		_, _, err := f.prepare(t, "nope")
		if !errors.Is(err, ErrProjectNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no container name: a host project", func(t *testing.T) {
		f := newFixture(t, nil)
		f.projects.projects["bare"] = Project{Name: "bare"}
		target, _, err := f.prepare(t, "bare")
		if err != nil || target != nil {
			t.Fatalf("target %v, err = %v; want the host (nil, nil)", target, err)
		}
		if len(f.lxd.calls) != 0 {
			t.Errorf("LXD called: %v", f.lxd.calls)
		}
	})
	t.Run("LXD unavailable", func(t *testing.T) {
		f := newFixture(t, nil)
		f.lxd.errs["start"] = ErrUnavailable
		_, _, err := f.prepare(t, "web")
		if !errors.Is(err, ErrUnavailable) || f.lxd.count("create") != 0 {
			t.Fatalf("err = %v, creates %d", err, f.lxd.count("create"))
		}
	})
	t.Run("agent CLI missing", func(t *testing.T) {
		f := newFixture(t, nil)
		f.lxd.add("web-c", true) // no claude inside
		_, _, err := f.prepare(t, "web")
		if !errors.Is(err, ErrAgentMissing) || !errors.Is(err, agent.ErrNotInstalled) {
			t.Fatalf("err = %v", err)
		}
		for _, want := range []string{"claude is not on the PATH of container web-c", "lxc exec web-c -- npm install -g @anthropic-ai/claude-code"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	})
	t.Run("operator bin override is checked", func(t *testing.T) {
		f := newFixture(t, nil)
		f.lxd.add("web-c", true, "claude")
		ev := &events{}
		_, err := f.prep.Prepare(t.Context(), "claude", agent.RunRequest{Project: "web", Bin: "/opt/claude"}, ev.emit)
		if !errors.Is(err, ErrAgentMissing) || !strings.Contains(err.Error(), "/opt/claude") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestPrepareWorkspace(t *testing.T) {
	t.Run("no id shifting falls back to a plain mount", func(t *testing.T) {
		f := newFixture(t, nil)
		f.lxd.binsOnCreate = []string{"claude"}
		f.lxd.errs["adddisk:shift"] = errors.New(`Failed to start device "workspace": Required idmapping abilities not available`)
		f.projects.projects["web"] = Project{Name: "web", Container: "web-c", Workspace: "/srv/web"}
		if _, _, err := f.prepare(t, "web"); err != nil {
			t.Fatal(err)
		}
		if got := f.lxd.get("web-c").devices["workspace"]; got != "/srv/web:/workspace:false" {
			t.Errorf("device = %q", got)
		}
	})
	t.Run("a failed mount removes the new container", func(t *testing.T) {
		f := newFixture(t, nil)
		f.lxd.binsOnCreate = []string{"claude"}
		f.lxd.errs["adddisk:shift"] = errors.New("source path does not exist")
		f.projects.projects["web"] = Project{Name: "web", Container: "web-c", Workspace: "/srv/nope"}
		_, _, err := f.prepare(t, "web")
		if err == nil || !strings.Contains(err.Error(), "mount workspace /srv/nope") {
			t.Fatalf("err = %v", err)
		}
		if f.lxd.get("web-c") != nil {
			t.Error("half-created container kept")
		}
	})
}

func TestPrepareSecretsBestEffort(t *testing.T) {
	f := newFixture(t, nil)
	f.lxd.add("web-c", true, "claude")
	f.projects.secretsErr = errors.New("database is locked")
	tgt, _, err := f.prepare(t, "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(tgt.Secrets) != 0 {
		t.Errorf("secrets = %v", tgt.Secrets)
	}
	if !strings.Contains(f.logs.String(), "load project secrets") {
		t.Errorf("failure not logged:\n%s", f.logs.String())
	}
}

func TestPrepareSerializesOneContainer(t *testing.T) {
	f := newFixture(t, nil)
	f.lxd.binsOnCreate = []string{"claude"}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			_, err := f.prep.Prepare(context.Background(), "claude", agent.RunRequest{Project: "web"}, func(agent.Event) {})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := f.lxd.count("create"); n != 1 {
		t.Errorf("create called %d times, want 1", n)
	}
}

func TestPrepareCancelled(t *testing.T) {
	f := newFixture(t, nil)
	f.lxd.add("web-c", true, "claude")
	unlock, err := f.prep.lock(t.Context(), "web-c")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = f.prep.Prepare(ctx, "claude", agent.RunRequest{Project: "web"}, func(agent.Event) {})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's error while another preparation holds the container", err)
	}
}

func TestCredentialSync(t *testing.T) {
	f := newFixture(t, nil)
	c := f.lxd.add("web-c", true, "claude")
	host := filepath.Join(f.home, ".claude", ".credentials.json")
	if err := os.MkdirAll(filepath.Dir(host), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(host, []byte(`{"token":"old"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tgt, _, err := f.prepare(t, "web")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.files["/root/.claude/.credentials.json"]; string(got.data) != `{"token":"old"}` || got.mode != 0o600 {
		t.Fatalf("credentials pushed as %q %v", got.data, got.mode)
	}

	t.Run("unchanged", func(t *testing.T) {
		before, _ := os.Stat(host)
		f.prep.Completed(t.Context(), "claude", tgt)
		after, _ := os.Stat(host)
		if !after.ModTime().Equal(before.ModTime()) || f.lxd.count("pull") != 1 {
			t.Error("unchanged credentials rewritten")
		}
	})
	t.Run("refreshed in the container", func(t *testing.T) {
		c.files["/root/.claude/.credentials.json"] = fakeFile{data: []byte(`{"token":"new"}`), mode: 0o600}
		f.prep.Completed(t.Context(), "claude", tgt)
		got, err := os.ReadFile(host)
		if err != nil || string(got) != `{"token":"new"}` {
			t.Fatalf("host credentials = %q, %v", got, err)
		}
		if st, _ := os.Stat(host); st.Mode().Perm() != 0o600 {
			t.Errorf("mode %v", st.Mode())
		}
		if strings.Contains(f.logs.String(), `"new"`) {
			t.Error("credential content logged")
		}
	})
	t.Run("empty file is not synced", func(t *testing.T) {
		c.files["/root/.claude/.credentials.json"] = fakeFile{data: []byte("  \n")}
		f.prep.Completed(t.Context(), "claude", tgt)
		if got, _ := os.ReadFile(host); string(got) != `{"token":"new"}` {
			t.Errorf("host credentials = %q", got)
		}
	})
	t.Run("agent without credentials", func(t *testing.T) {
		n := f.lxd.count("pull")
		f.prep.Completed(t.Context(), "codex", tgt)
		if f.lxd.count("pull") != n {
			t.Error("pulled for an agent that declares no credentials")
		}
	})
	t.Run("pull failure is logged, not fatal", func(t *testing.T) {
		f.lxd.errs["pull"] = ErrInstanceNotRunning
		f.prep.Completed(t.Context(), "claude", tgt)
		if !strings.Contains(f.logs.String(), "credential sync: pull") {
			t.Errorf("not logged:\n%s", f.logs.String())
		}
	})
}

func TestCredentialSyncTimeout(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.CredentialTimeout = 50 * time.Millisecond })
	slow := &slowPull{fakeLXD: f.lxd}
	f.prep.opts.LXD = slow
	start := time.Now()
	f.prep.Completed(t.Context(), "claude", &agent.ContainerTarget{Instance: "web-c"})
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Completed took %v", d)
	}
	if !errors.Is(slow.err, context.DeadlineExceeded) {
		t.Fatalf("pull ended with %v, want the timeout", slow.err)
	}
}

// slowPull blocks in Pull until ctx ends.
type slowPull struct {
	*fakeLXD
	err error
}

func (s *slowPull) Pull(ctx context.Context, in Instance, path string) ([]byte, error) {
	<-ctx.Done()
	s.err = ctx.Err()
	return nil, ctx.Err()
}
