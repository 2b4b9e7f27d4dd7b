// Persisted capability cache: a Cache loads the fresh probes other processes
// recorded and writes its own through, so `threadline agents`, `/agents` and
// `doctor` reuse a probe (version, live model list) until its TTL ends instead
// of running every CLI again.

package registry

import (
	"context"
	"time"
)

// persistTimeout bounds the write of one probe.
const persistTimeout = 5 * time.Second

// CacheStore persists a Cache's probes (the store's capability_cache table).
// Methods must be safe for concurrent use.
type CacheStore interface {
	// LoadCache returns the records probed at or after since.
	LoadCache(ctx context.Context, since time.Time) ([]CacheRecord, error)
	// SaveCache stores r, replacing the record of its key.
	SaveCache(ctx context.Context, r CacheRecord) error
}

// CacheRecord is one persisted probe: an executable build, what was learnt
// about it, and when.
type CacheRecord struct {
	Key   CacheKey
	Entry CacheEntry
	At    time.Time
}

// persistence is where a persisted Cache writes through.
type persistence struct {
	store CacheStore
	onErr func(error)
}

// save writes r through (a nil persistence does nothing); a failure is
// reported to onErr, and the entry stays cached in memory.
func (p *persistence) save(r CacheRecord) {
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), persistTimeout)
	defer cancel()
	if err := p.store.SaveCache(ctx, r); err != nil && p.onErr != nil {
		p.onErr(err)
	}
}

// Persist loads st's records younger than the cache's TTL into c and makes
// every later Put write through to st; a failed write is reported to onErr
// (nil: ignored). It returns the number of records loaded. When loading
// fails c is left as it was, not persisted.
func (c *Cache) Persist(ctx context.Context, st CacheStore, onErr func(error)) (int, error) {
	since := c.now().Add(-c.ttl)
	recs, err := st.LoadCache(ctx, since)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range recs {
		if r.At.Before(since) {
			continue
		}
		r.Entry.Models = append([]string(nil), r.Entry.Models...)
		if have, ok := c.entries[r.Key]; ok && !have.at.Before(r.At) {
			continue
		}
		c.put(r.Key, r.Entry, r.At)
		n++
	}
	c.persist = &persistence{store: st, onErr: onErr}
	return n, nil
}

// Detach stops writing through to the CacheStore given to Persist (before
// it closes); what is cached stays.
func (c *Cache) Detach() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.persist = nil
}
