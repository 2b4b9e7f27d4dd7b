// crosssign.go: the recovery key file of the bot's cross-signing identity
// (Config.RecoveryKeyFile). The key opens the account's secret storage, where
// the cross-signing keys and the key backup's key live; the file is the only
// copy the bot keeps. It is created once with mode 0600 and never
// overwritten, and its content is never logged.

package matrix

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrCrossSigning is returned by Run when the bot's cross-signing identity or
// key backup cannot be set up (a recovery key that does not open the
// account's secret storage, a key file that cannot be read or written).
var ErrCrossSigning = errors.New("matrix: cross-signing")

// readRecoveryKey returns the recovery key kept in path; ok is false when
// the file does not exist.
func readRecoveryKey(path string) (key string, ok bool, err error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("%w: read the recovery key file %s: %w", ErrCrossSigning, path, err)
	}
	key = strings.TrimSpace(string(raw))
	if key == "" {
		return "", false, fmt.Errorf("%w: the recovery key file %s is empty", ErrCrossSigning, path)
	}
	return key, true, nil
}

// writeRecoveryKey creates path (mode 0600, its directory 0700 when
// missing) holding key. An existing file is never replaced.
func writeRecoveryKey(path, key string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("%w: the recovery key file's directory: %w", ErrCrossSigning, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("%w: create the recovery key file: %w", ErrCrossSigning, err)
	}
	_, err = f.WriteString(key + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("%w: write the recovery key file %s: %w", ErrCrossSigning, path, err)
	}
	return nil
}

// looseMode reports whether the file at path can be read by others than
// its owner.
func looseMode(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().Perm()&0o077 != 0
}
