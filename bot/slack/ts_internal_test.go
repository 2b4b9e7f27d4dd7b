// Tests of tsTime, the message time a typed decision is checked against.

package slack

import (
	"testing"
	"time"
)

func TestTSTime(t *testing.T) {
	if got, want := tsTime("1700000000.123456"), time.Unix(1700000000, 123456000).UTC(); !got.Equal(want) {
		t.Errorf("tsTime = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "1700000000", "1700000000.12", "x.123456", "1700000000.12345x", "-1.000000", "1700000000.-12345"} {
		if got := tsTime(bad); !got.IsZero() {
			t.Errorf("tsTime(%q) = %v, want zero", bad, got)
		}
	}
}
