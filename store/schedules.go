// schedules.go: the schedules and schedule_firings tables (migration 0013):
// prompts run on a cron schedule, and the claim of each occurrence that lets
// exactly one replica fire it.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Catch-up rules of a schedule: what happens to occurrences missed while no
// replica ran.
const (
	// CatchupSkip runs none of them.
	CatchupSkip = "skip"
	// CatchupOnce runs the latest of them once, at start.
	CatchupOnce = "once"
)

// Kinds of a schedule firing.
const (
	// FiringCron is an occurrence of the schedule's expression.
	FiringCron = "cron"
	// FiringManual is a run asked for by hand (RequestScheduleRun).
	FiringManual = "manual"
)

// States of a schedule firing.
const (
	// FiringRequested: a manual run no replica has claimed yet.
	FiringRequested = "requested"
	// FiringFiring: claimed; its owner is starting the thread.
	FiringFiring = "firing"
	// FiringStarted: the thread is started; ChatID is its chat.
	FiringStarted = "started"
	// FiringSkipped: not run; Note says why.
	FiringSkipped = "skipped"
	// FiringFailed: the thread could not be started; Note says why.
	FiringFailed = "failed"
)

// Schedule is a prompt run on a cron schedule, each time in a new thread of
// its channel.
type Schedule struct {
	Name string
	// Cron is a five-field cron expression read in TZ ("" is UTC).
	Cron string
	TZ   string
	// Platform, Workspace and Channel are where its threads start: a Slack
	// team and channel id, or a Matrix server name and room id.
	Platform  string
	Workspace string
	Channel   string
	// Project and Agent are the new chats' ("": the channel's defaults).
	Project string
	Agent   string
	Prompt  string
	// Catchup is CatchupSkip or CatchupOnce.
	Catchup   string
	CreatedBy string
	CreatedAt time.Time
}

// ScheduleFiring is one occurrence of a schedule a replica handled, or a
// manual run asked for.
type ScheduleFiring struct {
	Schedule   string
	Occurrence time.Time
	// Kind is FiringCron or FiringManual; State one of the Firing states.
	Kind  string
	State string
	// Owner is the replica (host:pid) that claimed it.
	Owner string
	// ChatID is the started thread's chat.
	ChatID string
	// Note says why it was skipped or failed.
	Note string
	// By is who asked for a manual run.
	By        string
	CreatedAt time.Time
	UpdatedAt time.Time
}

type scheduleRow struct {
	Name      string    `db:"name"`
	Cron      string    `db:"cron"`
	TZ        string    `db:"tz"`
	Platform  string    `db:"platform"`
	Workspace string    `db:"workspace"`
	Channel   string    `db:"channel"`
	Project   string    `db:"project"`
	Agent     string    `db:"agent"`
	Prompt    string    `db:"prompt"`
	Catchup   string    `db:"catchup"`
	CreatedBy string    `db:"created_by"`
	CreatedAt time.Time `db:"created_at"`
}

func (r scheduleRow) schedule() Schedule {
	return Schedule{Name: r.Name, Cron: r.Cron, TZ: r.TZ, Platform: r.Platform, Workspace: r.Workspace, Channel: r.Channel, Project: r.Project,
		Agent: r.Agent, Prompt: r.Prompt, Catchup: r.Catchup, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC()}
}

type firingRow struct {
	Schedule   string    `db:"schedule"`
	Occurrence time.Time `db:"occurrence"`
	Kind       string    `db:"kind"`
	State      string    `db:"state"`
	Owner      string    `db:"owner"`
	ChatID     string    `db:"chat_id"`
	Note       string    `db:"note"`
	By         string    `db:"by_user"`
	CreatedAt  time.Time `db:"created_at"`
	UpdatedAt  time.Time `db:"updated_at"`
}

