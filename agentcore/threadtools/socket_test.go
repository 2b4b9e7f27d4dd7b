package threadtools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/procrun/procruntest"
)

// TestMain lets this test binary act as a client (for a run as another
// user): with THREADTOOLS_TEST_DIAL set it calls thread_files on that
// socket with THREADTOOLS_TEST_TOKEN and prints the outcome.
func TestMain(m *testing.M) {
	if sock := os.Getenv("THREADTOOLS_TEST_DIAL"); sock != "" {
		c := &Client{Socket: sock, Token: os.Getenv("THREADTOOLS_TEST_TOKEN")}
		files, err := c.Files(context.Background())
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("files:", len(files))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The socket is mode 0600 and owned by the agent user: that user connects,
// another (nobody) cannot, root can.
func TestSocketOwnerAndMode(t *testing.T) {
	u := procruntest.NeedAgentUser(t)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	h := start(t, func(c *Config) { c.UID, c.GID = uid, gid })
	h.thread.attach("a.txt", []byte("a"))

	var st syscall.Stat_t
	if err := syscall.Lstat(h.client.Socket, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFSOCK || st.Mode&0o777 != 0o600 {
		t.Errorf("socket mode %o, want a socket 0600", st.Mode)
	}
	if int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("socket owned by %d:%d, want %d:%d", st.Uid, st.Gid, uid, gid)
	}

	exe := procruntest.SharedExecutable(t, "threadtools.test")
	dial := func(uid, gid uint32) (string, error) {
		cmd := exec.Command(exe)
		cmd.Env = []string{"THREADTOOLS_TEST_DIAL=" + h.client.Socket, "THREADTOOLS_TEST_TOKEN=" + h.client.Token}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := dial(uint32(uid), uint32(gid)); err != nil || out != "files: 1" {
		t.Errorf("the agent user: %q (%v)", out, err)
	}
	if out, err := dial(65534, 65534); err == nil || !strings.Contains(out, "permission denied") {
		t.Errorf("nobody: %q (%v), want permission denied", out, err)
	}
	if _, err := h.client.Files(t.Context()); err != nil {
		t.Errorf("root: %v", err)
	}
}
