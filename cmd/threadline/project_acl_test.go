// Tests of project access lists being closed by default, `project access`
// and the lists in `project list`, on Postgres and SQLite.

package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestProjectAccessClosedByDefault(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			dir := isolate(t)
			cfg := filepath.Join(dir, "threadline.yaml")
			if err := os.WriteFile(cfg, []byte("database:\n  url: "+storetest.URL(t, dialect)+"\nlxd:\n  image: bb\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := func(t *testing.T, args ...string) string {
				t.Helper()
				code, out, errs, err := run(t, "", append(args, "--config", cfg)...)
				if code != 0 || err != nil {
					t.Fatalf("%v: exit %d, %v\n%s", args, code, err, errs)
				}
				return out
			}
			policy := &chatops.Policy{Admins: []string{"slack:UADMIN"}}
			c1 := chatops.Place{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1.2"}
			mayBind := func(t *testing.T, user string, pl chatops.Place) bool {
				t.Helper()
				_, st, err := openStore(t.Context(), cfg, io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				p, err := st.GetProject(t.Context(), "legacy")
				if err != nil {
					t.Fatal(err)
				}
				return policy.MayBind(chatops.User{Platform: "slack", ID: user}, pl, chatops.ProjectAccess{Name: p.Name, Channels: p.Channels, Allow: p.Allow})
			}

			// A project added without --channels (as every project made
			// before access lists has no rows) is admin-only.
			out := cmd(t, "project", "add", "legacy", "--container", "legacy-c")
			if !strings.Contains(out, "project legacy is admin-only") || !strings.Contains(out, "threadline project access legacy --channels") {
				t.Errorf("add without --channels: %q", out)
			}
			if mayBind(t, "U1", c1) {
				t.Error("a project without channels is bindable by a non-admin")
			}
			if !mayBind(t, "UADMIN", c1) {
				t.Error("an admin may not bind a closed project")
			}
			if out := cmd(t, "project", "list"); !strings.Contains(out, "CHANNELS") || !strings.Contains(out, "(admins only)") {
				t.Errorf("list of a closed project:\n%s", out)
			}

			out = cmd(t, "project", "access", "legacy", "--channels", "C1,!room:example.org", "--allow", "U1")
			if !strings.Contains(out, "chats may use it in: C1, !room:example.org; bound by: U1 (and admins)") {
				t.Errorf("access: %q", out)
			}
			if !mayBind(t, "U1", c1) || mayBind(t, "U2", c1) || mayBind(t, "U1", chatops.Place{Platform: "slack", Channel: "C2"}) {
				t.Error("the lists set by project access are not applied")
			}
			if out := cmd(t, "project", "list"); !strings.Contains(out, "!room:example.org,C1") || !strings.Contains(out, "U1") {
				t.Errorf("list after access:\n%s", out)
			}

			// Replacing with no flags closes it again.
			if out := cmd(t, "project", "access", "legacy"); !strings.Contains(out, "admin-only") {
				t.Errorf("access without flags: %q", out)
			}
			if mayBind(t, "U1", c1) {
				t.Error("project access without --channels left the project open")
			}
			cmd(t, "project", "access", "legacy", "--channels", "*")
			if !mayBind(t, "U2", chatops.Place{Platform: "matrix", Channel: "!r:example.org"}) {
				t.Error("--channels '*' does not open every channel")
			}

			for _, tc := range []struct {
				args []string
				code int
				want string
			}{
				{[]string{"project", "access", "nope", "--channels", "C1"}, 1, "no project nope"},
				{[]string{"project", "access", "legacy", "--channels", "C 1"}, 2, "invalid id"},
				{[]string{"project", "access"}, 2, "want NAME"},
			} {
				code, _, _, err := run(t, "", append(tc.args, "--config", cfg)...)
				if code != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%v: exit %d, %v; want exit %d and %q", tc.args, code, err, tc.code, tc.want)
				}
			}
		})
	}
}
