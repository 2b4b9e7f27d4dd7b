-- 0012_workspaces: every chat its own branch. A project may own a git
-- repository: repo is where its main clone comes from (a git URL or a host
-- path), base the branch chats start from and land on, setup the bootstrap
-- command run in each new worktree, forge and forge_url the forge its pull
-- requests go to ('', gitea, github, gitlab) and clone_dir where the main
-- clone lives on this host. A project's container becomes optional: '' runs
-- the project's chats on the host, so only non-empty containers are unique.
--
-- workspaces holds one row per chat's git worktree: the repository it
-- belongs to (a project's main clone, or a loose chat's channel repository
-- with project ''), its directory, branch and base, and its life: creating
-- (owner, a replica's host:pid, makes it; updated_at is the claim's
-- heartbeat), ready, failed (error says why) or removed (the row stays for
-- history). No two live (not removed) workspaces share a directory or a
-- branch of one repository. The row goes with its chat.

-- +goose Up
ALTER TABLE projects ADD COLUMN repo TEXT NOT NULL DEFAULT '';
ALTER TABLE projects ADD COLUMN base TEXT NOT NULL DEFAULT '';
ALTER TABLE projects ADD COLUMN setup TEXT NOT NULL DEFAULT '';
ALTER TABLE projects ADD COLUMN forge TEXT NOT NULL DEFAULT '';
ALTER TABLE projects ADD COLUMN forge_url TEXT NOT NULL DEFAULT '';
ALTER TABLE projects ADD COLUMN clone_dir TEXT NOT NULL DEFAULT '';
DROP INDEX projects_container;
CREATE UNIQUE INDEX projects_container ON projects (container) WHERE container <> '';

CREATE TABLE workspaces (
    chat_id      TEXT PRIMARY KEY REFERENCES chats (id) ON DELETE CASCADE,
    project      TEXT NOT NULL DEFAULT '',
    repo_dir     TEXT NOT NULL,
    path         TEXT NOT NULL,
    branch       TEXT NOT NULL,
    base         TEXT NOT NULL,
    forked_from  TEXT NOT NULL DEFAULT '',
    state        TEXT NOT NULL CHECK (state IN ('creating', 'ready', 'failed', 'removed')),
    owner        TEXT NOT NULL DEFAULT '',
    error        TEXT NOT NULL DEFAULT '',
    requested_by TEXT NOT NULL DEFAULT '',
    pr_number    INTEGER NOT NULL DEFAULT 0,
    pr_url       TEXT NOT NULL DEFAULT '',
    pushed_head  TEXT NOT NULL DEFAULT '',
    turn_tree    TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    used_at      TIMESTAMPTZ NOT NULL
);
-- Two live worktrees never share a directory or a branch of one repository.
CREATE UNIQUE INDEX workspaces_live_path ON workspaces (path) WHERE state <> 'removed';
CREATE UNIQUE INDEX workspaces_live_branch ON workspaces (repo_dir, branch) WHERE state <> 'removed';
CREATE INDEX workspaces_project_used ON workspaces (project, used_at);

-- +goose Down
-- Restoring the old index fails while two projects have no container.
DROP TABLE workspaces;
DROP INDEX projects_container;
CREATE UNIQUE INDEX projects_container ON projects (container);
ALTER TABLE projects DROP COLUMN clone_dir;
ALTER TABLE projects DROP COLUMN forge_url;
ALTER TABLE projects DROP COLUMN forge;
ALTER TABLE projects DROP COLUMN setup;
ALTER TABLE projects DROP COLUMN base;
ALTER TABLE projects DROP COLUMN repo;
