package giteatest_test

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/forge/giteatest"
)

func TestBinaryMissing(t *testing.T) {
	t.Setenv(giteatest.EnvBin, filepath.Join(t.TempDir(), "gitea"))
	if _, err := giteatest.Binary(); !errors.Is(err, giteatest.ErrNotInstalled) {
		t.Errorf("missing binary: %v", err)
	}
	// A binary without its options/ and templates/ is not enough.
	dir := t.TempDir()
	bin := filepath.Join(dir, "gitea")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(giteatest.EnvBin, bin)
	if _, err := giteatest.Binary(); !errors.Is(err, giteatest.ErrNotInstalled) || !strings.Contains(err.Error(), "options") {
		t.Errorf("binary without assets: %v", err)
	}
}

// TestServer: a server answers on loopback with the pinned version, its
// token creates repositories git can clone, and after the test nothing of it
// is left: no process, no files.
func TestServer(t *testing.T) {
	var (
		pid  int
		base string
	)
	ok := t.Run("run", func(t *testing.T) {
		s := giteatest.Start(t)
		pid, base = s.Pid(), filepath.Dir(s.Dir)
		t.Logf("gitea answered %s after %s", s.URL, s.StartupTime())
		u, err := url.Parse(s.URL)
		if err != nil {
			t.Fatal(err)
		}
		if host, _, _ := net.SplitHostPort(u.Host); host != "127.0.0.1" {
			t.Fatalf("server bound to %s, want loopback", u.Host)
		}
		ini, err := os.ReadFile(filepath.Join(s.Dir, "custom", "conf", "app.ini"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"HTTP_ADDR = 127.0.0.1", "OFFLINE_MODE = true", "DISABLE_SSH = true", "INSTALL_LOCK = true"} {
			if !strings.Contains(string(ini), want) {
				t.Errorf("app.ini lacks %q", want)
			}
		}
		if os.Geteuid() == 0 {
			fi, err := os.Stat(s.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); st.Uid == 0 {
				t.Errorf("the work path is root's; Gitea runs as nobody")
			}
		}

		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+"/api/v1/user", nil)
		req.Header.Set("Authorization", "token "+s.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var me struct {
			Login   string `json:"login"`
			IsAdmin bool   `json:"is_admin"`
		}
		err = json.NewDecoder(resp.Body).Decode(&me)
		_ = resp.Body.Close()
		if err != nil || me.Login != giteatest.Admin || !me.IsAdmin {
			t.Fatalf("GET /user with the token: %+v %v (%s)", me, err, resp.Status)
		}

		clone := s.CreateRepo(t, "probe")
		cmd := exec.CommandContext(t.Context(), "git", "ls-remote", clone)
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "refs/heads/main") {
			t.Fatalf("git ls-remote: %v\n%s", err, out)
		}
	})
	if !ok {
		return
	}
	if pid == 0 {
		t.Skip("no server ran (Gitea is not installed)")
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the server's process group %d is still there (%v)", pid, err)
	}
	if _, err := os.Stat(base); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there (%v)", base, err)
	}
}
