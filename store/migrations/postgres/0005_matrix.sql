-- 0005_matrix: the Matrix bot's account: its login (device id, access token,
-- pickle key of the end-to-end encryption keys, as JSON owned by bot/matrix) and
-- its /sync position, so that a restart keeps the device and resumes the sync.
-- The encryption keys themselves live in mautrix's own crypto_* and mx_* tables.

-- +goose Up
CREATE TABLE matrix_accounts (
    user_id    TEXT PRIMARY KEY,
    login      TEXT NOT NULL DEFAULT '',
    next_batch TEXT NOT NULL DEFAULT '',
    filter_id  TEXT NOT NULL DEFAULT '',
    updated_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE matrix_accounts;
