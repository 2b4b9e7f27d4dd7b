-- 0009_capabilities: what Threadline learns about agent CLIs, kept across
-- processes. capability_cache holds probe results (version, models) keyed by
-- the executable's identity (agent id, resolved path, modification time in
-- nanoseconds, version), each with the time it was probed: readers take only
-- rows younger than their TTL. runs.agent_model is the model the agent
-- reported for the run (session.updated), beside the requested runs.model.
-- chats.version_noticed is the agent@version whose "outside the verified
-- versions" notice the chat already got, so it is told once.

-- +goose Up
CREATE TABLE capability_cache (
    agent_id  TEXT NOT NULL,
    path      TEXT NOT NULL,
    mtime_ns  BIGINT NOT NULL,
    version   TEXT NOT NULL,
    entry     TEXT NOT NULL,
    probed_at TIMESTAMP NOT NULL,
    PRIMARY KEY (agent_id, path, mtime_ns, version)
);
CREATE INDEX capability_cache_probed ON capability_cache (probed_at);
ALTER TABLE runs ADD COLUMN agent_model TEXT NOT NULL DEFAULT '';
ALTER TABLE chats ADD COLUMN version_noticed TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE chats DROP COLUMN version_noticed;
ALTER TABLE runs DROP COLUMN agent_model;
DROP TABLE capability_cache;
