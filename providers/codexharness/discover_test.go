// Discovery tests: app-server catalog (paged), the debug-models and Auto
// fallbacks, and the cache key.

package codexharness

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/providertest"
)

func discoveryHarness(t *testing.T, env map[string]string) (*Harness, string) {
	t.Helper()
	fake := providertest.SelfFake(t, envRecord, map[string]string{envFake: "1"}, env)
	h := New(nil, Options{
		Provider: "testprov", CodexHome: t.TempDir(), CredentialEnv: []string{"TEST_API_KEY"},
		Launch: procrun.Launch{Bin: fake.Bin, Env: fake.Env, HostEnv: func() []string { return []string{"PATH=/usr/bin:/bin"} }},
	})
	return h, fake.Record
}

// spawns counts the processes the fake recorded.
func spawns(t *testing.T, rec string) int {
	t.Helper()
	b, err := os.ReadFile(rec)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte(`{"argv":`))
}

func TestDiscoverAppServer(t *testing.T) {
	h, rec := discoveryHarness(t, map[string]string{envMode: "catalog", envTranscript: providertest.Testdata(t, "lists.jsonl")})
	cat, err := h.Discover(t.Context(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cat.Source != SourceAppServer || cat.Warning != "" {
		t.Errorf("source %q warning %q", cat.Source, cat.Warning)
	}
	ids := cat.ModelIDs()
	want := []string{"gpt-6.1-sol", "gpt-6-astra", "gpt-6-sol", "gpt-6-luna", "gpt-5.6-sol", "gpt-6.1-terra", "gpt-5.6-terra", "gpt-5.6-luna", "gpt-5.5"}
	if !slices.Equal(ids, want) {
		t.Errorf("models (two pages) %q", ids)
	}
	if m := cat.Models[0]; !m.IsDefault || m.DefaultEffort != "low" || !slices.Contains(m.Efforts, "ultra") || len(m.Raw) == 0 {
		t.Errorf("first model %+v", m)
	}
	if len(cat.Modes) != 2 || cat.Modes[0].Mode != "plan" || cat.Modes[0].ReasoningEffort == nil || *cat.Modes[0].ReasoningEffort != "medium" {
		t.Errorf("modes %+v", cat.Modes)
	}
	if e := cat.Efforts(); !slices.Equal(e, []string{"low", "medium", "high", "xhigh", "max", "ultra"}) {
		t.Errorf("efforts %q", e)
	}
	data, _ := os.ReadFile(rec)
	if !bytes.Contains(data, []byte(`"cursor":"page-2"`)) || !bytes.Contains(data, []byte(`"experimentalApi":true`)) {
		t.Errorf("requests:\n%s", data)
	}
	// Cached: no second process.
	if _, err := h.Discover(t.Context(), "", nil); err != nil {
		t.Fatal(err)
	}
	if n := spawns(t, rec); n != 1 {
		t.Errorf("%d app-server processes for two calls", n)
	}
}

func TestDiscoverFallbacks(t *testing.T) {
	t.Run("debug models", func(t *testing.T) {
		// No transcript: the fake app-server exits at once.
		h, _ := discoveryHarness(t, map[string]string{envDebug: providertest.Testdata(t, "debug-models.json")})
		cat, err := h.Discover(t.Context(), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if cat.Source != SourceDebugModels || !strings.Contains(cat.Warning, "app-server") {
			t.Errorf("source %q warning %q", cat.Source, cat.Warning)
		}
		if ids := cat.ModelIDs(); !slices.Equal(ids, []string{"gpt-6-astra", "gpt-5.5"}) {
			t.Errorf("visible models %q (codex-auto-review is hidden)", ids)
		}
	})
	t.Run("auto", func(t *testing.T) {
		h, _ := discoveryHarness(t, nil)
		cat, err := h.Discover(t.Context(), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if cat.Source != SourceAuto || len(cat.Models) != 1 || cat.Models[0].ID != "" || cat.Models[0].DisplayName != "Auto" || cat.ModelIDs() != nil {
			t.Errorf("catalog %+v", cat)
		}
		if !strings.Contains(cat.Warning, "debug models") {
			t.Errorf("warning %q", cat.Warning)
		}
	})
	t.Run("not installed", func(t *testing.T) {
		h := New(nil, Options{Provider: "p", Launch: procrun.Launch{Bin: "/nonexistent/codex"}})
		cat, err := h.Discover(t.Context(), "", nil)
		if !errors.Is(err, agent.ErrNotInstalled) || cat.Source != SourceAuto {
			t.Errorf("err %v, catalog %+v", err, cat)
		}
	})
}

func TestCacheKeyFollowsCredentials(t *testing.T) {
	home := t.TempDir()
	h := New(nil, Options{
		Provider: "p", CodexHome: home, CredentialEnv: []string{"TEST_API_KEY"},
		Launch: procrun.Launch{Bin: "codex", HostEnv: func() []string { return []string{"PATH=/bin"} }},
	})
	k0 := h.CacheKey("", map[string]string{"TEST_API_KEY": "sk-secret-one"})
	if k := h.CacheKey("", map[string]string{"TEST_API_KEY": "sk-secret-one"}); k != k0 {
		t.Error("key not stable")
	}
	if strings.Contains(k0, "sk-secret-one") {
		t.Error("the key holds the credential itself")
	}
	if k := h.CacheKey("", map[string]string{"TEST_API_KEY": "two"}); k == k0 {
		t.Error("key ignores the credential value")
	}
	auth := filepath.Join(home, "auth.json")
	if err := os.WriteFile(auth, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	k1 := h.CacheKey("", map[string]string{"TEST_API_KEY": "sk-secret-one"})
	if k1 == k0 {
		t.Error("key ignores a new auth.json")
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(auth, later, later); err != nil {
		t.Fatal(err)
	}
	if k := h.CacheKey("", map[string]string{"TEST_API_KEY": "sk-secret-one"}); k == k1 {
		t.Error("key ignores a re-login (auth.json mtime)")
	}
	if k := h.CacheKey("/other/codex", map[string]string{"TEST_API_KEY": "sk-secret-one"}); k == k1 {
		t.Error("key ignores the executable")
	}
}

func TestParseDebugModelsRejectsGarbage(t *testing.T) {
	for _, in := range []string{``, `{}`, `{"models":[]}`, `not json`} {
		if _, err := ParseDebugModels([]byte(in)); err == nil {
			t.Errorf("ParseDebugModels(%q) succeeded", in)
		}
	}
}
