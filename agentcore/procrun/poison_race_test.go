//go:build race

package procrun

import (
	"bytes"
	"testing"
)

// TestReleasedBatchPoisoned: with the race detector on, a released read
// buffer is overwritten, so a wire that kept a slice of a line past its
// call (the buffer is read into again) sees other bytes in the tests.
func TestReleasedBatchPoisoned(t *testing.T) {
	b := getBatch(batchBytes)
	copy(b.own, `{"type":"kept"}`)
	kept := b.own[:15]
	b.release()
	if !bytes.Equal(kept, bytes.Repeat([]byte{0xA5}, 15)) {
		t.Fatalf("released buffer still holds %q", kept)
	}
}
