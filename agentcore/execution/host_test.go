// Tests of host execution under isolation: the chat directory handed to the
// agent user.

package execution

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/procrun/procruntest"
)

// TestPrepareWorkdir: a chat's own directory goes to the agent user (group
// the bot's, 2770), its parent becomes traversable; other directories are
// left alone.
func TestPrepareWorkdir(t *testing.T) {
	u := procruntest.NeedAgentUser(t)
	iso, err := procrun.NewIsolation(u.Username)
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	root := filepath.Join(base, "work")
	chat := filepath.Join(root, "chat-1")
	elsewhere := filepath.Join(base, "mine")
	for _, d := range []string{chat, elsewhere} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := PrepareWorkdir(root, chat, iso); err != nil {
		t.Fatal(err)
	}
	if err := PrepareWorkdir(root, elsewhere, iso); err != nil {
		t.Fatal(err)
	}
	owner := func(p string) (string, os.FileMode) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Uid)), fi.Mode().Perm()
	}
	fi, err := os.Stat(chat)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); strconv.Itoa(int(st.Uid)) != u.Uid || int(st.Gid) != os.Getegid() || fi.Mode() != os.ModeDir|os.ModeSetgid|0o770 {
		t.Errorf("chat dir: %d:%d %v, want %s:%d %v", st.Uid, st.Gid, fi.Mode(), u.Uid, os.Getegid(), os.ModeDir|os.ModeSetgid|0o770)
	}
	if _, mode := owner(root); mode != 0o701 {
		t.Errorf("workdir root: mode %o, want 0701 (traversable, not listable)", mode)
	}
	for _, d := range []string{base, filepath.Dir(base)} {
		if _, mode := owner(d); mode&0o001 == 0 {
			t.Errorf("%s is not traversable: %o", d, mode)
		}
	}
	me, _ := user.Current()
	if uid, mode := owner(elsewhere); uid != me.Uid || mode != 0o750 {
		t.Errorf("an operator's directory was changed: uid %s mode %o", uid, mode)
	}
}
