package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/threadline-bot/threadline/agentcore/procrun/procruntest"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/agentcore/sandbox"
	"github.com/threadline-bot/threadline/agentcore/threadtools"
)

// thread is a threadtools.Thread that keeps what it is sent.
type thread struct {
	mu   sync.Mutex
	sent []threadtools.File
}

func (th *thread) SendFile(_ context.Context, f threadtools.File) (threadtools.Posted, error) {
	th.mu.Lock()
	defer th.mu.Unlock()
	th.sent = append(th.sent, f)
	return threadtools.Posted{Where: "the test thread"}, nil
}

func (th *thread) Files(context.Context) ([]threadtools.ThreadFile, error) {
	return []threadtools.ThreadFile{{Name: "brief.txt", Size: 6, MIMEType: "text/plain", From: "Ada"}}, nil
}

func (th *thread) Fetch(_ context.Context, name string) (io.ReadCloser, threadtools.ThreadFile, error) {
	if name != "brief.txt" {
		return nil, threadtools.ThreadFile{}, fmt.Errorf("no attachment %q", name)
	}
	return io.NopCloser(strings.NewReader("brief\n")), threadtools.ThreadFile{Name: name, Size: 6}, nil
}

func (th *thread) Sent() []threadtools.File {
	th.mu.Lock()
	defer th.mu.Unlock()
	return slices.Clone(th.sent)
}

const secret = "Vq3-configured-secret-9xT"

// build builds the packages into dir and returns their binaries' paths.
func build(t *testing.T, dir string, pkgs ...string) {
	t.Helper()
	args := append([]string{"build", "-o", dir + "/"}, pkgs...)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
}

// fixture is a thread tools server over a workspace holding a PNG, a file
// with a configured secret and a link out of the workspace.
type fixture struct {
	ws, socket, token string
	thread            *thread
	png               []byte
	logs              lockedBuffer
}

