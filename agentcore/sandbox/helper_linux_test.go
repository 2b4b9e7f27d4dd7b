// Tests of the helper's checks that need no other process.

package sandbox

import (
	"encoding/binary"
	"testing"
)

func TestAuxvSecure(t *testing.T) {
	vec := func(pairs ...uint64) []byte {
		b := make([]byte, 0, 8*len(pairs))
		for _, w := range pairs {
			b = binary.NativeEndian.AppendUint64(b, w)
		}
		return b
	}
	const atPagesz, atNull = 6, 0
	for name, tc := range map[string]struct {
		b       []byte
		secure  bool
		wantErr bool
	}{
		"secure":        {vec(atPagesz, 4096, atSecure, 1, atNull, 0), true, false},
		"not secure":    {vec(atPagesz, 4096, atSecure, 0, atNull, 0), false, false},
		"missing":       {vec(atPagesz, 4096, atNull, 0), false, true},
		"after AT_NULL": {vec(atNull, 0, atSecure, 1), false, true},
		"truncated":     {vec(atPagesz, 4096, atSecure)[:20], false, true},
		"empty":         {nil, false, true},
	} {
		secure, err := auxvSecure(tc.b)
		if secure != tc.secure || (err != nil) != tc.wantErr {
			t.Errorf("%s: %t, %v; want %t, error %t", name, secure, err, tc.secure, tc.wantErr)
		}
	}
	// This test process was not started in secure-exec mode.
	if err := CheckNotSecureExec(); err != nil {
		t.Error(err)
	}
}
