// LXC: the LXD seam implemented with the lxc command-line client.

package execution

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// Errors of the LXD seam. LXC recognizes them from the client's messages;
// callers use errors.Is.
var (
	// ErrInstanceNotFound: the instance does not exist (create it).
	ErrInstanceNotFound = errors.New("lxd: instance not found")
	// ErrInstanceNotRunning: exec or file access on a stopped instance.
	ErrInstanceNotRunning = errors.New("lxd: instance is not running")
	// ErrFileNotFound: a pulled file, or the directory of a pushed one, is missing.
	ErrFileNotFound = errors.New("lxd: file not found")
	// ErrImageNotFound: the image to create an instance from does not exist.
	ErrImageNotFound = errors.New("lxd: image not found")
	// ErrInvalidImage: an image reference that ValidImage refuses.
	ErrInvalidImage = errors.New("lxd: invalid image reference")
	// ErrCommandNotFound: exec of a command the instance does not have (exit 127).
	ErrCommandNotFound = errors.New("lxd: command not found in the instance")
	// ErrUnavailable: the lxc client is missing or LXD cannot be reached.
	ErrUnavailable = errors.New("lxd: unavailable")

	// errAlreadyRunning is start's answer for a running instance (a success).
	errAlreadyRunning = errors.New("lxd: instance already running")
	// errAlreadyStopped is stop's answer for a stopped instance (a success).
	errAlreadyStopped = errors.New("lxd: instance already stopped")
)

// Instance names an LXD instance, on a remote or the client's default.
type Instance struct {
	Remote string
	Name   string
}

// Ref is the instance as lxc names it: "REMOTE:NAME" or "NAME".
func (i Instance) Ref() string {
	if i.Remote == "" {
		return i.Name
	}
	return i.Remote + ":" + i.Name
}

// String is Ref.
func (i Instance) String() string { return i.Ref() }

// ExecResult is a finished command inside an instance.
type ExecResult struct {
	ExitCode int
	Stdout   []byte
	Stderr   []byte
}

// LXD is what the preparer needs from LXD. LXC implements it; tests use fakes.
// Every method returns an error wrapping one of the sentinels above when it
// applies.
type LXD interface {
	// Start starts the instance. An instance already running is not an error;
	// a missing one is ErrInstanceNotFound.
	Start(ctx context.Context, in Instance) error
	// Create creates the instance, stopped, from image with profiles (in
	// order; none means LXD's default profile).
	Create(ctx context.Context, in Instance, image string, profiles []string) error
	// SetConfig sets one instance config key.
	SetConfig(ctx context.Context, in Instance, key, value string) error
	// AddDisk attaches the host directory source at path, as device name.
	// shift asks LXD to idmap the mount (needs kernel support).
	AddDisk(ctx context.Context, in Instance, name, source, path string, shift bool) error
	// Exec runs argv (no shell) with stdin (nil: none) and returns its exit
	// code and output. A non-zero exit is a result, not an error, except 127
	// for a missing command (ErrCommandNotFound, with the result).
	Exec(ctx context.Context, in Instance, argv []string, stdin []byte) (ExecResult, error)
	// Push writes content to path (its directory must exist) with mode,
	// owned by root. The content goes through stdin, never argv.
	Push(ctx context.Context, in Instance, path string, content []byte, mode os.FileMode) error
	// Pull reads the file at path; a missing one is ErrFileNotFound.
	Pull(ctx context.Context, in Instance, path string) ([]byte, error)
	// Delete force-deletes the instance; a missing one is ErrInstanceNotFound.
	Delete(ctx context.Context, in Instance) error
	// List returns the status ("Running", "Stopped", ...) of every instance
	// on remote ("" for the default).
	List(ctx context.Context, remote string) (map[string]string, error)
}

// Output bounds for the lxc client.
const (
	maxOutput = 8 << 20
	maxStderr = 64 << 10
)

// LXC runs the lxc client. The zero value uses "lxc" from PATH, the bot's
// filtered environment and no logging.
type LXC struct {
	// Bin is the client executable; empty means "lxc".
	Bin string
	// Env is the client's environment; nil means the host-allowed part of the
	// bot's environment (procrun.IsHostAllowed) plus LXD_CONF and LXD_DIR.
	Env []string
	// Logger gets one debug line per call (subcommand, instance, duration).
	Logger *slog.Logger
}

var _ LXD = (*LXC)(nil)

func (c *LXC) bin() string {
	if c.Bin == "" {
		return procrun.DefaultContainerClient
	}
	return c.Bin
}

func (c *LXC) env() []string {
	if c.Env != nil {
		return c.Env
	}
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if procrun.IsHostAllowed(k) || k == "LXD_CONF" || k == "LXD_DIR" {
			out = append(out, kv)
		}
	}
	return out
}