func newFixture(t *testing.T, uid, gid int) *fixture {
	t.Helper()
	f := &fixture{ws: procruntest.TraversableDir(t, "tlmcpws"), thread: &thread{}, token: threadtools.NewToken()}
	f.socket = filepath.Join(procruntest.TraversableDir(t, "tlmcpsock"), "tools.sock")
	img := image.NewRGBA(image.Rect(0, 0, 32, 32))
	for x := range 32 {
		img.Set(x, x, color.RGBA{255, 0, 0, 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	f.png = b.Bytes()
	for name, content := range map[string][]byte{
		"plot.png": f.png,
		"env.txt":  []byte("HOME=/home/x\nTOKEN=" + secret + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(f.ws, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(f.ws, "passwd")); err != nil {
		t.Fatal(err)
	}
	srv, err := threadtools.Listen(threadtools.Config{
		Socket: f.socket, UID: uid, GID: gid, Token: f.token, Workspace: f.ws,
		Thread: f.thread, Secrets: redact.New(secret),
		Logger: slog.New(slog.NewTextHandler(&f.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return f
}

// connect starts cmd as an MCP server and returns the client's session.
func connect(t *testing.T, cmd *exec.Cmd) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func call(t *testing.T, s *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: a protocol error: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// exercise lists the tools and calls each: the PNG arrives byte for byte,
// the secret file and the link out are tool errors and nothing is sent.
func (f *fixture) exercise(t *testing.T, s *mcp.ClientSession) {
	t.Helper()
	tools, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s without a description or an input schema", tool.Name)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"fetch_thread_file", "send_file", "thread_files"}) {
		t.Errorf("tools %v", names)
	}

	text, isErr := call(t, s, "send_file", map[string]any{"path": "plot.png", "title": "A plot"})
	if isErr {
		t.Fatalf("send_file plot.png: %s", text)
	}
	sum := sha256.Sum256(f.png)
	if sent := f.thread.Sent(); len(sent) != 1 || !bytes.Equal(sent[0].Content, f.png) ||
		sent[0].SHA256 != hex.EncodeToString(sum[:]) || sent[0].Title != "A plot" || sent[0].MIMEType != "image/png" {
		t.Errorf("the thread received %d files (%+v)", len(sent), sent)
	}
	if !strings.HasPrefix(text, "Sent plot.png (") {
		t.Errorf("send_file answered %q", text)
	}

	for path, want := range map[string]string{
		"env.txt": "refused: env.txt holds the value of a configured secret (line 2)",
		"passwd":  "refused: passwd leads outside the workspace",
	} {
		text, isErr := call(t, s, "send_file", map[string]any{"path": path})
		if !isErr || text != want {
			t.Errorf("send_file %s: error %v, %q; want a tool error %q", path, isErr, text, want)
		}
	}
	if n := len(f.thread.Sent()); n != 1 {
		t.Errorf("the thread received %d files, want only the PNG", n)
	}

	if text, isErr := call(t, s, "thread_files", nil); isErr || text != "brief.txt (6 B, text/plain, from Ada)" {
		t.Errorf("thread_files: %v %q", isErr, text)
	}
	text, isErr = call(t, s, "fetch_thread_file", map[string]any{"name": "brief.txt"})
	if want := "Wrote " + filepath.Join(f.ws, "brief.txt") + " (6 B)."; isErr || text != want {
		t.Errorf("fetch_thread_file: %v %q, want %q", isErr, text, want)
	}
	if text, isErr := call(t, s, "fetch_thread_file", map[string]any{"name": "nope"}); !isErr || !strings.Contains(text, "cannot fetch nope") {
		t.Errorf("fetch_thread_file nope: %v %q", isErr, text)
	}
	if strings.Contains(f.logs.String(), secret) || strings.Contains(f.logs.String(), f.token) {
		t.Errorf("the server's log holds a secret:\n%s", f.logs.String())
	}
}

func TestMCPServer(t *testing.T) {
	bin := t.TempDir()
	build(t, bin, ".")
	f := newFixture(t, -1, -1)
	cmd := exec.Command(filepath.Join(bin, "threadline-mcp"))
	cmd.Env = []string{"THREADLINE_TOOLS_SOCKET=" + f.socket, "THREADLINE_TOOLS_TOKEN=" + f.token}
	cmd.Dir = f.ws
	f.exercise(t, connect(t, cmd))
}

// The MCP server runs as the agent user inside the Landlock sandbox, as a
// host run's CLI would start it, and still reaches the run's socket.
func TestMCPServerInSandbox(t *testing.T) {
	u := procruntest.NeedAgentUser(t)
	if ok, why := sandbox.Available(); !ok {
		t.Skip(why)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	bin := procruntest.TraversableDir(t, "tlmcpbin")
	build(t, bin, ".", "../threadline-sandbox")
	f := newFixture(t, uid, gid)
	p := sandbox.Policy{
		ReadOnly:  append(sandbox.SystemReadOnly(), bin),
		ReadWrite: []string{f.ws, filepath.Dir(f.socket)},
		Devices:   sandbox.SystemDevices(),
		Scope:     true,
	}
	path, argv, err := sandbox.Command([]string{filepath.Join(bin, "threadline-sandbox")}, p, filepath.Join(bin, "threadline-mcp"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd := &exec.Cmd{Path: path, Args: argv, Dir: f.ws,
		Env:         []string{"THREADLINE_TOOLS_SOCKET=" + f.socket, "THREADLINE_TOOLS_TOKEN=" + f.token},
		SysProcAttr: &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}},
		Stderr:      &stderr,
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("threadline-mcp's stderr:\n%s", stderr.String())
		}
	})
	s := connect(t, cmd)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), fmt.Sprintf("\nUid:\t%d\t%d\t", uid, uid)) || !strings.Contains(string(status), "NoNewPrivs:\t1") {
		t.Fatalf("the MCP server does not run as %s under no_new_privs:\n%s", u.Username, status)
	}
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", cmd.Process.Pid)); exe != filepath.Join(bin, "threadline-mcp") {
		t.Fatalf("the process runs %s, not threadline-mcp", exe)
	}
	f.exercise(t, s)
}

func TestTokenLeavesTheEnvironment(t *testing.T) {
	t.Setenv(envSocket, "/run/x.sock")
	t.Setenv(envToken, "tok")
	c, err := clientFromEnv()
	if err != nil || c.Socket != "/run/x.sock" || c.Token != "tok" {
		t.Fatalf("clientFromEnv: %+v %v", c, err)
	}
	if _, ok := os.LookupEnv(envToken); ok {
		t.Error("the token is still in the environment")
	}
	if _, ok := os.LookupEnv(envSocket); ok {
		t.Error("the socket is still in the environment")
	}
	if _, err := clientFromEnv(); err == nil {
		t.Error("no socket and token accepted")
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
