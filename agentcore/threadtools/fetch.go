package threadtools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/shipgate"
)

// maxNameTries bounds the " (n)" names fetchFile tries for a name taken.
const maxNameTries = 100

// fetchFile copies the thread's attachment called name into the top of the
// workspace under a fresh name.
func (s *Server) fetchFile(ctx context.Context, name string) (Fetched, error) {
	if name == "" {
		return Fetched{}, errors.New("no name given")
	}
	rc, tf, err := s.cfg.Thread.Fetch(ctx, name)
	if err != nil {
		s.log.Warn("thread tools: fetch_thread_file", logkey.File, CleanName(name), logkey.Err, err)
		return Fetched{}, fmt.Errorf("cannot fetch %s: %w", name, err)
	}
	defer rc.Close()
	if tf.Name == "" {
		tf.Name = name
	}
	max := s.cfg.MaxBytes
	if tf.Size > max {
		return Fetched{}, fmt.Errorf("%s is %s, over the %s limit", name, shipgate.HumanSize(tf.Size), shipgate.HumanSize(max))
	}
	f, written, err := s.create(CleanName(tf.Name))
	if err != nil {
		s.log.Warn("thread tools: fetch_thread_file: create", logkey.File, CleanName(tf.Name), logkey.Err, err)
		return Fetched{}, fmt.Errorf("cannot write %s into the workspace: %w", name, err)
	}
	h := sha256.New()
	n, err := copyLimited(io.MultiWriter(f, h), rc, max)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(int(s.root.Fd()), written, 0)
		if errors.Is(err, errTooLarge) {
			return Fetched{}, fmt.Errorf("%s is over the %s limit", name, shipgate.HumanSize(max))
		}
		s.log.Warn("thread tools: fetch_thread_file: copy", logkey.File, written, logkey.Err, err)
		return Fetched{}, fmt.Errorf("cannot fetch %s: %w", name, err)
	}
	out := Fetched{Path: filepath.Join(s.cfg.AgentWorkspace, written), Name: written, Size: n,
		SHA256: hex.EncodeToString(h.Sum(nil)), Note: tf.Note}
	s.log.Info("thread tools: file fetched", logkey.File, written, logkey.Size, n)
	return out, nil
}

// create makes a new file called name, or name with " (n)" before its
// extension when name is taken, in the workspace's top directory: beneath
// the workspace, never through a link, never over an existing file. The
// file is owned by the agent user, mode 0600.
func (s *Server) create(name string) (*os.File, string, error) {
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	try := name
	for i := 1; ; i++ {
		fd, err := unix.Openat2(int(s.root.Fd()), try, &unix.OpenHow{
			Flags:   unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Mode:    0o600,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS,
		})
		if errors.Is(err, unix.EEXIST) && i <= maxNameTries {
			try = CleanName(fmt.Sprintf("%s (%d)%s", stem, i, ext))
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if s.cfg.UID >= 0 || s.cfg.GID >= 0 {
			if err := unix.Fchown(fd, s.cfg.UID, s.cfg.GID); err != nil {
				unix.Close(fd)
				unix.Unlinkat(int(s.root.Fd()), try, 0)
				return nil, "", err
			}
		}
		return os.NewFile(uintptr(fd), try), try, nil
	}
}
