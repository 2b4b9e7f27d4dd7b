// Capability discovery: a short app-server session of its own (model/list,
// collaborationMode/list), falling back to `debug models`, then to an
// Auto-only catalog; cached per executable, CODEX_HOME and credentials.

package codexharness

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/threadline-bot/threadline/providers/jsonrpc"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// Discovery defaults.
const (
	DefaultCatalogTTL       = 10 * time.Minute
	DefaultFallbackTTL      = time.Minute
	DefaultDiscoveryTimeout = 15 * time.Second
	// maxModelPages bounds model/list paging.
	maxModelPages = 20
)

// Catalog sources.
const (
	SourceAppServer   = "app-server"   // model/list + collaborationMode/list
	SourceDebugModels = "debug-models" // `<bin> debug models`
	SourceAuto        = "auto"         // nothing answered: let the agent choose
)

// Catalog is what discovery found.
type Catalog struct {
	Models []Model `json:"models"`
	Modes  []Mode  `json:"modes,omitempty"`
	// Source says where the catalog came from; Warning why a fallback was used.
	Source    string    `json:"source"`
	Warning   string    `json:"warning,omitempty"`
	FetchedAt time.Time `json:"fetched_at"`
}

// Model is one selectable model. The Auto entry of an Auto-only catalog has
// an empty ID: no model is passed and the agent picks its default.
type Model struct {
	ID              string          `json:"id"`
	DisplayName     string          `json:"display_name,omitempty"`
	Description     string          `json:"description,omitempty"`
	Efforts         []string        `json:"efforts,omitempty"`
	DefaultEffort   string          `json:"default_effort,omitempty"`
	ServiceTiers    []string        `json:"service_tiers,omitempty"`
	InputModalities []string        `json:"input_modalities,omitempty"`
	Hidden          bool            `json:"hidden,omitempty"`
	IsDefault       bool            `json:"is_default,omitempty"`
	Raw             json.RawMessage `json:"raw,omitempty"`
}

// Mode is a collaboration mode with its preset model and effort.
type Mode struct {
	Name            string  `json:"name"`
	Mode            string  `json:"mode"`
	Model           *string `json:"model"`
	ReasoningEffort *string `json:"reasoning_effort"`
}

// AutoCatalog is the catalog of last resort.
func AutoCatalog(warning string) Catalog {
	return Catalog{Models: []Model{{ID: "", DisplayName: "Auto", IsDefault: true}}, Source: SourceAuto, Warning: warning, FetchedAt: time.Now()}
}

// ModelIDs lists the catalog's visible model ids (none for Auto).
func (c Catalog) ModelIDs() []string {
	var out []string
	for _, m := range c.Models {
		if m.ID != "" && !m.Hidden {
			out = append(out, m.ID)
		}
	}
	return out
}

// Efforts is the union of the visible models' efforts, in first-seen order.
func (c Catalog) Efforts() []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range c.Models {
		if m.Hidden {
			continue
		}
		for _, e := range m.Efforts {
			if !seen[e] {
				seen[e] = true
				out = append(out, e)
			}
		}
	}
	return out
}

type catalogCache struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
}

type cacheEntry struct {
	catalog Catalog
	expires time.Time
}

// CacheKey identifies what a catalog depends on: the executable, CODEX_HOME,
// the mtime of CODEX_HOME/auth.json and a fingerprint (never the value) of
// the credential variables, so a login or key change refreshes it.
func (h *Harness) CacheKey(bin string, runEnv map[string]string) string {
	extra := h.extraEnv(runEnv)
	env := map[string]string{}
	for _, kv := range h.ChildEnv(runEnv) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	home := extra["CODEX_HOME"]
	if home == "" {
		home = env["CODEX_HOME"]
	}
	if home == "" && env["HOME"] != "" {
		home = filepath.Join(env["HOME"], ".codex")
	}
	mtime := "none"
	if fi, err := os.Stat(filepath.Join(home, "auth.json")); err == nil {
		mtime = fi.ModTime().UTC().Format(time.RFC3339Nano)
	}
	sum := sha256.New()
	for _, k := range h.opts.CredentialEnv {
		sum.Write([]byte(k + "=" + env[k] + "\x00"))
	}
	return strings.Join([]string{bin, home, mtime, hex.EncodeToString(sum.Sum(nil))[:16]}, "\x00")
}

