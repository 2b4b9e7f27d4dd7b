// Raw stdout chunks for CLIs whose output is not a line protocol, and files
// an isolated agent must read.

package procrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ChunkBytes is the largest stdout chunk Chunks hands to its handler.
const ChunkBytes = 32 << 10

// Chunks reads stdout until EOF and calls handle with every chunk read (at
// most ChunkBytes, as the pipe delivered it): no line splitting, blank lines
// and line endings kept. The slice is only valid during the call. Chunks
// returns nil at EOF and the read error otherwise. A relayed process reads
// its journal instead (byte for byte what the agent wrote, apart from the
// masked secrets); after a detach Chunks returns ErrDetached. A Process is
// read with Each or Chunks, not both.
func (p *Process) Chunks(handle func(chunk []byte)) error {
	return p.readStdout(func(r io.Reader) error { return readChunks(r, handle) })
}

// readChunks is Chunks over any reader.
func readChunks(r io.Reader, handle func([]byte)) error {
	buf := make([]byte, ChunkBytes)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			handle(buf[:n])
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, os.ErrClosed):
			return nil
		default:
			return err
		}
	}
}

// ShareWithAgent makes path (a private file the bot wrote for the agent,
// such as a prompt file) readable by the user that ctx's isolation starts
// host agents as (see WithIsolation): the file is handed to that user. It
// does nothing without isolation.
func ShareWithAgent(ctx context.Context, path string) error {
	iso, _ := ctx.Value(isolationKey{}).(*Isolation)
	if iso == nil {
		return nil
	}
	if err := os.Chown(path, int(iso.UID), int(iso.GID)); err != nil {
		return fmt.Errorf("hand %s to the agent user %s: %w", filepath.Base(path), iso.User, err)
	}
	return nil
}

// AgentEnviron is env as a host agent started with ctx gets it: adapted to
// the isolated user (its HOME, USER, LOGNAME) when ctx isolates host agents
// (see WithIsolation), env itself otherwise.
func AgentEnviron(ctx context.Context, env []string) []string {
	iso, _ := ctx.Value(isolationKey{}).(*Isolation)
	if iso == nil {
		return env
	}
	return iso.environ(env)
}
