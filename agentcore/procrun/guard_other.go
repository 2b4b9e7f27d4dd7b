//go:build !linux

// Process guards where Linux's are not available: relays rely on their
// directory's mode alone.

package procrun

import "net"

// SetNotDumpable does nothing outside Linux.
func SetNotDumpable() error { return nil }

// ownerOnly admits every connection: outside Linux the relay directory's
// mode (0700) is the only guard.
func ownerOnly(net.Conn) error { return nil }
