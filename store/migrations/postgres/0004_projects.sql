-- 0004_projects: projects (a name bound to an LXD container, with the image it
-- is created from and the host directory mounted at /workspace) and their
-- secrets, which reach only that container's agent runs as environment
-- variables. Secret values are stored as given; they are never read back by
-- the command line, logged or put into chat events.

-- +goose Up
CREATE TABLE projects (
    name       TEXT PRIMARY KEY,
    container  TEXT NOT NULL,
    image      TEXT NOT NULL DEFAULT '',
    workspace  TEXT NOT NULL DEFAULT '',
    status     TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
-- One container serves one project.
CREATE UNIQUE INDEX projects_container ON projects (container);

CREATE TABLE project_secrets (
    project    TEXT NOT NULL REFERENCES projects (name) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (project, name)
);

-- +goose Down
DROP TABLE project_secrets;
DROP TABLE projects;
