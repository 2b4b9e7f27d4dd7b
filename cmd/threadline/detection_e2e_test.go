package main

import (
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/acp"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

// TestDetectionIsALaunch: with `agents.<id>.env.HOME` set to a home the
// agent user owns (its shared login and config), `threadline agents`
// probes the real opencode and kilo as a run starts them (the agent user, in
// the sandbox, with a home of the probe's own), so it leaves no file of
// root's in that home, and the runs that follow succeed. The sign-in
// state agents reports is the one the run sees: a credentials file of the
// shared home, which the run's own home gets a copy of.
func TestDetectionIsALaunch(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	agentU := agentUser(t)
	uid, _ := strconv.Atoi(agentU.Uid)
	bins := map[string]string{"opencode": providertest.FindCLI(t, "opencode", ""), "kilo": providertest.FindCLI(t, "kilo", "")}
	dir := isolate(t)
	fake := fakeopenai.New(t, fakeopenai.Text("detected", " and ran."))
	port, _ := strconv.Atoi(fake.URL()[strings.LastIndex(fake.URL(), ":")+1:])
	agents := map[string]any{}
	homes := map[string]string{}
	for id, def := range map[string]acp.Definition{"opencode": acp.Opencode(), "kilo": acp.Kilo()} {
		bin := bins[id]
		home := filepath.Join(dir, id+"-home")
		env, err := def.Configure(home, acp.Endpoint{OpenAIBaseURL: fake.URL() + "/v1", APIKey: "sk-fake", Model: fakeopenai.DefaultModel})
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(env, def.Env)
		env["HOME"] = home
		// A sign-in file in the shared home, where Auth.Files look.
		auth := filepath.Join(home, ".local", "share", id, "auth.json")
		if err := os.MkdirAll(filepath.Dir(auth), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(auth, []byte(`{}`), 0o600); err != nil {
			t.Fatal(err)
		}
		chownTree(t, home, agentU)
		if err := os.Chmod(home, 0o700); err != nil {
			t.Fatal(err)
		}
		homes[id] = home
		// The endpoint is in the CLI's own config file: its port is added.
		agents[id] = map[string]any{"bin": bin, "env": env, "sandbox": map[string]any{"connect": []int{port}}}
	}
	raw, _ := yaml.Marshal(map[string]any{"database": map[string]any{"url": filepath.Join(dir, "tl.db")}, "agents": agents})
	cfg := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(cfg, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut, err := run(t, "", "agents", "--json", "--config", cfg)
	if code != 0 || err != nil {
		t.Fatalf("agents: %d %v\n%s", code, err, errOut)
	}
	var reports []registry.Report
	if err := json.Unmarshal([]byte(out), &reports); err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		if homes[r.ID] == "" {
			continue
		}
		if r.Status != registry.StatusReady || r.Version == "" {
			t.Errorf("%s: %s %q %v", r.ID, r.Status, r.Version, r.Problems)
		}
		if r.Auth != registry.AuthOK || !strings.Contains(r.AuthDetail, filepath.Join(".local", "share", r.ID, "auth.json")) {
			t.Errorf("%s: sign-in %s (%s), want the shared home's auth.json", r.ID, r.Auth, r.AuthDetail)
		}
	}
	for id, home := range homes {
		// The probe wrote nothing of root's into the shared home.
		_ = filepath.WalkDir(home, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if fi, err := os.Lstat(p); err == nil && int(fi.Sys().(*syscall.Stat_t).Uid) != uid {
				t.Errorf("%s: %s belongs to uid %d after `agents`", id, p, fi.Sys().(*syscall.Stat_t).Uid)
			}
			return nil
		})
		work := filepath.Join(dir, id+"-work")
		if err := os.Mkdir(work, 0o755); err != nil {
			t.Fatal(err)
		}
		chownTree(t, work, agentU)
		code, out, errOut, err := run(t, "", "run", "--config", cfg, "--agent", id, "--cwd", work, "--interactions", "accept", "say hello")
		if code != 0 || err != nil || !strings.Contains(out, "detected and ran.") {
			t.Fatalf("run %s: %d %v\nstdout: %s\nstderr: %s", id, code, err, out, errOut)
		}
		// The run's home got the copy of the sign-in file agents saw.
		copies, _ := filepath.Glob(filepath.Join(dir, "data", "threadline", "agents", "*", "home", ".local", "share", id, "auth.json"))
		copies = slices.DeleteFunc(copies, func(p string) bool { return strings.Contains(p, "/probe-") })
		if len(copies) == 0 {
			t.Errorf("%s: no run home holds the shared auth.json", id)
		}
	}
}
