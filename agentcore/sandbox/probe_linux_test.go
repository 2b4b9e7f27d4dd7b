// The test binary's other roles: the sandbox helper (argv "sandbox ...", as
// `threadline sandbox` is) and the probe that tries things from inside a
// sandbox (argv "probe OP:ARG...").

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "sandbox":
			err := Exec(os.Args[2:], os.Environ())
			fmt.Fprintln(os.Stderr, "sandbox helper:", err)
			os.Exit(126)
		case "probe":
			os.Exit(probeMain(os.Args[2:]))
		case "apply":
			os.Exit(applyMain(os.Args[2], os.Args[3:]))
		}
	}
	os.Exit(m.Run())
}

// probeResult is the outcome of one probe operation: "ok", an errno name
// (EACCES, EPERM...) or another error's text; Out is what it read.
type probeResult struct {
	Op  string `json:"op"`
	Err string `json:"err"`
	Out string `json:"out,omitempty"`
}

// probeMain runs each OP:ARG of ops and prints the results as JSON.
func probeMain(ops []string) int {
	if err := json.NewEncoder(os.Stdout).Encode(runOps(ops)); err != nil {
		return 1
	}
	return 0
}

// applyResults are the outcomes of applyMain.
type applyResults struct {
	Report string        `json:"report"`
	Main   []probeResult `json:"main"`  // on the thread that called Apply
	Other  []probeResult `json:"other"` // on a thread that existed before
}

// applyMain restricts this whole process with Apply, then runs ops on the
// thread that called it and on another thread, started and locked before
// the call.
func applyMain(policy string, ops []string) int {
	runtime.LockOSThread()
	var p Policy
	if err := json.Unmarshal([]byte(policy), &p); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ready, start, other := make(chan struct{}), make(chan struct{}), make(chan []probeResult)
	go func() {
		runtime.LockOSThread()
		close(ready)
		<-start
		other <- runOps(ops)
	}()
	<-ready
	r, err := Apply(p)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	close(start)
	res := applyResults{Report: r.String(), Main: runOps(ops), Other: <-other}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

func runOps(ops []string) []probeResult {
	var res []probeResult
	for _, op := range ops {
		out, err := probe(op)
		res = append(res, probeResult{Op: op, Err: errName(err), Out: out})
	}
	return res
}

// errName is "ok" for nil, the errno's name for a system call error, the
// text otherwise.
func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

// probe runs one operation.
func probe(op string) (string, error) {
	verb, arg, _ := strings.Cut(op, ":")
	switch verb {
	case "read":
		b, err := os.ReadFile(arg)
		return string(b), err
	case "write":
		return "", os.WriteFile(arg, []byte("probe"), 0o600)
	case "list":
		_, err := os.ReadDir(arg)
		return "", err
	case "mkdir":
		return "", os.Mkdir(arg, 0o700)
	case "rename": // rename:FROM>TO
		from, to, _ := strings.Cut(arg, ">")
		return "", os.Rename(from, to)
	case "exec":
		return "", exec.Command(arg).Run()
	case "sub": // the same probe in a child process: sub:OP:ARG
		out, err := exec.Command("/proc/self/exe", "probe", arg).Output()
		if err != nil {
			return "", err
		}
		var res []probeResult
		if err := json.Unmarshal(out, &res); err != nil || len(res) != 1 {
			return "", fmt.Errorf("sub-probe output %q", out)
		}
		if res[0].Err != "ok" {
			return "", errors.New(res[0].Err)
		}
		return res[0].Out, nil
	case "connect", "mptcp":
		proto := 0
		if verb == "mptcp" {
			proto = unix.IPPROTO_MPTCP
		}
		return "", tcp(arg, proto, false)
	case "bind", "mptcpbind":
		proto := 0
		if verb == "mptcpbind" {
			proto = unix.IPPROTO_MPTCP
		}
		return "", tcp(arg, proto, true)
	case "mount": // a tmpfs on arg, unmounted at once
		if err := unix.Mount("none", arg, "tmpfs", 0, ""); err != nil {
			return "", err
		}
		return "", unix.Unmount(arg, 0)
	case "abstract", "unix":
		c, err := net.Dial("unix", arg)
		if err == nil {
			c.Close()
		}
		return "", err
	case "open":
		f, err := os.Open(arg)
		if err == nil {
			f.Close()
		}
		return "", err
	case "readlink":
		return os.Readlink(arg)
	case "ptrace":
		pid, _ := strconv.Atoi(arg)
		if err := unix.PtraceSeize(pid); err != nil {
			return "", err
		}
		return "", unix.PtraceDetach(pid)
	case "kill":
		pid, _ := strconv.Atoi(arg)
		return "", syscall.Kill(pid, 0)
	case "status", "threadstatus": // the process's (its main thread's), the calling thread's
		file := "/proc/self/status"
		if verb == "threadstatus" {
			file = "/proc/thread-self/status"
		}
		b, err := os.ReadFile(file)
		var keep []string
		for _, line := range strings.Split(string(b), "\n") {
			for _, k := range []string{"Uid", "NoNewPrivs", "CapInh", "CapPrm", "CapEff", "CapAmb"} {
				if strings.HasPrefix(line, k+":") {
					keep = append(keep, strings.Join(strings.Fields(line), " "))
				}
			}
		}
		return strings.Join(keep, "\n"), err
	}
	return "", fmt.Errorf("unknown probe %q", op)
}

// tcp connects a plain TCP socket (or one of protocol proto) to
// 127.0.0.1:port, or binds one to it, with system calls: Go's net.Listen
// would make a Multipath TCP socket, which Landlock does not restrict.
func tcp(port string, proto int, bind bool) error {
	n, err := strconv.Atoi(port)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	addr := &unix.SockaddrInet4{Port: n, Addr: [4]byte{127, 0, 0, 1}}
	if bind {
		return unix.Bind(fd, addr)
	}
	return unix.Connect(fd, addr)
}