// run executes `lxc args...` with stdin and returns stdout, stderr and the
// exit code; err is set only when the client could not run at all.
func (c *LXC) run(ctx context.Context, stdin []byte, args ...string) (stdout, stderr []byte, code int, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, -1, err
	}
	path, err := exec.LookPath(c.bin())
	if err != nil {
		return nil, nil, -1, fmt.Errorf("%w: %s: %w", ErrUnavailable, c.bin(), err)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = c.env()
	cmd.WaitDelay = 5 * time.Second
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb limitedBuffer
	out.max, errb.max = maxOutput, maxStderr
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	runErr := cmd.Run()
	if c.Logger != nil {
		c.Logger.DebugContext(ctx, "lxc", "cmd", args[0], "duration", time.Since(start).Round(time.Millisecond), "exit_code", cmd.ProcessState.ExitCode())
	}
	if runErr != nil {
		var ee *exec.ExitError
		if !errors.As(runErr, &ee) || ctx.Err() != nil {
			if ctx.Err() != nil {
				return out.Bytes(), errb.Bytes(), -1, ctx.Err()
			}
			return out.Bytes(), errb.Bytes(), -1, fmt.Errorf("lxc %s: %w", args[0], runErr)
		}
		return out.Bytes(), errb.Bytes(), ee.ExitCode(), nil
	}
	return out.Bytes(), errb.Bytes(), 0, nil
}

// call runs a management subcommand and classifies a failure.
func (c *LXC) call(ctx context.Context, what string, stdin []byte, args ...string) ([]byte, error) {
	stdout, stderr, code, err := c.run(ctx, stdin, args...)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("%s: %w", what, classify(code, string(stderr)))
	}
	return stdout, nil
}

// classify maps a failed lxc call to a sentinel by LXD's stable messages
// (see ../shared/reference/lxd/LXD.md); anything else keeps the client's
// last error line.
func classify(code int, stderr string) error {
	msg := lastErrorLine(stderr)
	var sentinel error
	switch {
	case strings.Contains(msg, "is already running"):
		sentinel = errAlreadyRunning
	case strings.Contains(msg, "is already stopped"):
		sentinel = errAlreadyStopped
	case strings.Contains(msg, "Instance not found"), strings.Contains(msg, "No such object"):
		sentinel = ErrInstanceNotFound
	case strings.Contains(msg, "Instance is not running"), strings.Contains(msg, "is not running"):
		sentinel = ErrInstanceNotRunning
	case strings.Contains(msg, "Image not found"), strings.Contains(msg, "Image \"") && strings.Contains(msg, "not found"):
		sentinel = ErrImageNotFound
	case code == 127 && strings.Contains(msg, "Command not found"):
		sentinel = ErrCommandNotFound
	case msg == "Error: Not Found", strings.Contains(msg, "no such file or directory") && !strings.Contains(msg, "unix.socket"):
		sentinel = ErrFileNotFound
	case strings.Contains(msg, "unix.socket"), strings.Contains(msg, "connection refused"),
		strings.Contains(msg, "doesn't exist") && strings.Contains(msg, "remote"):
		sentinel = ErrUnavailable
	}
	text := strings.TrimPrefix(msg, "Error: ")
	if text == "" {
		text = "exit status " + strconv.Itoa(code)
	}
	if sentinel == nil {
		return errors.New(text)
	}
	return fmt.Errorf("%w: %s", sentinel, text)
}

// lastErrorLine is the client's "Error: ..." line, else its last non-empty
// stderr line (bounded).
func lastErrorLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "Error:") {
			return truncate(l, 512)
		}
	}
	return truncate(strings.TrimSpace(lines[len(lines)-1]), 512)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Start implements LXD.
func (c *LXC) Start(ctx context.Context, in Instance) error {
	_, err := c.call(ctx, "start "+in.Ref(), nil, "start", in.Ref())
	if errors.Is(err, errAlreadyRunning) {
		return nil
	}
	return err
}

// imageRef is an image reference as ValidImage accepts it: an optional
// remote name and a colon, then an alias (letters, digits, '.', '_', '-',
// '/') or a fingerprint (hex), starting with a letter or digit.
var imageRef = regexp.MustCompile(`^(?:([A-Za-z0-9][A-Za-z0-9._-]*):)?([A-Za-z0-9][A-Za-z0-9._/-]*)$`)

// ValidImage reports whether ref is an image reference the lxc client cannot
// read as anything else: "REMOTE:ALIAS", "ALIAS" or a fingerprint, with no
// leading '-', no whitespace or control character and at most one colon.
func ValidImage(ref string) bool {
	m := imageRef.FindStringSubmatch(ref)
	return m != nil && len(m[1]) <= 63 && len(m[2]) <= 255
}