func (r firingRow) firing() ScheduleFiring {
	return ScheduleFiring{Schedule: r.Schedule, Occurrence: r.Occurrence.UTC(), Kind: r.Kind, State: r.State, Owner: r.Owner,
		ChatID: r.ChatID, Note: r.Note, By: r.By, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

const (
	scheduleColumns = `name, cron, tz, platform, workspace, channel, project, agent, prompt, catchup, created_by, created_at`
	firingColumns   = `schedule, occurrence, kind, state, owner, chat_id, note, by_user, created_at, updated_at`

	queryAddSchedule = `INSERT INTO schedules (` + scheduleColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`
	queryGetSchedule    = `SELECT ` + scheduleColumns + ` FROM schedules WHERE name = $1`
	queryListSchedules  = `SELECT ` + scheduleColumns + ` FROM schedules ORDER BY name`
	queryRemoveSchedule = `DELETE FROM schedules WHERE name = $1`

	queryClaimFiring = `INSERT INTO schedule_firings (schedule, occurrence, kind, state, owner, created_at, updated_at)
VALUES ($1, $2, 'cron', 'firing', $3, $4, $4) ON CONFLICT (schedule, occurrence) DO NOTHING`
	queryRequestRun = `INSERT INTO schedule_firings (schedule, occurrence, kind, state, by_user, created_at, updated_at)
VALUES ($1, $2, 'manual', 'requested', $3, $4, $4)`
	queryRequestedRuns = `SELECT ` + firingColumns + ` FROM schedule_firings WHERE state = 'requested' ORDER BY occurrence`
	queryClaimRun      = `UPDATE schedule_firings SET state = 'firing', owner = $3, updated_at = $4
WHERE schedule = $1 AND occurrence = $2 AND state = 'requested'`
	queryFinishFiring = `UPDATE schedule_firings SET state = $3, chat_id = $4, note = $5, updated_at = $6
WHERE schedule = $1 AND occurrence = $2`
	queryLastOccurrence = `SELECT occurrence FROM schedule_firings WHERE schedule = $1 AND kind = 'cron'
ORDER BY occurrence DESC LIMIT 1`
	queryFirings = `SELECT ` + firingColumns + ` FROM schedule_firings WHERE schedule = $1
ORDER BY occurrence DESC LIMIT $2`
	queryChatRunning      = `SELECT COUNT(*) FROM runs WHERE chat_id = $1 AND status = 'running'`
	queryChannelWorkspace = `SELECT workspace FROM thread_bindings WHERE platform = $1 AND channel = $2
ORDER BY created_at DESC LIMIT 1`
)

// AddSchedule stores a new schedule; CreatedAt is set when zero. A name in
// use is ErrConflict. The expression is not checked here.
func (s *Store) AddSchedule(ctx context.Context, sc Schedule) error {
	if sc.Name == "" || sc.Cron == "" || sc.Platform == "" || sc.Channel == "" {
		return fmt.Errorf("store: add schedule %q: name, cron, platform and channel are required", sc.Name)
	}
	if sc.Catchup == "" {
		sc.Catchup = CatchupSkip
	}
	if sc.Catchup != CatchupSkip && sc.Catchup != CatchupOnce {
		return fmt.Errorf("store: add schedule %s: catchup %q is neither %s nor %s", sc.Name, sc.Catchup, CatchupOnce, CatchupSkip)
	}
	if sc.CreatedAt.IsZero() {
		sc.CreatedAt = now()
	}
	_, err := s.db.ExecContext(ctx, queryAddSchedule, sc.Name, sc.Cron, sc.TZ, sc.Platform, sc.Workspace, sc.Channel, sc.Project, sc.Agent,
		sc.Prompt, sc.Catchup, sc.CreatedBy, sc.CreatedAt.UTC())
	if err != nil {
		return fmt.Errorf("store: add schedule %s: %w", sc.Name, translate(err))
	}
	return nil
}

// Schedule returns the named schedule, or ErrNotFound.
func (s *Store) Schedule(ctx context.Context, name string) (Schedule, error) {
	var r scheduleRow
	if err := s.db.GetContext(ctx, &r, queryGetSchedule, name); err != nil {
		return Schedule{}, fmt.Errorf("store: schedule %s: %w", name, translate(err))
	}
	return r.schedule(), nil
}

// Schedules returns every schedule, by name.
func (s *Store) Schedules(ctx context.Context) ([]Schedule, error) {
	var rows []scheduleRow
	if err := s.db.SelectContext(ctx, &rows, queryListSchedules); err != nil {
		return nil, fmt.Errorf("store: list schedules: %w", translate(err))
	}
	out := make([]Schedule, len(rows))
	for i, r := range rows {
		out[i] = r.schedule()
	}
	return out, nil
}

// RemoveSchedule deletes the named schedule and its firings; a missing one is
// ErrNotFound.
func (s *Store) RemoveSchedule(ctx context.Context, name string) error {
	res, err := s.db.ExecContext(ctx, queryRemoveSchedule, name)
	if err != nil {
		return fmt.Errorf("store: remove schedule %s: %w", name, translate(err))
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("store: remove schedule %s: %w", name, ErrNotFound)
	}
	return nil
}

// ClaimScheduleFiring claims the schedule's cron occurrence for owner: true
// when the caller must fire it, false when another claim (maybe another
// replica's) came first. A schedule that does not exist is ErrNotFound.
func (s *Store) ClaimScheduleFiring(ctx context.Context, name string, occurrence time.Time, owner string) (bool, error) {
	res, err := s.db.ExecContext(ctx, queryClaimFiring, name, occurrence.UTC(), owner, now())
	if isFKViolation(err) {
		return false, fmt.Errorf("store: claim schedule %s at %s: %w", name, occurrence.UTC().Format(time.RFC3339), ErrNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("store: claim schedule %s at %s: %w", name, occurrence.UTC().Format(time.RFC3339), translate(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: claim schedule %s: %w", name, err)
	}
	return n == 1, nil
}

// RequestScheduleRun asks for a manual run of the schedule at the time at
// (kept to the microsecond); a replica's scheduler claims it with
// ClaimScheduleRun. A missing schedule is ErrNotFound; a request at the same
// instant as another firing is ErrConflict.
func (s *Store) RequestScheduleRun(ctx context.Context, name string, at time.Time, by string) error {
	_, err := s.db.ExecContext(ctx, queryRequestRun, name, at.UTC().Truncate(time.Microsecond), by, now())
	if isFKViolation(err) {
		return fmt.Errorf("store: request run of schedule %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: request run of schedule %s: %w", name, translate(err))
	}
	return nil
}

// RequestedScheduleRuns returns the manual runs no replica has claimed yet,
// oldest first.
func (s *Store) RequestedScheduleRuns(ctx context.Context) ([]ScheduleFiring, error) {
	var rows []firingRow
	if err := s.db.SelectContext(ctx, &rows, queryRequestedRuns); err != nil {
		return nil, fmt.Errorf("store: requested schedule runs: %w", translate(err))
	}
	return firings(rows), nil
}

// ClaimScheduleRun claims a requested manual run for owner: true for exactly
// one of any number of concurrent claimants.
func (s *Store) ClaimScheduleRun(ctx context.Context, name string, occurrence time.Time, owner string) (bool, error) {
	res, err := s.db.ExecContext(ctx, queryClaimRun, name, occurrence.UTC(), owner, now())
	if err != nil {
		return false, fmt.Errorf("store: claim run of schedule %s: %w", name, translate(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: claim run of schedule %s: %w", name, err)
	}
	return n == 1, nil
}

// FinishScheduleFiring records how a claimed firing ended: state is
// FiringStarted (chatID its thread's chat), FiringSkipped or FiringFailed
// (note says why). A firing that does not exist is ErrNotFound.
func (s *Store) FinishScheduleFiring(ctx context.Context, name string, occurrence time.Time, state, chatID, note string) error {
	res, err := s.db.ExecContext(ctx, queryFinishFiring, name, occurrence.UTC(), state, chatID, note, now())
	if err != nil {
		return fmt.Errorf("store: finish firing of schedule %s: %w", name, translate(err))
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("store: finish firing of schedule %s at %s: %w", name, occurrence.UTC().Format(time.RFC3339), ErrNotFound)
	}
	return nil
}

// LastScheduleOccurrence returns the latest cron occurrence of the schedule
// any replica claimed; zero when none.
func (s *Store) LastScheduleOccurrence(ctx context.Context, name string) (time.Time, error) {
	var t time.Time
	err := s.db.GetContext(ctx, &t, queryLastOccurrence, name)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("store: last occurrence of schedule %s: %w", name, translate(err))
	}
	return t.UTC(), nil
}

// ScheduleFirings returns the schedule's latest firings, newest first, at
// most limit.
func (s *Store) ScheduleFirings(ctx context.Context, name string, limit int) ([]ScheduleFiring, error) {
	var rows []firingRow
	if err := s.db.SelectContext(ctx, &rows, queryFirings, name, limit); err != nil {
		return nil, fmt.Errorf("store: firings of schedule %s: %w", name, translate(err))
	}
	return firings(rows), nil
}

// ChatRunning reports whether the chat has a running run (on any replica).
func (s *Store) ChatRunning(ctx context.Context, chatID string) (bool, error) {
	var n int
	if err := s.db.GetContext(ctx, &n, queryChatRunning, chatID); err != nil {
		return false, fmt.Errorf("store: running runs of chat %s: %w", chatID, translate(err))
	}
	return n > 0, nil
}

// ChannelWorkspace returns the workspace (Slack team, Matrix server) of the
// channel's latest bound thread; "" when it has none.
func (s *Store) ChannelWorkspace(ctx context.Context, platform, channel string) (string, error) {
	var w string
	err := s.db.GetContext(ctx, &w, queryChannelWorkspace, platform, channel)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store: workspace of channel %s: %w", channel, translate(err))
	}
	return w, nil
}

func firings(rows []firingRow) []ScheduleFiring {
	out := make([]ScheduleFiring, len(rows))
	for i, r := range rows {
		out[i] = r.firing()
	}
	return out
}
