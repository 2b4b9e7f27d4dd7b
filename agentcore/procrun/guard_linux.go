// Process guards on Linux: non-dumpable processes, peer credentials of relay
// connections, private directories.

package procrun

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// SetNotDumpable marks this process non-dumpable (PR_SET_DUMPABLE 0): another
// process of the same uid can no longer read its /proc/<pid>/environ, mem or
// fds, nor ptrace it, and it leaves no core dump. The bot calls it at start,
// each relay at its start.
func SetNotDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
	}
	return nil
}

// peerUID is the uid of the process at the other end of a unix connection.
func peerUID(c net.Conn) (uint32, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, errors.New("not a unix connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, fmt.Errorf("SO_PEERCRED: %w", serr)
	}
	return cred.Uid, nil
}

// ownerOnly admits a relay connection from this process's uid or root.
func ownerOnly(c net.Conn) error {
	uid, err := peerUID(c)
	if err != nil {
		return err
	}
	return admitUID(uid, uint32(os.Getuid()))
}

// admitUID admits peer when it is self or root.
func admitUID(peer, self uint32) error {
	if peer == self || peer == 0 {
		return nil
	}
	return fmt.Errorf("peer uid %d is neither the relay's (%d) nor root", peer, self)
}
