// The capability cache of an agent set: the probes of `agents`, `/agents`
// and `doctor`, persisted in the config's database (capability_cache) so
// that the next probe, in this process or another, reuses a CLI's version
// and live model list until registry.DefaultCacheTTL ends.

package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/store"
)

// capKeep is how long capability_cache rows are kept (far beyond the TTL).
const capKeep = 24 * time.Hour

// capCache is an in-memory registry.Cache that loads from and writes to the
// database around each probe. Probes are serialized (they are rare), and the
// database is open only while one runs.
type capCache struct {
	url string
	log *slog.Logger

	mu  sync.Mutex
	mem *registry.Cache
}

// newCapCache returns the cache over the database at url ("" keeps it in
// memory).
func newCapCache(url string, log *slog.Logger) *capCache {
	return &capCache{url: url, log: log, mem: registry.NewCache(registry.DefaultCacheTTL, nil)}
}

// probe runs registry.Probe with the cache: the database's fresh probes are
// loaded first and the new ones recorded. Without a usable database the
// probe still uses (and fills) the in-memory cache.
func (c *capCache) probe(ctx context.Context, defs []registry.Definition, opts registry.ProbeOptions) []registry.Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	opts.Cache = c.mem
	if c.url == "" {
		return registry.Probe(ctx, defs, opts)
	}
	st, err := store.OpenAndMigrate(ctx, c.url, slog.New(slog.DiscardHandler))
	if err != nil {
		c.log.WarnContext(ctx, "capability cache: open the database; probing without it", "err", err)
		return registry.Probe(ctx, defs, opts)
	}
	defer st.Close()
	if _, err := c.mem.Persist(ctx, chatstore.Capabilities{St: st}, func(err error) {
		c.log.WarnContext(ctx, "capability cache: record a probe", "err", err)
	}); err != nil {
		c.log.WarnContext(ctx, "capability cache: load", "err", err)
	}
	defer c.mem.Detach()
	// Records of old builds are never read again: keep a day.
	if _, err := st.PruneCapabilities(ctx, time.Now().Add(-capKeep)); err != nil {
		c.log.WarnContext(ctx, "capability cache: prune", "err", err)
	}
	return registry.Probe(ctx, defs, opts)
}

// versionCheck is prompt.VersionChecker over the app's agent table (reloads
// included): the registry's probe of one agent through the capability cache,
// so a run pays for `--version` only when no process probed the CLI within
// the TTL.
type versionCheck struct{ table func() *agentSet }

var _ prompt.VersionChecker = (*versionCheck)(nil)

// CheckVersion returns the agent CLI's version and the registry's warning
// when it is outside the verified versions.
func (v *versionCheck) CheckVersion(ctx context.Context, agentID string) (string, string) {
	if v.table == nil {
		return "", ""
	}
	s := v.table()
	d, ok := s.ByID[agentID]
	if !ok {
		return "", ""
	}
	r := s.caps.probe(ctx, []registry.Definition{d}, registry.ProbeOptions{VersionTimeout: 10 * time.Second, Logger: s.caps.log})[0]
	return r.Version, r.VersionWarning
}
