-- 0013_schedules: prompts that run on a cron schedule, each firing in a new
-- thread of its channel (platform, workspace, channel: a Slack team and
-- channel id, or a Matrix server name and room id). cron is a five-field expression read in tz ('' is UTC); catchup
-- says what happens to occurrences missed while no replica ran: 'once' runs
-- the latest of them once at start, 'skip' runs none.
--
-- schedule_firings holds one row per occurrence a replica handled: the
-- insert is the claim, so of several replicas exactly one fires each
-- occurrence (the primary key decides). kind 'cron' is an occurrence of the
-- expression, 'manual' one asked for by `threadline schedule run` (state
-- 'requested' until a replica claims it). state: requested, firing (claimed,
-- the thread is being started), started (chat_id is the new thread's chat),
-- skipped (note says why, e.g. the previous firing still ran) or failed.
-- The rows go with their schedule.

-- +goose Up
CREATE TABLE schedules (
    name       TEXT PRIMARY KEY,
    cron       TEXT NOT NULL,
    tz         TEXT NOT NULL DEFAULT '',
    platform   TEXT NOT NULL,
    workspace  TEXT NOT NULL DEFAULT '',
    channel    TEXT NOT NULL,
    project    TEXT NOT NULL DEFAULT '',
    agent      TEXT NOT NULL DEFAULT '',
    prompt     TEXT NOT NULL,
    catchup    TEXT NOT NULL DEFAULT 'skip' CHECK (catchup IN ('once', 'skip')),
    created_by TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE schedule_firings (
    schedule   TEXT NOT NULL REFERENCES schedules (name) ON DELETE CASCADE,
    occurrence TIMESTAMPTZ NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('cron', 'manual')),
    state      TEXT NOT NULL CHECK (state IN ('requested', 'firing', 'started', 'skipped', 'failed')),
    owner      TEXT NOT NULL DEFAULT '',
    chat_id    TEXT NOT NULL DEFAULT '',
    note       TEXT NOT NULL DEFAULT '',
    by_user    TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (schedule, occurrence)
);
CREATE INDEX schedule_firings_requested ON schedule_firings (state) WHERE state = 'requested';

-- +goose Down
DROP TABLE schedule_firings;
DROP TABLE schedules;
