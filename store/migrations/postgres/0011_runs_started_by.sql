-- 0011_runs_started_by: a person's runs by start time, for the threads a
-- person's home page lists (Store.HomeThreads: the Slack App Home).

-- +goose Up
CREATE INDEX runs_started_by ON runs (started_by, started_at);

-- +goose Down
DROP INDEX runs_started_by;
