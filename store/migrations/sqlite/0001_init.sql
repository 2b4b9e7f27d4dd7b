-- 0001_init: chats, runs (at most one running per chat) and the chat event log.

-- +goose Up
CREATE TABLE chats (
    id           TEXT PRIMARY KEY,
    title        TEXT NOT NULL DEFAULT '',
    agent        TEXT NOT NULL DEFAULT '',
    model        TEXT NOT NULL DEFAULT '',
    effort       TEXT NOT NULL DEFAULT '',
    mode         TEXT NOT NULL DEFAULT '',
    project      TEXT NOT NULL DEFAULT '',
    cwd          TEXT NOT NULL DEFAULT '',
    sessions     TEXT NOT NULL DEFAULT '{}',
    fork_pending BOOLEAN NOT NULL DEFAULT FALSE,
    created_at   TIMESTAMP NOT NULL,
    updated_at   TIMESTAMP NOT NULL
);

CREATE TABLE runs (
    id           TEXT PRIMARY KEY,
    chat_id      TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    agent        TEXT NOT NULL DEFAULT '',
    model        TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'interrupted')),
    owner        TEXT NOT NULL DEFAULT '',
    started_by   TEXT NOT NULL DEFAULT '',
    heartbeat_at TIMESTAMP,
    started_at   TIMESTAMP NOT NULL,
    ended_at     TIMESTAMP,
    usage        TEXT,
    error        TEXT NOT NULL DEFAULT ''
);

-- The database-side run lock: two replicas can never both run one chat.
CREATE UNIQUE INDEX runs_one_running_per_chat ON runs (chat_id) WHERE status = 'running';
CREATE INDEX runs_chat_started ON runs (chat_id, started_at);

-- The append-only event log. chat_id has no foreign key on purpose: the per-row
-- referential check cost about a third of the append throughput; deleting a chat
-- deletes its events explicitly.
CREATE TABLE chat_events (
    chat_id    TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    run_id     TEXT,
    type       TEXT NOT NULL,
    payload    TEXT,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (chat_id, seq)
);

-- +goose Down
DROP TABLE chat_events;
DROP TABLE runs;
DROP TABLE chats;
