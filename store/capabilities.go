// capabilities.go: what is learnt about agent CLIs across processes
// (migration 0009): the capability cache, the model an agent reported for a
// run, and the version notice a chat already got.
package store

import (
	"context"
	"fmt"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

const (
	capabilityColumns = `agent_id, path, mtime_ns, version, entry, probed_at`

	queryUpsertCapability = `INSERT INTO capability_cache (` + capabilityColumns + `) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (agent_id, path, mtime_ns, version) DO UPDATE SET entry = excluded.entry, probed_at = excluded.probed_at`
	queryCapabilities      = `SELECT ` + capabilityColumns + ` FROM capability_cache WHERE probed_at >= $1 ORDER BY agent_id, probed_at`
	queryPruneCapabilities = `DELETE FROM capability_cache WHERE probed_at < $1`

	querySetAgentModel  = `UPDATE runs SET agent_model = $2 WHERE id = $1`
	queryAgentModel     = `SELECT agent_model FROM runs WHERE id = $1`
	queryLastAgentModel = `SELECT agent_model FROM runs WHERE chat_id = $1 AND agent_model <> '' ORDER BY started_at DESC, id DESC LIMIT 1`
	queryNoticeVersion  = `UPDATE chats SET version_noticed = $2 WHERE id = $1 AND version_noticed <> $2`
)

// Capability is a row of capability_cache: one probe of one executable
// build. Entry is the prober's own encoding (the store does not read it).
type Capability struct {
	AgentID  string
	Path     string
	ModTime  time.Time
	Version  string
	Entry    []byte
	ProbedAt time.Time
}

type capabilityRow struct {
	AgentID  string    `db:"agent_id"`
	Path     string    `db:"path"`
	MtimeNS  int64     `db:"mtime_ns"`
	Version  string    `db:"version"`
	Entry    string    `db:"entry"`
	ProbedAt time.Time `db:"probed_at"`
}

// mtimeNS is a modification time as stored: nanoseconds since the epoch, 0
// for the zero time (no database keeps nanoseconds in its timestamps).
func mtimeNS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// SaveCapability inserts or replaces the row of (AgentID, Path, ModTime,
// Version).
func (s *Store) SaveCapability(ctx context.Context, c Capability) error {
	at := c.ProbedAt.UTC()
	if c.ProbedAt.IsZero() {
		at = now()
	}
	if _, err := s.db.ExecContext(ctx, queryUpsertCapability, c.AgentID, c.Path, mtimeNS(c.ModTime), c.Version, string(c.Entry), at); err != nil {
		return fmt.Errorf("store: save capability of %s: %w", c.AgentID, translate(err))
	}
	return nil
}

// Capabilities returns the rows probed at or after since, oldest first per
// agent.
func (s *Store) Capabilities(ctx context.Context, since time.Time) ([]Capability, error) {
	var rows []capabilityRow
	if err := s.db.SelectContext(ctx, &rows, queryCapabilities, since.UTC()); err != nil {
		return nil, fmt.Errorf("store: capabilities: %w", translate(err))
	}
	out := make([]Capability, len(rows))
	for i, r := range rows {
		out[i] = Capability{AgentID: r.AgentID, Path: r.Path, Version: r.Version, Entry: []byte(r.Entry), ProbedAt: r.ProbedAt.UTC()}
		if r.MtimeNS != 0 {
			out[i].ModTime = time.Unix(0, r.MtimeNS)
		}
	}
	return out, nil
}

// PruneCapabilities deletes the rows probed before t.
func (s *Store) PruneCapabilities(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, queryPruneCapabilities, before.UTC())
	if err != nil {
		return 0, fmt.Errorf("store: prune capabilities: %w", translate(err))
	}
	return res.RowsAffected()
}

// SetAgentModel records the model the agent reported for the run. A missing
// run is ErrNotFound.
func (s *Store) SetAgentModel(ctx context.Context, runID agent.RunID, model string) error {
	res, err := s.db.ExecContext(ctx, querySetAgentModel, string(runID), model)
	if err != nil {
		return fmt.Errorf("store: agent model of run %s: %w", runID, translate(err))
	}
	return expectOne(res, "agent model of run "+string(runID))
}

// AgentModel returns the model the agent reported for the run ("" when it
// reported none).
func (s *Store) AgentModel(ctx context.Context, runID string) (string, error) {
	var m string
	if err := s.db.GetContext(ctx, &m, queryAgentModel, runID); err != nil {
		return "", fmt.Errorf("store: agent model of run %s: %w", runID, translate(err))
	}
	return m, nil
}

// LastAgentModel returns the model the agent reported in the chat's latest
// run that reported one ("" when none did).
func (s *Store) LastAgentModel(ctx context.Context, chatID string) (string, error) {
	var ms []string
	if err := s.db.SelectContext(ctx, &ms, queryLastAgentModel, chatID); err != nil {
		return "", fmt.Errorf("store: last agent model of chat %s: %w", chatID, translate(err))
	}
	if len(ms) == 0 {
		return "", nil
	}
	return ms[0], nil
}

// NoticeVersion records that the chat was told about what (an agent@version
// outside its verified versions) and reports whether this is the first time:
// false when the chat was told about what already (or does not exist).
func (s *Store) NoticeVersion(ctx context.Context, chatID agent.ChatID, what string) (bool, error) {
	res, err := s.db.ExecContext(ctx, queryNoticeVersion, string(chatID), what)
	if err != nil {
		return false, fmt.Errorf("store: version notice of chat %s: %w", chatID, translate(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: version notice of chat %s: %w", chatID, err)
	}
	return n == 1, nil
}
