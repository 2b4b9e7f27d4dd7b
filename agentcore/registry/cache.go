// Capability cache: probe results keyed by executable identity, with a TTL.

package registry

import (
	"sync"
	"time"
)

// DefaultCacheTTL is how long a cached probe result is reused.
const DefaultCacheTTL = 10 * time.Minute

// CacheKey identifies one executable build: a changed binary (new mtime), a
// changed version or another path misses.
type CacheKey struct {
	ID      string
	Path    string
	Version string
	ModTime time.Time
}

// CacheEntry is what a probe learned that is worth reusing.
type CacheEntry struct {
	Version     string
	Models      []string
	ModelSource ModelSource
	// ModelProblem is the live-listing failure behind a fallback list.
	ModelProblem string
}

// Cache is an in-memory capability cache, safe for concurrent use. The zero
// value is not ready; use NewCache.
type Cache struct {
	ttl time.Duration
	now func() time.Time

	mu       sync.Mutex
	entries  map[CacheKey]cached
	versions map[CacheKey]cachedVersion // Version field empty
	persist  *persistence               // set by Persist (cachestore.go)
}

type cached struct {
	entry CacheEntry
	at    time.Time
}

type cachedVersion struct {
	version string
	at      time.Time
}

// NewCache returns a cache whose entries live ttl (zero: DefaultCacheTTL).
// now is the clock (nil: time.Now).
func NewCache(ttl time.Duration, now func() time.Time) *Cache {
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	if now == nil {
		now = time.Now
	}
	return &Cache{ttl: ttl, now: now, entries: map[CacheKey]cached{}, versions: map[CacheKey]cachedVersion{}}
}

// Get returns the fresh entry for key.
func (c *Cache) Get(key CacheKey) (CacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || c.now().Sub(e.at) >= c.ttl {
		delete(c.entries, key)
		return CacheEntry{}, false
	}
	e.entry.Models = append([]string(nil), e.entry.Models...)
	return e.entry, true
}

// Put stores entry under key (and remembers the version for Version); a
// persisted cache (Persist) writes it through.
func (c *Cache) Put(key CacheKey, entry CacheEntry) {
	c.mu.Lock()
	entry.Models = append([]string(nil), entry.Models...)
	now := c.now()
	c.put(key, entry, now)
	p := c.persist
	c.mu.Unlock()
	p.save(CacheRecord{Key: key, Entry: entry, At: now}) // outside the lock: a database write
}

// put stores entry under key, probed at (caller holds c.mu).
func (c *Cache) put(key CacheKey, entry CacheEntry, at time.Time) {
	c.entries[key] = cached{entry: entry, at: at}
	vk := key
	vk.Version = ""
	if v, ok := c.versions[vk]; !ok || !v.at.After(at) {
		c.versions[vk] = cachedVersion{version: key.Version, at: at}
	}
}

// Version returns the fresh version recorded for (id, path, mtime), so a
// probe of an unchanged binary can skip running it.
func (c *Cache) Version(id, path string, mtime time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := CacheKey{ID: id, Path: path, ModTime: mtime}
	v, ok := c.versions[k]
	if !ok || c.now().Sub(v.at) >= c.ttl {
		delete(c.versions, k)
		return "", false
	}
	return v.version, true
}

// Len returns the number of stored entries (fresh or not yet evicted).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
