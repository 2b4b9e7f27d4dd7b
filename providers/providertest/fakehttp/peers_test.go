package fakehttp

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
)

// TestPeerUIDs: a request from another process is recorded with that
// process's uid (as root, a child started as nobody's uid); one from this
// process is not.
func TestPeerUIDs(t *testing.T) {
	s := Listen[struct{}]("peers", t)
	s.Serve(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	resp, err := http.Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := s.PeerUIDs(); len(got) != 0 {
		t.Fatalf("this process's own request recorded: %v", got)
	}
	port := strconv.Itoa(s.ln.Addr().(*net.TCPAddr).Port)
	cmd := exec.Command("bash", "-c", `exec 3<>/dev/tcp/127.0.0.1/`+port+` && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && cat <&3`)
	uid := os.Getuid()
	if uid == 0 {
		uid = 65534
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: 65534}}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bash: %v: %s", err, out)
	}
	if got := s.PeerUIDs(); !slices.Equal(got, []int{uid}) {
		t.Errorf("peers %v, want [%d]", got, uid)
	}
}
