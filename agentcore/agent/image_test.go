package agent

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func TestDecodeImage(t *testing.T) {
	img := []byte("\x89PNG\r\n\x1a\n some image bytes \xff\xfe")
	for _, tc := range []struct {
		name, data string
		ok         bool
	}{
		{"std", b64(img), true},
		{"unpadded", strings.TrimRight(b64(img), "="), true},
		{"data URL", "data:image/png;base64," + b64(img), true},
		{"data URL not base64", "data:image/png,abc", false},
		{"not base64", "%%%", false},
		{"empty", "", false},
	} {
		got, ok := DecodeImage("t", "", "", tc.data, 1<<20)
		if ok != tc.ok || (ok && !bytes.Equal(got.Data, img)) {
			t.Errorf("%s: ok %v", tc.name, ok)
		}
	}
	if _, ok := DecodeImage("t", "", "", b64(img), len(img)-1); ok {
		t.Error("an image over max decoded")
	}
}
