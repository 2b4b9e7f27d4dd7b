-- 0010_rate_limits: chat-platform rate budgets shared by the replicas over
-- this database (store/ratelimit.go). One row per (bucket, kind): bucket is
-- a platform workspace ("slack|T0123"), kind a kind of call ("post",
-- "update", ...) holding a token bucket (tokens as of refilled_at), and
-- granted, whether the last take got a token. The row of kind '' holds the
-- workspace's pause after a 429 (paused_until); on a kind's row, paused_until
-- is the pause its last take saw. Postgres only: SQLite is one process, whose
-- outbox buckets are the whole budget.

-- +goose Up
CREATE TABLE rate_limits (
    bucket       TEXT NOT NULL,
    kind         TEXT NOT NULL,
    tokens       DOUBLE PRECISION NOT NULL,
    refilled_at  TIMESTAMPTZ NOT NULL,
    paused_until TIMESTAMPTZ,
    granted      BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (bucket, kind)
);

-- +goose Down
DROP TABLE rate_limits;