// Discover returns the catalog for bin (default Options.Bin), from the cache
// while it is fresh. It falls back to `<bin> debug models`, then to
// AutoCatalog, and says why in Catalog.Warning. A missing executable returns
// the Auto catalog and an error wrapping agent.ErrNotInstalled.
func (h *Harness) Discover(ctx context.Context, bin string, runEnv map[string]string) (Catalog, error) {
	if bin == "" {
		bin = h.opts.Bin
	}
	key := h.CacheKey(bin, runEnv)
	now := time.Now()
	h.cache.mu.Lock()
	if e, ok := h.cache.entries[key]; ok && now.Before(e.expires) {
		h.cache.mu.Unlock()
		return e.catalog, nil
	}
	h.cache.mu.Unlock()

	cat, err := h.discoverAppServer(ctx, bin, runEnv)
	if err != nil {
		if errors.Is(err, agent.ErrNotInstalled) {
			return AutoCatalog(err.Error()), err
		}
		h.logger.Warn("model discovery through app-server failed", "err", err)
		var derr error
		cat, derr = h.discoverDebugModels(ctx, bin, runEnv)
		if derr != nil {
			h.logger.Warn("model discovery through debug models failed", "err", derr)
			cat = AutoCatalog(fmt.Sprintf("app-server: %v; debug models: %v", err, derr))
		} else {
			cat.Warning = fmt.Sprintf("app-server: %v", err)
		}
	}
	if ctx.Err() != nil {
		// A cancelled caller says nothing about the CLI: do not cache.
		return cat, nil
	}
	ttl := h.opts.CatalogTTL
	if cat.Source != SourceAppServer {
		ttl = h.opts.FallbackTTL
	}
	h.cache.mu.Lock()
	if h.cache.entries == nil {
		h.cache.entries = map[string]cacheEntry{}
	}
	h.cache.entries[key] = cacheEntry{catalog: cat, expires: time.Now().Add(ttl)}
	h.cache.mu.Unlock()
	return cat, nil
}

// rpcClient is a synchronous JSON-RPC client over one process, for discovery.
type rpcClient struct {
	proc   *procrun.Process
	lines  chan []byte
	nextID int64
}

func (c *rpcClient) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.nextID++
	id := c.nextID
	b, err := jsonrpc.EncodeRequest(id, method, params)
	if err != nil {
		return nil, err
	}
	if err := c.proc.WriteLine(b); err != nil {
		return nil, err
	}
	want := fmt.Sprint(id)
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %w", method, ctx.Err())
		case line, ok := <-c.lines:
			if !ok {
				return nil, fmt.Errorf("%s: app-server exited", method)
			}
			m, err := jsonrpc.Decode(line)
			if err != nil {
				continue
			}
			switch {
			case m.Kind == jsonrpc.KindRequest:
				// Discovery never asks anything of the user.
				_ = c.proc.WriteLine(jsonrpc.EncodeError(m.ID, jsonrpc.CodeMethodNotFound, "unsupported request: "+m.Method))
			case m.Kind == jsonrpc.KindResponse && string(m.ID) == want:
				if m.Error != nil {
					return nil, fmt.Errorf("%s: %w", method, m.Error)
				}
				return m.Result, nil
			}
		}
	}
}

func (h *Harness) discoverAppServer(ctx context.Context, bin string, runEnv map[string]string) (Catalog, error) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.DiscoveryTimeout)
	defer cancel()
	args := append(append([]string{}, h.opts.Args...), "app-server")
	proc, err := procrun.Start(ctx, h.logger, procrun.Spec{Bin: bin, Args: args, Env: h.ChildEnv(runEnv), Stdin: true})
	if err != nil {
		return Catalog{}, err
	}
	c := &rpcClient{proc: proc, lines: make(chan []byte, 16)}
	go func() {
		_ = proc.Each(func(line []byte) error {
			c.lines <- bytes.Clone(line)
			return nil
		})
		close(c.lines)
	}()
	defer func() {
		_ = proc.CloseStdin()
		stop := time.AfterFunc(h.opts.ExitTimeout, func() { _ = proc.Kill() })
		for range c.lines {
		}
		_ = proc.Wait()
		stop.Stop()
	}()
	if _, err := c.call(ctx, "initialize", map[string]any{
		"clientInfo":   map[string]string{"name": h.opts.ClientName, "title": "Threadline", "version": h.opts.ClientVersion},
		"capabilities": map[string]any{"experimentalApi": true},
	}); err != nil {
		return Catalog{}, err
	}
	_ = proc.WriteLine(jsonrpc.EncodeNotification("initialized"))
	cat := Catalog{Source: SourceAppServer, FetchedAt: time.Now()}
	params := map[string]any{}
	if h.opts.ModelProvider != "" {
		params["modelProvider"] = h.opts.ModelProvider
	}
	for page := 0; ; page++ {
		if page == maxModelPages {
			return Catalog{}, fmt.Errorf("model/list: more than %d pages", maxModelPages)
		}
		res, err := c.call(ctx, "model/list", params)
		if err != nil {
			return Catalog{}, err
		}
		var v struct {
			Data       []json.RawMessage `json:"data"`
			NextCursor *string           `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &v); err != nil {
			return Catalog{}, fmt.Errorf("model/list result: %w", err)
		}
		for _, raw := range v.Data {
			if m, ok := appServerModel(raw); ok {
				cat.Models = append(cat.Models, m)
			}
		}
		if v.NextCursor == nil || *v.NextCursor == "" {
			break
		}
		params["cursor"] = *v.NextCursor
	}
	if len(cat.Models) == 0 {
		return Catalog{}, errors.New("model/list returned no models")
	}
	if res, err := c.call(ctx, "collaborationMode/list", map[string]any{}); err != nil {
		h.logger.Info("collaborationMode/list failed", "err", err)
	} else {
		var v struct {
			Data []Mode `json:"data"`
		}
		if json.Unmarshal(res, &v) == nil {
			cat.Modes = v.Data
		}
	}
	return cat, nil
}

func appServerModel(raw json.RawMessage) (Model, bool) {
	var v struct {
		ID                        string `json:"id"`
		Model                     string `json:"model"`
		DisplayName               string `json:"displayName"`
		Description               string `json:"description"`
		Hidden                    bool   `json:"hidden"`
		IsDefault                 bool   `json:"isDefault"`
		DefaultReasoningEffort    string `json:"defaultReasoningEffort"`
		SupportedReasoningEfforts []struct {
			ReasoningEffort string `json:"reasoningEffort"`
		} `json:"supportedReasoningEfforts"`
		ServiceTiers []struct {
			ID string `json:"id"`
		} `json:"serviceTiers"`
		InputModalities []string `json:"inputModalities"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return Model{}, false
	}
	id := v.Model
	if id == "" {
		id = v.ID
	}
	if id == "" {
		return Model{}, false
	}
	m := Model{ID: id, DisplayName: v.DisplayName, Description: v.Description, DefaultEffort: v.DefaultReasoningEffort,
		Hidden: v.Hidden, IsDefault: v.IsDefault, InputModalities: v.InputModalities, Raw: agent.NativePayload(raw, MaxNativePayload)}
	for _, e := range v.SupportedReasoningEfforts {
		m.Efforts = append(m.Efforts, e.ReasoningEffort)
	}
	for _, t := range v.ServiceTiers {
		m.ServiceTiers = append(m.ServiceTiers, t.ID)
	}
	return m, true
}

