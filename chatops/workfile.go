// Saving attached files into a chat's working directory, where its agent
// reads them.

package chatops

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// WorkFiles is an optional interface of the Agents given to New: it creates
// the files saved into a chat's working directory so that the chat's agent
// can read them. Where agents run as another user (isolation), the files
// must be that user's and the directory the bot writes into is the agent's;
// without it, files are created by this process with mode 0640.
type WorkFiles interface {
	// CreateWorkFile creates name (a single path element) in dir, the
	// chat's working directory, and returns it open for writing. It fails
	// with an error wrapping os.ErrExist when name is taken, and never
	// follows a symbolic link.
	CreateWorkFile(dir, name string) (io.WriteCloser, error)
}

// saveWorkFile writes f into dir under a safe, unused name and returns the
// name; the file is created by the Agents' WorkFiles when they have it.
func (t *Threads) saveWorkFile(dir string, f File) (string, error) {
	w, ok := t.bot.agents.(WorkFiles)
	if !ok {
		return saveFile(dir, f)
	}
	base := filepath.Base(filepath.Clean("/" + f.Name))
	base = strings.TrimLeft(base, ".")
	if base == "" || base == "/" {
		base = "attachment"
	}
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	name := base
	for i := 2; ; i++ {
		fh, err := w.CreateWorkFile(dir, name)
		if errors.Is(err, os.ErrExist) {
			if i > 10000 {
				return "", fmt.Errorf("no free name for %s in %s", base, dir)
			}
			name = fmt.Sprintf("%s-%d%s", stem, i, ext)
			continue
		}
		if err != nil {
			return "", err
		}
		_, werr := fh.Write(f.Data)
		if cerr := fh.Close(); werr == nil {
			werr = cerr
		}
		return name, werr
	}
}
