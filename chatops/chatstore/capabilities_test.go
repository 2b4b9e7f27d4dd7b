package chatstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestPersistedCapabilityCache: a probe recorded by one process (one Cache)
// is reused by the next one over the same database until the TTL ends: the
// CLI is not run again (version and live model list), a changed binary is
// probed again, and an expired record is not loaded.
func TestPersistedCapabilityCache(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		dir := t.TempDir()
		count := filepath.Join(dir, "count")
		bin := filepath.Join(dir, "counted")
		body := "#!/bin/sh\necho x >> \"" + count + "\"\ncase \"$1\" in --version) echo 1.0.0;; models) echo a/b; echo c/d;; esac\n"
		if err := os.WriteFile(bin, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		runs := func() int {
			b, _ := os.ReadFile(count)
			return strings.Count(string(b), "x")
		}
		var mu sync.Mutex
		now := time.Now()
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		defs := []registry.Definition{{ID: "counted", Name: "Counted", Executable: "counted",
			Models: registry.Models{Command: &registry.ModelCommand{Args: []string{"models"}, Parse: registry.ParseSlashModels}}}}
		opts := registry.ProbeOptions{VersionTimeout: 5 * time.Second, ModelTimeout: 5 * time.Second, Env: []string{"PATH=/usr/bin:/bin"},
			Getenv: func(string) string { return "" }, Home: dir,
			LookPath: func(name string) (string, error) {
				if p := filepath.Join(dir, filepath.Base(name)); filepath.Base(name) == "counted" {
					return p, nil
				}
				return "", errors.New("not found")
			}}
		process := func() *registry.Cache {
			c := registry.NewCache(10*time.Minute, clock)
			if _, err := c.Persist(ctx, chatstore.Capabilities{St: st}, func(err error) { t.Errorf("write through: %v", err) }); err != nil {
				t.Fatal(err)
			}
			return c
		}

		opts.Cache = process()
		r := registry.Probe(ctx, defs, opts)[0]
		if runs() != 2 || r.Cached || r.Version != "1.0.0" || !slices.Equal(r.Models, []string{"a/b", "c/d"}) {
			t.Fatalf("cold probe: %d runs, %+v", runs(), r)
		}
		// The next process reads the record: nothing runs.
		opts.Cache = process()
		r = registry.Probe(ctx, defs, opts)[0]
		if runs() != 2 || !r.Cached || r.Version != "1.0.0" || !slices.Equal(r.Models, []string{"a/b", "c/d"}) || r.ModelSource != registry.ModelsLive {
			t.Fatalf("warm probe ran the CLI: %d runs, %+v", runs(), r)
		}
		// A new build of the binary is probed again, and recorded.
		later := time.Now().Add(time.Hour)
		if err := os.Chtimes(bin, later, later); err != nil {
			t.Fatal(err)
		}
		opts.Cache = process()
		if r = registry.Probe(ctx, defs, opts)[0]; runs() != 4 || r.Cached {
			t.Fatalf("a changed binary hit the cache: %d runs", runs())
		}
		opts.Cache = process()
		if r = registry.Probe(ctx, defs, opts)[0]; runs() != 4 || !r.Cached {
			t.Fatalf("the changed binary's probe was not recorded: %d runs", runs())
		}
		// Past the TTL nothing is loaded and the CLI runs again.
		mu.Lock()
		now = now.Add(11 * time.Minute)
		mu.Unlock()
		c := registry.NewCache(10*time.Minute, clock)
		if n, err := c.Persist(ctx, chatstore.Capabilities{St: st}, nil); err != nil || n != 0 {
			t.Fatalf("expired records loaded: %d %v", n, err)
		}
		opts.Cache = c
		if r = registry.Probe(ctx, defs, opts)[0]; runs() != 6 || r.Cached {
			t.Fatalf("an expired record was used: %d runs", runs())
		}
	})
}
