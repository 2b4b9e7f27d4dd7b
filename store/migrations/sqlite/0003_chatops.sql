-- 0003_chatops: chat-platform state of chatops: thread bindings, inbound event
-- dedup and the platform messages each run was rendered into.

-- +goose Up
CREATE TABLE thread_bindings (
    platform   TEXT NOT NULL,
    workspace  TEXT NOT NULL DEFAULT '',
    channel    TEXT NOT NULL DEFAULT '',
    thread     TEXT NOT NULL DEFAULT '',
    chat_id    TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    created_by TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (platform, workspace, channel, thread)
);
CREATE INDEX thread_bindings_chat ON thread_bindings (chat_id);

-- Inbound platform event ids (Slack event_id, retries included) processed once.
CREATE TABLE seen_events (
    platform TEXT NOT NULL,
    event_id TEXT NOT NULL,
    seen_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (platform, event_id)
);
CREATE INDEX seen_events_seen_at ON seen_events (seen_at);

-- One row per platform message a run was rendered into (answer parts, cards,
-- uploads): its id, the last chat seq it shows and a hash of what it shows, so a
-- restarted renderer edits the same message and posts nothing twice.
CREATE TABLE rendered_messages (
    run_id     TEXT NOT NULL,
    slot       TEXT NOT NULL,
    chat_id    TEXT NOT NULL,
    platform   TEXT NOT NULL,
    workspace  TEXT NOT NULL DEFAULT '',
    channel    TEXT NOT NULL DEFAULT '',
    thread     TEXT NOT NULL DEFAULT '',
    message_id TEXT NOT NULL DEFAULT '',
    first_seq  INTEGER NOT NULL DEFAULT 0,
    last_seq   INTEGER NOT NULL DEFAULT 0,
    hash       TEXT NOT NULL DEFAULT '',
    final      BOOLEAN NOT NULL DEFAULT FALSE,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (run_id, slot)
);
CREATE INDEX rendered_messages_open ON rendered_messages (platform, final);
CREATE INDEX rendered_messages_chat ON rendered_messages (chat_id);

-- +goose Down
DROP TABLE rendered_messages;
DROP TABLE seen_events;
DROP TABLE thread_bindings;
