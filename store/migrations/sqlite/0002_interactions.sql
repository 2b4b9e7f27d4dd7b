-- 0002_interactions: the durable ledger of requests from agents to their users
-- (approvals, questions, elicitations). Answer values are never stored.

-- +goose Up
CREATE TABLE interactions (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    id          TEXT NOT NULL,
    chat_id     TEXT NOT NULL,
    native_id   TEXT NOT NULL,
    kind        TEXT NOT NULL,
    payload     TEXT,
    status      TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'approved_for_session', 'declined',
                    'cancelled', 'answered', 'turn_ended', 'timed_out', 'expired')),
    decision    TEXT NOT NULL DEFAULT '',
    resolved_by TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMP NOT NULL,
    resolved_at TIMESTAMP,
    PRIMARY KEY (run_id, id)
);

CREATE INDEX interactions_chat ON interactions (chat_id, created_at);
CREATE INDEX interactions_pending ON interactions (status) WHERE status = 'pending';

-- +goose Down
DROP TABLE interactions;
