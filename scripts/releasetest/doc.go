// Package releasetest tests scripts/release.sh: it builds the release of
// the work tree for linux/amd64 into a temporary directory and checks what
// a user downloads (go test ./scripts/releasetest; about 15 s with a warm
// build cache, the first run longer).
package releasetest
