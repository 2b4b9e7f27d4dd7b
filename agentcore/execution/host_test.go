// Tests of host execution under isolation: the chat directory handed to the
// agent user.

package execution

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
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
	base := procruntest.TraversableDir(t, "tlexec")
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
	if _, mode := owner(base); mode != 0o711 {
		t.Errorf("%s, above the workdir root, was changed: %o", base, mode)
	}
	me, _ := user.Current()
	if uid, mode := owner(elsewhere); uid != me.Uid || mode != 0o750 {
		t.Errorf("an operator's directory was changed: uid %s mode %o", uid, mode)
	}
}

// TestPrepareWorkdirNeverOpensAbove: a workdir root below a directory the
// agent user cannot pass (a home such as /root, 0700) is refused with a
// message naming it, and that directory keeps its mode.
func TestPrepareWorkdirNeverOpensAbove(t *testing.T) {
	u := procruntest.NeedAgentUser(t)
	iso, err := procrun.NewIsolation(u.Username)
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(procruntest.TraversableDir(t, "tlexec"), "root")
	if err := os.Mkdir(home, 0o700); err != nil { // as root's home
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".profile"), []byte("export KEY=planted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(home, ".local", "share", "threadline", "work")
	chat := filepath.Join(root, "chat-1")
	if err := os.MkdirAll(chat, 0o750); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(root); d != home; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil { // as PrivateDirs leaves the data directory
			t.Fatal(err)
		}
	}
	before, _ := os.Stat(home)
	err = PrepareWorkdir(root, chat, iso)
	if !errors.Is(err, ErrUnreachableWorkdir) || !strings.Contains(err.Error(), home+" (mode 0700)") {
		t.Fatalf("PrepareWorkdir under a private home: %v", err)
	}
	if after, _ := os.Stat(home); after.Mode() != before.Mode() {
		t.Errorf("the home's mode went from %v to %v", before.Mode(), after.Mode())
	}
}
