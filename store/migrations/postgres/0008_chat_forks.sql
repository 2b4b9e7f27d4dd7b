-- 0008_chat_forks: where a forked chat came from. forked_from is the parent
-- chat and fork_seq the parent's last event seq when the fork was made: a run
-- of the fork without a native session of its own carries the parent's
-- visible history up to fork_seq, then the fork's own. fork_sessions are the
-- parent's native sessions at the fork, which an agent that forks natively
-- branches from on the fork's first run; sessions (the fork's own) start
-- empty, so the parent's sessions are never resumed, and so never changed, by
-- the fork. No foreign key: a deleted parent leaves the fork with its own
-- history only.

-- +goose Up
ALTER TABLE chats ADD COLUMN forked_from TEXT NOT NULL DEFAULT '';
ALTER TABLE chats ADD COLUMN fork_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE chats ADD COLUMN fork_sessions TEXT NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE chats DROP COLUMN fork_sessions;
ALTER TABLE chats DROP COLUMN fork_seq;
ALTER TABLE chats DROP COLUMN forked_from;
