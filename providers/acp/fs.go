// DirFS: the fs/* client methods, confined to the run's working directory.

package acp

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Errors of DirFS.
var (
	// ErrOutsideRoot is returned for a path outside DirFS.Root.
	ErrOutsideRoot = errors.New("acp fs: path outside the working directory")
	// ErrReadOnly is returned by WriteTextFile on a read-only DirFS.
	ErrReadOnly = errors.New("acp fs: writes are not allowed in this run")
)

// maxReadBytes bounds a file read through fs/read_text_file.
const maxReadBytes = 8 << 20

// DirFS serves fs/read_text_file and fs/write_text_file for paths inside
// Root (absolute paths only; symlinks may not lead out of Root).
type DirFS struct {
	Root     string
	ReadOnly bool
}

// resolve checks that path is absolute and inside Root, following symlinks
// of its existing part.
func (d DirFS) resolve(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%w: %q is not absolute", ErrOutsideRoot, path)
	}
	root, err := filepath.EvalSymlinks(d.Root)
	if err != nil {
		return "", fmt.Errorf("acp fs: root: %w", err)
	}
	clean := filepath.Clean(path)
	// Resolve the longest existing prefix, then re-attach the rest.
	existing, rest := clean, ""
	for {
		if r, err := filepath.EvalSymlinks(existing); err == nil {
			existing = r
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	full := filepath.Join(existing, rest)
	if full != root && !strings.HasPrefix(full, root+string(filepath.Separator)) {
		return "", fmt.Errorf("%w: %s", ErrOutsideRoot, path)
	}
	return full, nil
}

// ReadTextFile returns the file's text, or limit lines from line (1-based)
// when they are set.
func (d DirFS) ReadTextFile(path string, line, limit int) (string, error) {
	full, err := d.resolve(path)
	if err != nil {
		return "", err
	}
	f, err := os.Open(full)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxReadBytes {
		return "", fmt.Errorf("acp fs: %s is larger than %d bytes", path, maxReadBytes)
	}
	text := string(b)
	if line <= 0 && limit <= 0 {
		return text, nil
	}
	lines := strings.SplitAfter(text, "\n")
	start := max(line-1, 0)
	if start >= len(lines) {
		return "", nil
	}
	end := len(lines)
	if limit > 0 && start+limit < end {
		end = start + limit
	}
	return strings.Join(lines[start:end], ""), nil
}

// WriteTextFile writes content to path, creating parent directories.
func (d DirFS) WriteTextFile(path, content string) error {
	if d.ReadOnly {
		return ErrReadOnly
	}
	full, err := d.resolve(path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	return os.WriteFile(full, []byte(content), 0o644)
}

// fsErrorCode maps a FileSystem error to a JSON-RPC error code.
func fsErrorCode(err error) int64 {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return CodeResourceNotFound
	case errors.Is(err, ErrOutsideRoot), errors.Is(err, ErrReadOnly), errors.Is(err, fs.ErrPermission):
		return CodeInvalidParams
	}
	return CodeInternalError
}
