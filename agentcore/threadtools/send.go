package threadtools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/shipgate"
)

// refusal is a rule's refusal of a file: its message is the reason.
type refusal struct{ reason string }

func (r *refusal) Error() string { return "refused: " + r.reason }

func refuse(format string, args ...any) error {
	return &refusal{reason: fmt.Sprintf(format, args...)}
}

// sendFile checks the file at path (as the agent gave it) against every
// rule and posts it.
func (s *Server) sendFile(ctx context.Context, path, title string) (Sent, error) {
	name := CleanName(filepath.Base(path))
	f, err := s.checkFile(path, name)
	if err != nil {
		var r *refusal
		if errors.As(err, &r) {
			s.refused(name, r.reason)
		} else {
			s.log.Warn("thread tools: send_file", logkey.File, name, logkey.Err, err)
		}
		return Sent{}, err
	}
	f.Title = title
	return s.post(ctx, f)
}

// post posts f to the thread and reports it to OnSent.
func (s *Server) post(ctx context.Context, f File) (Sent, error) {
	posted, err := s.cfg.Thread.SendFile(ctx, f)
	if err != nil {
		s.log.Warn("thread tools: posting failed", logkey.File, f.Name, logkey.Size, f.Size, logkey.Err, err)
		return Sent{}, fmt.Errorf("not sent: %w", err)
	}
	sent := Sent{Name: f.Name, Title: f.Title, Size: f.Size, SHA256: f.SHA256, MIMEType: f.MIMEType, Posted: posted}
	s.log.Info("thread tools: file sent", logkey.File, sent.Name, logkey.Size, sent.Size)
	if s.cfg.OnSent != nil {
		s.cfg.OnSent(sent)
	}
	return sent, nil
}

// checkFile opens and reads the file at path and applies every rule; the
// error is a *refusal when a rule refused it.
func (s *Server) checkFile(path, name string) (File, error) {
	rel, err := s.relative(path)
	if err != nil {
		return File{}, err
	}
	fd, err := unix.Openat2(int(s.root.Fd()), rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ELOOP):
		return File{}, refuse("%s leads outside the workspace", path)
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return File{}, fmt.Errorf("no file %s in the workspace", path)
	case errors.Is(err, unix.EACCES):
		return File{}, fmt.Errorf("%s cannot be read", path)
	case err != nil:
		return File{}, fmt.Errorf("open %s: %w", path, err)
	}
	file := os.NewFile(uintptr(fd), path)
	defer file.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return File{}, fmt.Errorf("stat %s: %w", path, err)
	}
	if kind := fileKind(st.Mode); kind != "" {
		return File{}, refuse("%s is %s, not a regular file", path, kind)
	}
	max := s.cfg.MaxBytes
	if st.Size > max {
		return File{}, refuse("%s is %s, over the %s limit", path, shipgate.HumanSize(st.Size), shipgate.HumanSize(max))
	}
	if s.afterStat != nil {
		s.afterStat()
	}
	var buf bytes.Buffer
	buf.Grow(int(st.Size))
	if _, err := copyLimited(&buf, file, max); err != nil {
		if errors.Is(err, errTooLarge) {
			return File{}, refuse("%s grew past the %s limit while it was read", path, shipgate.HumanSize(max))
		}
		return File{}, fmt.Errorf("read %s: %w", path, err)
	}
	content := buf.Bytes()
	findings := shipgate.Check([]shipgate.File{shipgate.NewFile(name, content)},
		shipgate.Options{Secrets: s.cfg.Secrets, MaxSize: -1})
	if len(findings) > 0 {
		return File{}, refuse("%s", findingReason(findings[0]))
	}
	sum := sha256.Sum256(content)
	return File{
		Name:     name,
		Content:  content,
		Size:     int64(len(content)),
		SHA256:   hex.EncodeToString(sum[:]),
		MIMEType: mimeType(name, content),
	}, nil
}

// findingReason says a push-gate finding without its excerpt: "holds the
// value of a configured secret (line 3)".
func findingReason(f shipgate.Finding) string {
	if f.Line > 0 {
		return fmt.Sprintf("%s %s (line %d)", f.File, f.Reason, f.Line)
	}
	return f.File + " " + f.Reason
}

// relative returns path relative to the workspace: a relative path as it
// is, an absolute one inside the agent's workspace made relative; an
// absolute path elsewhere is refused.
func (s *Server) relative(path string) (string, error) {
	if path == "" {
		return "", errors.New("no path given")
	}
	if !filepath.IsAbs(path) {
		return path, nil
	}
	rel, err := filepath.Rel(s.cfg.AgentWorkspace, filepath.Clean(path))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", refuse("%s is outside the workspace (%s)", path, s.cfg.AgentWorkspace)
	}
	return rel, nil
}

// fileKind names a file type that is not a regular file; "" for one.
func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return ""
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a link"
	}
	return "not a regular file"
}
