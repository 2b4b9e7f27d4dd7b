// Tests of `threadline project add --channels/--allow`.

package main

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/chatops/chatstore"
)

func TestProjectAddAccess(t *testing.T) {
	dir := isolate(t)
	cfg := projectConfig(t, dir, "lxd:\n  image: bb\n")
	code, out, errs, err := run(t, "", "project", "add", "team", "--container", "team-c", "--channels", "C1, !room:example.org", "--allow", "U1,@alice:example.org", "--config", cfg)
	if code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s", code, err, errs)
	}
	if !strings.Contains(out, "chats may use it in: C1, !room:example.org; bound by: U1, @alice:example.org (and admins)") {
		t.Errorf("add: %q", out)
	}
	_, st, err := openStore(t.Context(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pa, err := chatstore.Store{St: st}.ProjectAccess(t.Context(), "team")
	if err != nil || !slices.Equal(pa.Channels, []string{"!room:example.org", "C1"}) || !slices.Equal(pa.Allow, []string{"@alice:example.org", "U1"}) {
		t.Fatalf("stored access %+v, %v", pa, err)
	}
	for _, bad := range [][]string{{"--channels", "C1,,C2"}, {"--allow", "U 1"}, {"--channels", "C\x001"}} {
		code, _, _, err := run(t, "", append([]string{"project", "add", "bad", "--container", "bad-c", "--config", cfg}, bad...)...)
		if code != 2 || err == nil || !strings.Contains(err.Error(), "invalid id") {
			t.Errorf("%q: exit %d, %v", bad, code, err)
		}
	}
}
