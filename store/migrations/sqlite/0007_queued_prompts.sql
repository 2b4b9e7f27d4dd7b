-- 0007_queued_prompts: messages waiting in a thread for its chat's running
-- turn to end (the busy queue), with everything the message carried, so that
-- a restart forgets none: the thread, the platform message, the sender, the
-- text (attached files are saved in the chat's working directory and named in
-- it; their names are kept for display) and the images, one row each.
-- Rows run in pos order per thread and are deleted when they start or are
-- cleared.

-- +goose Up
CREATE TABLE queued_prompts (
    id         TEXT PRIMARY KEY,
    chat_id    TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    platform   TEXT NOT NULL,
    workspace  TEXT NOT NULL DEFAULT '',
    channel    TEXT NOT NULL DEFAULT '',
    thread     TEXT NOT NULL DEFAULT '',
    pos        BIGINT NOT NULL,
    message_id TEXT NOT NULL DEFAULT '',
    sender     TEXT NOT NULL DEFAULT '',
    text       TEXT NOT NULL DEFAULT '',
    files      TEXT NOT NULL DEFAULT '[]',
    sent_at    TIMESTAMP,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX queued_prompts_thread ON queued_prompts (platform, workspace, channel, thread, pos);
CREATE INDEX queued_prompts_chat ON queued_prompts (chat_id);

CREATE TABLE queued_images (
    prompt_id  TEXT NOT NULL REFERENCES queued_prompts (id) ON DELETE CASCADE,
    idx        INTEGER NOT NULL,
    media_type TEXT NOT NULL,
    name       TEXT NOT NULL DEFAULT '',
    data       BLOB NOT NULL,
    PRIMARY KEY (prompt_id, idx)
);

-- +goose Down
DROP TABLE queued_images;
DROP TABLE queued_prompts;
