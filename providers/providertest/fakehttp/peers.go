package fakehttp

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// notePeer records the uid of the process that opened c, a connection just
// accepted, unless it is this process: the owner of the client's end in
// /proc/net/tcp{,6} (the client is on loopback, in this network
// namespace). A client that let go of its end before the accept (a run
// killed meanwhile: its end is gone, or an orphan of no process, inode 0,
// shown as uid 0) sent nothing the server answers, and is not recorded.
func (s *Server[R]) notePeer(c net.Conn) {
	remote, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return
	}
	local := s.ln.Addr().(*net.TCPAddr).Port
	var (
		uid   int
		inode string
	)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if u, i, ok := socketOwner(f, remote.Port, local); ok {
			uid, inode = u, i
			break
		}
	}
	if inode == "" || inode == "0" {
		s.Logf("a client on port %d let go of its connection before the accept", remote.Port)
		return
	}
	if ownSocket(inode) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.peers, uid) {
		s.peers = append(s.peers, uid)
	}
}

// PeerUIDs are the uids of the processes that connected to the server,
// this process aside, each once.
func (s *Server[R]) PeerUIDs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.peers)
}

// socketOwner finds, in a /proc/net/tcp table, the socket from port
// lport to port rport and returns its uid and inode.
func socketOwner(table string, lport, rport int) (uid int, inode string, ok bool) {
	f, err := os.Open(table)
	if err != nil {
		return 0, "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || hexPort(fs[1]) != lport || hexPort(fs[2]) != rport {
			continue
		}
		uid, err := strconv.Atoi(fs[7])
		if err != nil {
			return 0, "", false
		}
		return uid, fs[9], true
	}
	return 0, "", false
}

// hexPort is the port of a /proc/net/tcp address (ADDR:PORT, in hex).
func hexPort(addr string) int {
	_, p, ok := strings.Cut(addr, ":")
	if !ok {
		return -1
	}
	n, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return -1
	}
	return int(n)
}

// ownSocket reports whether this process holds the socket of inode.
func ownSocket(inode string) bool {
	fds, _ := filepath.Glob("/proc/self/fd/*")
	want := fmt.Sprintf("socket:[%s]", inode)
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && l == want {
			return true
		}
	}
	return false
}
