// Package execution readies where a run executes: on the host for a loose
// chat, inside the project's LXD container for a project chat.
//
// # The preparer
//
// Preparer.Prepare runs before the provider for every run of a project chat:
//
//  1. Resolve the project (Projects); an unknown project or one without a
//     container name is an error.
//  2. Emit system/container_starting when the stored state is not "running",
//     then always call start, even when the state says running: that is how a
//     container deleted or stopped behind the bot's back is noticed. "Already
//     running" is success; "not found" creates the instance from the project's
//     image (else the configured default) with the configured profiles, turns
//     on boot autostart, starts it and mounts the project's workspace
//     directory (if any) at /workspace, with id shifting where the LXD host
//     supports it (else a plain mount, where host-root files show as nobody).
//  3. Emit system/container_preparing when provisioning starts: the first time
//     this process prepares the instance, and after it was (re)created. It
//     enables boot autostart.
//  4. Every run: create /workspace (lxc exec --cwd to a missing directory
//     silently runs in /) and the directories of the files to push, check that
//     the agent CLI is on the container's PATH (else ErrAgentMissing with the
//     install hint), push the shared instructions, the agent profile's
//     non-secret assets and credentials, and create its skill links. A failed
//     push is logged and the run goes on.
//  5. Load the project's secrets, best-effort: a failure is logged and the run
//     goes on without them.
//
// It returns the agent.ContainerTarget; the provider hands it to procrun,
// which pushes the run's environment as a 0600 env file into /run/threadline
// (through the client's stdin) and runs `lxc exec [REMOTE:]NAME --cwd
// /workspace -- /bin/sh -c SCRIPT sh FILE BIN ARGS`, a fixed script that
// loads and removes the file before it execs the agent (see
// procrun.ContainerCommand for the environment order). After a completed
// run, Preparer.Completed copies the credentials the agent declares back from
// the container to the host, best-effort and bounded (30 s by default).
//
// Secret values (project secrets, credential files) are never logged, never
// put in events and never in argv of the preparer's own lxc calls (files are
// pushed through stdin); the secrets are loaded last, so no error text the
// preparer returns can hold one. procrun masks them in a run's stderr.
//
// # lxc CLI, not the LXD API
//
// LXC talks to LXD through the `lxc` command-line client, with argument arrays
// only, rather than through LXD's REST API on the unix socket:
//
//   - Remote LXD servers and clusters come for free: `lxd.remote` names a
//     remote added once with `lxc remote add`, and the client keeps its URL,
//     trust and TLS client certificate. Over the raw API the bot would have to
//     manage those certificates itself.
//   - The run itself must go through `lxc exec` anyway (procrun starts the
//     agent as a child process speaking a line protocol on stdin/stdout). The
//     client relays stdin, stdout and stderr separately, passes the exit code
//     through, forwards signals, and LXD kills the process inside when the
//     client dies, which is exactly the child-process contract procrun has for
//     host runs. Over the API that is an exec operation plus three or four
//     websockets to relay by hand.
//   - The canonical Go client (github.com/canonical/lxd/client) is not served
//     by the Go module proxy this project builds from, and the Incus fork is
//     marked not to use; HTTP+JSON by hand would be a second client to keep
//     correct.
//
// The cost is about 40-60 ms per call, and errors are recognized by LXD's
// stable "Error: ..." texts (mapped to this package's sentinels in one place,
// classify), plus one `lxc file push` (10-50 ms) per run for the env file.
// No secret value is in any command line on the host: `lxc exec --env K=V`
// would put it in the client's argv and in LXD's own `lxd forkexec ... --
// env K=V` (a real-LXD test saw both in /proc/PID/cmdline), and the REST
// API's environment ends in that same forkexec argv, so the values travel
// in a file instead.
package execution
