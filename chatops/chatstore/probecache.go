// The capability cache of an agent set: the probes of `agents`, `/agents`,
// `doctor` and the version check before a run, persisted in the database
// (capability_cache, through Capabilities) so that the next probe, in this
// process or another, reuses a CLI's version and live model list until
// registry.DefaultCacheTTL ends.

package chatstore

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/store"
)

// capKeep is how long capability_cache rows are kept (far beyond the TTL):
// records of old builds are never read again.
const capKeep = 24 * time.Hour

// ProbeCache is an in-memory registry.Cache that loads from and writes to
// the database around each probe. Probes are serialized (they are rare), and
// the database is open only while one runs.
type ProbeCache struct {
	url string
	log *slog.Logger

	mu  sync.Mutex
	mem *registry.Cache
	// synced is when the memory last loaded from the database: within
	// resync, probes use the memory alone (every run's version check
	// would otherwise open and migrate the database, one after another).
	synced time.Time
}

// resync is how long the in-memory cache is trusted without the database.
const resync = registry.DefaultCacheTTL / 2

// NewProbeCache returns the cache over the database at url ("" keeps it in
// memory); log gets what goes wrong with the database.
func NewProbeCache(url string, log *slog.Logger) *ProbeCache {
	return &ProbeCache{url: url, log: log, mem: registry.NewCache(registry.DefaultCacheTTL, nil)}
}

// Probe runs registry.Probe with the cache (agentset.Set.Prober): the
// database's fresh probes are loaded first, the new ones recorded and rows
// older than a day pruned. Without a usable database the probe still uses
// (and fills) the in-memory cache.
func (c *ProbeCache) Probe(ctx context.Context, defs []registry.Definition, opts registry.ProbeOptions) []registry.Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	opts.Cache = c.mem
	if c.url == "" || (!c.synced.IsZero() && time.Since(c.synced) < resync) {
		return registry.Probe(ctx, defs, opts)
	}
	st, err := store.OpenAndMigrate(ctx, c.url, slog.New(slog.DiscardHandler))
	if err != nil {
		c.log.WarnContext(ctx, "capability cache: open the database; probing without it", "err", err)
		return registry.Probe(ctx, defs, opts)
	}
	defer st.Close()
	if _, err := c.mem.Persist(ctx, Capabilities{St: st}, func(err error) {
		c.log.WarnContext(ctx, "capability cache: record a probe", "err", err)
	}); err != nil {
		c.log.WarnContext(ctx, "capability cache: load", "err", err)
	}
	defer c.mem.Detach()
	c.synced = time.Now()
	if _, err := st.PruneCapabilities(ctx, time.Now().Add(-capKeep)); err != nil {
		c.log.WarnContext(ctx, "capability cache: prune", "err", err)
	}
	return registry.Probe(ctx, defs, opts)
}
