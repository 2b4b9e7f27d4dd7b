// Files a test looks for or writes in a directory of its own: what a tool
// call left in the working directory, a CLI's configuration under its home.

package providertest

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// PNG is a small PNG image (8x8, a red diagonal): what a test's agent makes
// or sends.
func PNG(t testing.TB) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for i := range 8 {
		img.Set(i, i, color.RGBA{R: 200, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Exists reports whether name (slash-separated, relative to dir) exists.
// An error other than its absence fails t at once: a file that cannot be
// looked at does not count as missing.
func Exists(t testing.TB, dir, name string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// WriteFile writes text to name (slash-separated, relative to dir), making
// the directories on the way, readable by the owner only; an error fails t
// at once.
func WriteFile(t testing.TB, dir, name, text string) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(name))
	err := os.MkdirAll(filepath.Dir(path), 0o700)
	if err == nil {
		err = os.WriteFile(path, []byte(text), 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// AppendFile appends text to the existing file name (slash-separated,
// relative to dir), e.g. a section to a CLI's configuration; an error fails
// t at once.
func AppendFile(t testing.TB, dir, name, text string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, filepath.FromSlash(name)), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(text)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
}