// Create implements LXD with `lxc init [--profile P]... -- IMAGE REF`: after
// "--" neither can be taken for a flag. An image without a remote prefix is
// looked up on the instance's remote; one ValidImage refuses is
// ErrInvalidImage.
func (c *LXC) Create(ctx context.Context, in Instance, image string, profiles []string) error {
	if image == "" {
		return fmt.Errorf("create %s: %w: no image given", in.Ref(), ErrImageNotFound)
	}
	if !ValidImage(image) {
		return fmt.Errorf("create %s: %w: %q", in.Ref(), ErrInvalidImage, image)
	}
	if in.Remote != "" && !strings.Contains(image, ":") {
		image = in.Remote + ":" + image
	}
	args := []string{"init"}
	for _, p := range profiles {
		args = append(args, "--profile", p)
	}
	args = append(args, "--", image, in.Ref())
	_, err := c.call(ctx, "create "+in.Ref(), nil, args...)
	return err
}

// SetConfig implements LXD.
func (c *LXC) SetConfig(ctx context.Context, in Instance, key, value string) error {
	_, err := c.call(ctx, "config "+in.Ref(), nil, "config", "set", in.Ref(), key+"="+value)
	return err
}

// AddDisk implements LXD.
func (c *LXC) AddDisk(ctx context.Context, in Instance, name, source, path string, shift bool) error {
	args := []string{"config", "device", "add", in.Ref(), name, "disk", "source=" + source, "path=" + path}
	if shift {
		args = append(args, "shift=true")
	}
	_, err := c.call(ctx, "add disk to "+in.Ref(), nil, args...)
	return err
}

// Exec implements LXD.
func (c *LXC) Exec(ctx context.Context, in Instance, argv []string, stdin []byte) (ExecResult, error) {
	if len(argv) == 0 {
		return ExecResult{}, errors.New("exec: empty command")
	}
	args := []string{"exec", in.Ref(), "--force-noninteractive"}
	if stdin == nil {
		args = append(args, "--disable-stdin")
	}
	args = append(append(args, "--"), argv...)
	stdout, stderr, code, err := c.run(ctx, stdin, args...)
	res := ExecResult{ExitCode: code, Stdout: stdout, Stderr: stderr}
	if err != nil {
		return res, err
	}
	if code == 0 {
		return res, nil
	}
	// The client's own failures are exit 1 with an "Error: " line; a
	// command's non-zero exit passes through as the result.
	if cerr := classify(code, string(stderr)); errors.Is(cerr, ErrInstanceNotFound) ||
		errors.Is(cerr, ErrInstanceNotRunning) || errors.Is(cerr, ErrUnavailable) || errors.Is(cerr, ErrCommandNotFound) {
		return res, fmt.Errorf("exec in %s: %w", in.Ref(), cerr)
	}
	return res, nil
}

// Push implements LXD with `lxc file push - REF/PATH --mode M --uid 0 --gid 0`,
// the content on stdin.
func (c *LXC) Push(ctx context.Context, in Instance, path string, content []byte, mode os.FileMode) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("push %s: path %q is not absolute", in.Ref(), path)
	}
	if content == nil {
		content = []byte{}
	}
	_, err := c.call(ctx, "push "+path+" to "+in.Ref(), content,
		"file", "push", "-", in.Ref()+path, "--mode", fmt.Sprintf("%04o", mode.Perm()), "--uid", "0", "--gid", "0")
	return err
}

// Pull implements LXD with `lxc file pull REF/PATH -`.
func (c *LXC) Pull(ctx context.Context, in Instance, path string) ([]byte, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("pull %s: path %q is not absolute", in.Ref(), path)
	}
	return c.call(ctx, "pull "+path+" from "+in.Ref(), nil, "file", "pull", in.Ref()+path, "-")
}

// Delete implements LXD.
func (c *LXC) Delete(ctx context.Context, in Instance) error {
	_, err := c.call(ctx, "delete "+in.Ref(), nil, "delete", "--force", in.Ref())
	return err
}

// List implements LXD with `lxc list [REMOTE:] --format json`.
func (c *LXC) List(ctx context.Context, remote string) (map[string]string, error) {
	args := []string{"list"}
	if remote != "" {
		args = append(args, remote+":")
	}
	out, err := c.call(ctx, "list", nil, append(args, "--format", "json")...)
	if err != nil {
		return nil, err
	}
	var list []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	m := make(map[string]string, len(list))
	for _, i := range list {
		m[i.Name] = i.Status
	}
	return m, nil
}

// limitedBuffer keeps the first max bytes written and discards the rest.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

var _ io.Writer = (*limitedBuffer)(nil)
