// Package giteatest runs a real forge, Gitea 1.27.3, for tests: one per call
// to Start, with a fresh work path, SQLite, bound to 127.0.0.1 only, offline
// (no SSH, no mail, no update checks), an admin user with an API token, and
// stopped and removed in t.Cleanup.
//
// The binary comes from scripts/install-gitea.sh, which builds it once into
// ${THREADLINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/threadline-ci}/gitea-1.27.3
// (outside the repository, so CI reruns keep it), or from $GITEA_BIN (the
// binary's path; the options/ and templates/ directories of the same version
// must sit beside it, since the build has no bindata). When it is missing the
// test skips with a message naming the script, unless THREADLINE_E2E=1, where
// it fails. See /work/shared/reference/forge/GITEA.md for the facts the setup
// follows.
//
// Gitea refuses to run as root, and the tests run as root: then the server
// runs as the user nobody (RUN_USER in app.ini), in a work path owned by it
// under a directory nobody can traverse; the binary, options/ and templates/
// are hard-linked (or copied) beside the work path, since the cache under
// $HOME is out of nobody's reach. As another user the server runs as that
// user.
package giteatest
