-- 0006_project_access: who may bind chats to a project. A row names a
-- channel (or Matrix room) whose chats may use the project, or a user who may
-- bind a chat to it; a project without rows of a kind is not restricted by
-- that kind. Admins are not stored here (access.admins in the config).

-- +goose Up
CREATE TABLE project_access (
    project TEXT NOT NULL REFERENCES projects (name) ON DELETE CASCADE,
    kind    TEXT NOT NULL CHECK (kind IN ('channel', 'user')),
    value   TEXT NOT NULL,
    PRIMARY KEY (project, kind, value)
);

-- +goose Down
DROP TABLE project_access;