func (h *Harness) discoverDebugModels(ctx context.Context, bin string, runEnv map[string]string) (Catalog, error) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.DiscoveryTimeout)
	defer cancel()
	args := append(append([]string{}, h.opts.Args...), "debug", "models")
	proc, err := procrun.Start(ctx, h.logger, procrun.Spec{Bin: bin, Args: args, Env: h.ChildEnv(runEnv)})
	if err != nil {
		return Catalog{}, err
	}
	stop := context.AfterFunc(ctx, func() { _ = proc.Kill() })
	defer stop()
	var out bytes.Buffer
	_ = proc.Each(func(line []byte) error {
		if out.Len() < 32<<20 {
			out.Write(line)
			out.WriteByte('\n')
		}
		return nil
	})
	if err := proc.Wait(); err != nil {
		if ctx.Err() != nil {
			return Catalog{}, fmt.Errorf("debug models: %w", ctx.Err())
		}
		return Catalog{}, fmt.Errorf("debug models: %w", err)
	}
	return ParseDebugModels(out.Bytes())
}

// ParseDebugModels parses `codex debug models` output (the raw catalog:
// {"models":[{"slug", "display_name", "supported_reasoning_levels", ...}]}).
func ParseDebugModels(b []byte) (Catalog, error) {
	var v struct {
		Models []struct {
			Slug                     string `json:"slug"`
			DisplayName              string `json:"display_name"`
			Description              string `json:"description"`
			DefaultReasoningLevel    string `json:"default_reasoning_level"`
			SupportedReasoningLevels []struct {
				Effort string `json:"effort"`
			} `json:"supported_reasoning_levels"`
			Visibility   string `json:"visibility"`
			ServiceTiers []struct {
				ID string `json:"id"`
			} `json:"service_tiers"`
		} `json:"models"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(b), &v); err != nil {
		return Catalog{}, fmt.Errorf("debug models output: %w", err)
	}
	cat := Catalog{Source: SourceDebugModels, FetchedAt: time.Now()}
	for _, m := range v.Models {
		if m.Slug == "" {
			continue
		}
		mm := Model{ID: m.Slug, DisplayName: m.DisplayName, Description: m.Description, DefaultEffort: m.DefaultReasoningLevel,
			Hidden: m.Visibility != "" && m.Visibility != "list"}
		for _, e := range m.SupportedReasoningLevels {
			mm.Efforts = append(mm.Efforts, e.Effort)
		}
		for _, t := range m.ServiceTiers {
			mm.ServiceTiers = append(mm.ServiceTiers, t.ID)
		}
		cat.Models = append(cat.Models, mm)
	}
	if len(cat.Models) == 0 {
		return Catalog{}, errors.New("debug models listed no models")
	}
	return cat, nil
}
