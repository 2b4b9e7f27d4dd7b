// Package sandbox confines a host agent, and every process it starts, with
// Landlock (github.com/landlock-lsm/go-landlock): host.isolation: sandbox.
//
// # How it runs
//
// A Landlock restriction cannot be lifted and go-landlock applies it to
// every thread of a Go process, so the bot never restricts itself. It starts
// a helper instead, its own binary re-executed as the hidden subcommand
//
//	threadline sandbox POLICY_JSON -- /ABSOLUTE/BIN ARGS...
//
// built by Command and run by Exec: the helper refuses to act with
// privileges granted by its file (AT_SECURE), clears the ambient and
// inheritable capabilities of the thread that will execute the agent, sets
// no_new_privs, enforces the Policy on that thread and executes the agent
// from it, in place (same pid, environment unchanged). execve(2) keeps only
// that thread, so the agent starts in its Landlock domain; so do all its
// descendants, and nothing they do can widen it. Apply restricts a whole Go
// process instead, for a process that keeps running after it.
//
// The sandbox adds to the agent user (host.user), it does not replace it:
// start the helper as that user (SysProcAttr.Credential), as procrun does
// for host agents. A sandboxed root keeps its capabilities (see below).
//
// # What it covers
//
// Plan reports in advance what will be enforced on the running kernel (the
// helper sends no Report back; Apply returns one). A sandbox needs Landlock
// ABI 4 (Linux 6.7); on ABI 7 (Linux 6.15+, the version this package was
// tested on):
//
//   - Files: every file-system access right of the kernel's ABI is handled
//     (execute, read and write files, list directories, create, remove,
//     rename and link every kind of file, refer, truncate, ioctl on
//     devices). Only the policy's paths are reachable, and only as granted:
//     another chat's workspace, the bot's data, configuration and state,
//     /tmp, home directories are denied even where file permissions allow
//     the agent's user, and so for every child of the agent.
//   - TCP: connect(2) only to the ConnectTCP ports and bind(2) only to the
//     BindTCP ports (unless AnyBindTCP), on any address, loopback included.
//     Landlock has no port ranges: a test server an agent starts on an
//     ephemeral loopback port cannot be connected to, even by the agent.
//   - Scopes (ABI 6, Policy.Scope): no connection to an abstract unix socket
//     created outside the sandbox, no signal to a process outside it, even
//     one of the same user (another chat's agent).
//   - Processes outside the sandbox, of the same user or not, cannot be
//     ptraced, and their /proc/PID/mem, fd, cwd, exe, root (and, for the
//     agent user, environ and maps) cannot be opened.
//   - Privileges: no_new_privs (set-uid programs and file capabilities
//     grant nothing inside), no ambient or inheritable capability; mount,
//     umount and pivot_root are denied (Landlock forbids mount changes in a
//     domain that handles file access; mount(2) as root verified here).
//
// # What it does not cover
//
//   - UDP and every protocol but TCP: DNS, QUIC (UDP 443) and any UDP
//     destination stay open, even on kernels whose Landlock can restrict
//     UDP (ABI 10): the policy has no UDP rules. So do SCTP, and raw and ICMP
//     sockets where the user may open them.
//   - Multipath TCP: Landlock's TCP rules ignore IPPROTO_MPTCP sockets, so
//     with net.mptcp.enabled=1 (the default) an agent can connect to any TCP
//     port through one (verified here) and bind any port. Set the sysctl
//     net.mptcp.enabled=0 on hosts that run sandboxes and need no MPTCP.
//   - Destinations: TCP rules are by port. Port 443 open means every HTTPS
//     server on the internet: the sandbox limits what an agent can read,
//     not where it can send it.
//   - Pathname unix sockets: connect(2) and sendmsg(2) to a socket file are
//     not restricted before ABI 9 (verified here, ABI 7), whatever its
//     directory; file permissions alone protect /run/docker.sock, D-Bus, the
//     relay's sockets, and sockets another chat's agent created in its own
//     workspace. From ABI 9 they are handled, and allowed only beneath
//     ReadWrite paths (so no more nscd or systemd-resolved sockets either:
//     name resolution then goes through /etc/resolv.conf's DNS servers).
//   - Metadata: stat(2), access(2), chdir(2), readlink(2), chmod(2),
//     chown(2), utime(2), setxattr(2) and flock(2) are not restricted. An
//     agent can learn whether a path exists, its size and times, and change
//     the mode, times and extended attributes of files its user owns
//     anywhere, another chat's included (not read, write, remove or rename
//     them).
//   - /proc: granted read-only, it lists every process with its cmdline,
//     status and stat, as for any user (mount /proc with hidepid to hide
//     them). Processes of the same sandbox (the agent and its children) can
//     ptrace and read one another. As root, a sandboxed process could still
//     read /proc/PID/environ of processes outside (observed on Linux 6.18).
//   - Root: a sandboxed root keeps its capabilities, and Landlock does not
//     stop CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_NET_ADMIN, CAP_SYS_TIME and the
//     like. Run the helper as the agent user.
//   - What the policy grants: the CLI's login files (the agent can read its
//     own credentials, which the CLI needs), everything world-readable under
//     SystemReadOnly (/etc minus what Exclude removed), the devices.
//     Landlock cannot deny a subtree of a granted directory: Exclude splits
//     the directory instead.
//   - File descriptors the helper inherits: Landlock checks at open(2),
//     not on descriptors opened before. The caller passes the agent only
//     its pipes.
//   - Kernels without Landlock ABI 4: Apply, Plan and Exec fail with
//     ErrUnavailable; Available says why. On ABI 4 devices' ioctls are not
//     restricted, on ABI 4 and 5 there are no scopes (Report.Scoped false).
//   - Resources (CPU, memory, disk, processes): cgroups' job.
//
// # Symbolic links
//
// Every path is opened once (O_PATH) and its rule added for that open file,
// through its /proc/self/fd magic link, so what is checked is what is
// granted. ReadWrite paths must not contain a symbolic link at all
// (RESOLVE_NO_SYMLINKS, else ErrSymlink): the agent can write those
// directories, and a link planted in one would otherwise grant its target to
// the next run. Other paths follow their links (/lib to /usr/lib); the
// target is granted and checked against Policy.Forbidden (ErrOverlap).
package sandbox
