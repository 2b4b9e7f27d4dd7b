// The helper: a re-executed copy of the bot's binary that confines itself
// and then executes the agent.

package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Exec is the helper, the hidden subcommand
//
//	threadline sandbox POLICY_JSON -- BIN [ARGS...]
//
// args are the words after the subcommand's name (POLICY_JSON, "--", BIN,
// ARGS); environ is the environment the agent gets, unchanged. Exec
//
//   - refuses to run in secure-exec mode (AT_SECURE: the binary is set-uid
//     or set-gid or has file capabilities, which a sandbox helper must never
//     act with) and when its real and effective ids differ;
//   - locks itself to its OS thread, the one that will execute the agent;
//   - clears that thread's ambient and inheritable capability sets, so that
//     the agent, which has no file capabilities, starts with none (a relay
//     may pass CAP_SETUID and CAP_SETGID as ambient ones), and checks them;
//   - sets no_new_privs and enforces the policy's Landlock ruleset (built
//     as Apply builds it) on that thread;
//   - executes BIN with argv BIN ARGS... and environ, from that thread.
//
// Only the calling thread is restricted, unlike Apply: execve(2) ends every
// other thread, and the new program runs with the calling thread's
// credentials, no_new_privs flag and Landlock domain, so the agent gets
// exactly those. The helper's other threads run nothing but the Go runtime
// until then. Restricting every thread first (psx or AllThreadsSyscall on a
// kernel below Landlock ABI 8) costs three stop-the-world rounds, several
// milliseconds per start on a loaded machine, and protects nothing more.
//
// It returns only on failure, and then nothing was executed: the caller
// prints the error and exits non-zero (say 126). Call it first thing in
// main, before anything else runs or reads configuration: the helper
// process must not open the bot's files.
func Exec(args []string, environ []string) error {
	if err := CheckNotSecureExec(); err != nil {
		return err
	}
	p, bin, argv, err := parseArgs(args)
	if err != nil {
		return err
	}
	runtime.LockOSThread() // never unlocked: this thread executes the agent
	if err := dropThreadCaps(); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := restrictThread(p); err != nil {
		return err
	}
	err = syscall.Exec(bin, argv, environ)
	if errors.Is(err, syscall.EACCES) {
		return fmt.Errorf("sandbox: exec %s: %w (the policy must grant it: its directory in read_only)", bin, err)
	}
	return fmt.Errorf("sandbox: exec %s: %w", bin, err)
}

// restrictThread enforces p on the calling thread only (locked to its
// goroutine): no_new_privs, then the ruleset.
func restrictThread(p Policy) error {
	b, err := build(p)
	if err != nil {
		return err
	}
	fd, flags, err := b.cfg.NewRulesetFD(b.rules...)
	b.close()
	if err != nil {
		return fmt.Errorf("sandbox: ruleset: %w", err)
	}
	if fd < 0 { // cannot happen: file access is always handled
		return fmt.Errorf("sandbox: ruleset: nothing to restrict")
	}
	defer syscall.Close(fd) // close-on-exec anyway
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("sandbox: landlock_restrict_self: %w", err)
	}
	return nil
}

// atSecure is the auxiliary vector's AT_SECURE entry (getauxval(3)).
const atSecure = 23

// CheckNotSecureExec fails when this process was started in secure-exec mode
// (AT_SECURE set by the kernel: set-uid, set-gid, file capabilities, or an
// LSM's transition), when its auxiliary vector cannot be read, or when its
// real and effective user or group ids differ.
func CheckNotSecureExec() error {
	secure, err := secureExec()
	if err != nil {
		return fmt.Errorf("%w: cannot read AT_SECURE: %w", ErrSecureExec, err)
	}
	if secure {
		return fmt.Errorf("%w: AT_SECURE is set", ErrSecureExec)
	}
	if os.Getuid() != os.Geteuid() || os.Getgid() != os.Getegid() {
		return fmt.Errorf("%w: real and effective ids differ (uid %d/%d, gid %d/%d)", ErrSecureExec, os.Getuid(), os.Geteuid(), os.Getgid(), os.Getegid())
	}
	return nil
}

// secureExec reads AT_SECURE from the auxiliary vector the kernel gave this
// process: the runtime's copy, else /proc/self/auxv.
func secureExec() (bool, error) {
	if vec, err := unix.Auxv(); err == nil && len(vec) > 0 {
		for _, kv := range vec {
			if kv[0] == atSecure {
				return kv[1] != 0, nil
			}
		}
		return false, errors.New("no AT_SECURE in the auxiliary vector")
	}
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return false, err
	}
	return auxvSecure(b)
}

// auxvSecure finds AT_SECURE in the bytes of /proc/self/auxv (pairs of
// native words).
func auxvSecure(b []byte) (bool, error) {
	const word = int(unsafe.Sizeof(uintptr(0)))
	for i := 0; i+2*word <= len(b); i += 2 * word {
		var k, v uint64
		if word == 8 {
			k, v = binary.NativeEndian.Uint64(b[i:]), binary.NativeEndian.Uint64(b[i+word:])
		} else {
			k, v = uint64(binary.NativeEndian.Uint32(b[i:])), uint64(binary.NativeEndian.Uint32(b[i+word:]))
		}
		if k == atSecure {
			return v != 0, nil
		}
		if k == 0 { // AT_NULL
			break
		}
	}
	return false, errors.New("no AT_SECURE in /proc/self/auxv")
}

// dropThreadCaps clears the ambient and inheritable capability sets of the
// calling thread (locked to its goroutine) and checks, in
// /proc/thread-self/status, that it keeps none: the minimal logic of
// procrun.DropInheritedCaps, for the one thread that executes the agent.
func dropThreadCaps() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) { // EINVAL: no ambient capabilities (< 4.3)
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data[0].Inheritable != 0 || data[1].Inheritable != 0 {
		data[0].Inheritable, data[1].Inheritable = 0, 0
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("capset: %w", err)
		}
	}
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return fmt.Errorf("read this thread's capabilities: %w", err)
	}
	for _, k := range []string{"CapAmb", "CapInh"} {
		v, err := statusCaps(string(b), k)
		if err != nil {
			return err
		}
		if v != 0 {
			return fmt.Errorf("this thread keeps %s %016x: the agent would inherit capabilities", k, v)
		}
	}
	return nil
}

// statusCaps reads one capability line (CapAmb, CapInh...) of a
// /proc/.../status text.
func statusCaps(status, key string) (uint64, error) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("no %s in status", key)
}
