package threadtools

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/agentcore/procrun/procruntest"
	"github.com/threadline-bot/threadline/agentcore/redact"
)

// fakeThread is a Thread that keeps what it is sent and serves attachments
// from a map.
type fakeThread struct {
	mu          sync.Mutex
	sent        []File
	attachments map[string][]byte
}

func (f *fakeThread) SendFile(_ context.Context, file File) (Posted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, file)
	return Posted{Where: "test thread", URL: "https://chat.example/f/" + file.Name}, nil
}

func (f *fakeThread) Files(context.Context) ([]ThreadFile, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ThreadFile
	for name, b := range f.attachments {
		out = append(out, ThreadFile{Name: name, Size: int64(len(b)), From: "Ada"})
	}
	return out, nil
}

func (f *fakeThread) Fetch(_ context.Context, name string) (io.ReadCloser, ThreadFile, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.attachments[name]
	if !ok {
		return nil, ThreadFile{}, fmt.Errorf("no attachment %q in the thread", name)
	}
	return io.NopCloser(bytes.NewReader(b)), ThreadFile{Name: name}, nil
}

func (f *fakeThread) attach(name string, content []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attachments[name] = content
}

func (f *fakeThread) Sent() []File {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]File(nil), f.sent...)
}

// harness is a running Server over a fresh workspace.
type harness struct {
	srv       *Server
	ws        string
	thread    *fakeThread
	client    *Client
	logs      *syncBuffer
	mu        sync.Mutex
	refused   []string // "name: reason"
	sentCalls []Sent
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

const configuredSecret = "hunter2-Zq8vR4tYp1"

func start(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	h := &harness{ws: t.TempDir(), thread: &fakeThread{attachments: map[string][]byte{}}, logs: &syncBuffer{}}
	cfg := Config{
		Socket:    filepath.Join(procruntest.TraversableDir(t, "tltools"), "tools.sock"),
		UID:       -1,
		GID:       -1,
		Token:     NewToken(),
		Workspace: h.ws,
		Thread:    h.thread,
		Secrets:   redact.New(configuredSecret),
		Logger:    slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnRefused: func(name, reason string) {
			h.mu.Lock()
			h.refused = append(h.refused, name+": "+reason)
			h.mu.Unlock()
		},
		OnSent: func(s Sent) {
			h.mu.Lock()
			h.sentCalls = append(h.sentCalls, s)
			h.mu.Unlock()
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	h.srv = srv
	h.client = &Client{Socket: cfg.Socket, Token: cfg.Token}
	return h
}

func (h *harness) write(t *testing.T, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(h.ws, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (h *harness) refusals() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.refused...)
}

func pngBytes(t testing.TB) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 16, 8))
	for x := range 16 {
		for y := range 8 {
			img.Set(x, y, color.RGBA{uint8(x * 16), uint8(y * 32), 200, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// privateKeyPEM returns a freshly generated EC private key in PEM.
func privateKeyPEM(t testing.TB) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestSendFilePNG(t *testing.T) {
	h := start(t, nil)
	img := pngBytes(t)
	h.write(t, "out/chart.png", img)
	sent, err := h.client.SendFile(t.Context(), "out/chart.png", "The chart")
	if err != nil {
		t.Fatal(err)
	}
	got := h.thread.Sent()
	if len(got) != 1 {
		t.Fatalf("thread got %d files, want 1", len(got))
	}
	f := got[0]
	if !bytes.Equal(f.Content, img) || f.Size != int64(len(img)) || f.SHA256 != sha(img) {
		t.Errorf("thread got %d bytes sha %s, want %d bytes sha %s", f.Size, f.SHA256, len(img), sha(img))
	}
	if f.Name != "chart.png" || f.Title != "The chart" || f.MIMEType != "image/png" {
		t.Errorf("thread got name %q title %q type %q", f.Name, f.Title, f.MIMEType)
	}
	want := Sent{Name: "chart.png", Title: "The chart", Size: int64(len(img)), SHA256: sha(img), MIMEType: "image/png",
		Posted: Posted{Where: "test thread", URL: "https://chat.example/f/chart.png"}}
	if sent != want {
		t.Errorf("agent got %+v, want %+v", sent, want)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.sentCalls) != 1 || h.sentCalls[0] != want {
		t.Errorf("OnSent got %+v, want [%+v]", h.sentCalls, want)
	}
	if strings.Contains(h.logs.String(), h.client.Token) {
		t.Error("the log holds the token")
	}
}

func TestSendFileAllowed(t *testing.T) {
	h := start(t, nil)
	h.write(t, "docs/notes.md", []byte("# Notes\nnothing secret here\n"))
	if err := os.Symlink("docs/notes.md", filepath.Join(h.ws, "inside-link.md")); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"docs/notes.md",
		"./docs/../docs/notes.md",
		filepath.Join(h.ws, "docs/notes.md"), // absolute, inside
		"inside-link.md",                     // a link that stays beneath
	} {
		if _, err := h.client.SendFile(t.Context(), path, ""); err != nil {
			t.Errorf("send_file %s: %v", path, err)
		}
	}
	got := h.thread.Sent()
	if len(got) != 4 {
		t.Fatalf("thread got %d files, want 4", len(got))
	}
	if got[0].MIMEType != "text/markdown; charset=utf-8" {
		t.Errorf("markdown posted as %q", got[0].MIMEType)
	}
	if got[3].Name != "inside-link.md" {
		t.Errorf("link posted as %q", got[3].Name)
	}
	if r := h.refusals(); len(r) != 0 {
		t.Errorf("refusals: %q", r)
	}
}

func TestSendFileRefused(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("outside the workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := start(t, func(c *Config) { c.MaxBytes = 1 << 10 })
	ws := h.ws
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(outside, filepath.Join(ws, "abs-link.txt")))
	must(os.Symlink("../"+filepath.Base(filepath.Dir(outside))+"/outside.txt", filepath.Join(ws, "rel-link.txt")))
	must(os.Symlink("/dev/null", filepath.Join(ws, "null")))
	must(os.Symlink("/proc/self/root/etc/hostname", filepath.Join(ws, "magic")))
	must(os.Mkdir(filepath.Join(ws, "dir"), 0o755))
	must(unix.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	if os.Geteuid() == 0 {
		must(unix.Mknod(filepath.Join(ws, "zero"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))))
	}
	h.write(t, "big.bin", bytes.Repeat([]byte{0}, 1<<10+1))
	h.write(t, "config.txt", []byte("a = 1\nb = 2\npassword = "+configuredSecret+"\n"))
	h.write(t, "id_ec.pem", privateKeyPEM(t))

	cases := []struct{ path, want string }{
		{"abs-link.txt", "refused: abs-link.txt leads outside the workspace"},
		{"rel-link.txt", "refused: rel-link.txt leads outside the workspace"},
		{"../" + filepath.Base(filepath.Dir(outside)) + "/outside.txt", "leads outside the workspace"},
		{outside, "is outside the workspace"},
		{"null", "refused: null leads outside the workspace"},
		{"magic", "refused: magic leads outside the workspace"},
		{"dir", "refused: dir is a directory, not a regular file"},
		{"fifo", "refused: fifo is a FIFO, not a regular file"},
		{"big.bin", "refused: big.bin is 1 KB, over the 1 KB limit"},
		{"config.txt", "refused: config.txt holds the value of a configured secret (line 3)"},
		{"id_ec.pem", "refused: id_ec.pem holds a private key (line 1)"},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct{ path, want string }{"zero", "refused: zero is a device, not a regular file"})
	}
	for _, c := range cases {
		_, err := h.client.SendFile(t.Context(), c.path, "")
		var te *ToolError
		if !errors.As(err, &te) || !strings.HasPrefix(te.Reason, "refused: ") || !strings.Contains(te.Reason, c.want) {
			t.Errorf("send_file %s: %v, want a refusal %q", c.path, err, c.want)
		}
	}
	if got := h.thread.Sent(); len(got) != 0 {
		t.Errorf("thread got %d files, want none", len(got))
	}
	r := h.refusals()
	if len(r) != len(cases) {
		t.Errorf("OnRefused told of %d refusals, want %d: %q", len(r), len(cases), r)
	}
	if len(r) > 9 && r[9] != "config.txt: config.txt holds the value of a configured secret (line 3)" {
		t.Errorf("OnRefused got %q", r[9])
	}
	logs := h.logs.String()
	if strings.Contains(logs, configuredSecret) || strings.Contains(logs, "PRIVATE KEY") {
		t.Errorf("the log holds a file's content:\n%s", logs)
	}
}

func TestSendFileMissing(t *testing.T) {
	h := start(t, nil)
	_, err := h.client.SendFile(t.Context(), "nope.txt", "")
	if err == nil || err.Error() != "no file nope.txt in the workspace" {
		t.Errorf("send_file of a missing file: %v", err)
	}
	if len(h.refusals()) != 0 {
		t.Error("a missing file counted as a refusal")
	}
}

// A file that grows past the limit between its fstat and its read is
// refused, not sent cut.
func TestSendFileGrowing(t *testing.T) {
	h := start(t, func(c *Config) { c.MaxBytes = 4 << 10 })
	p := h.write(t, "growing.log", bytes.Repeat([]byte("line\n"), 800)) // 4000 bytes
	h.srv.afterStat = func() {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		f.Write(bytes.Repeat([]byte("more\n"), 100))
	}
	_, err := h.client.SendFile(t.Context(), "growing.log", "")
	if err == nil || err.Error() != "refused: growing.log grew past the 4 KB limit while it was read" {
		t.Errorf("send_file of a growing file: %v", err)
	}
	if got := h.thread.Sent(); len(got) != 0 {
		t.Errorf("thread got %d files, want none", len(got))
	}
}

func TestSendFileCleansName(t *testing.T) {
	h := start(t, nil)
	name := "re\x1b[31mport\u202eFDP.txt"
	h.write(t, name, []byte("report\n"))
	sent, err := h.client.SendFile(t.Context(), name, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "re_[31mport_FDP.txt"; sent.Name != want || h.thread.Sent()[0].Name != want {
		t.Errorf("posted as %q, want %q", sent.Name, want)
	}
}

func TestCleanName(t *testing.T) {
	for in, want := range map[string]string{
		"chart.png":                       "chart.png",
		"a\nb\tc.txt":                     "a_b_c.txt",
		`..\..\win.txt`:                   ".._.._win.txt",
		"../../etc":                       ".._.._etc",
		"..":                              "file",
		"  ":                              "file",
		"bad\xffutf8.txt":                 "bad?utf8.txt",
		"line\u2028sep":                   "line_sep",
		strings.Repeat("é", 200) + ".txt": strings.Repeat("é", 125) + ".txt",
	} {
		if got := CleanName(in); got != want {
			t.Errorf("CleanName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWrongToken(t *testing.T) {
	h := start(t, nil)
	h.write(t, "a.txt", []byte("a\n"))
	const wrong = "not-the-token-0123456789"
	bad := &Client{Socket: h.client.Socket, Token: wrong}
	_, err := bad.SendFile(t.Context(), "a.txt", "")
	if err == nil || err.Error() != "refused: wrong token" {
		t.Errorf("a wrong token: %v", err)
	}
	if _, err := (&Client{Socket: h.client.Socket}).Files(t.Context()); err == nil {
		t.Error("no token was accepted")
	}
	// The connection is closed after the refusal.
	c, err := net.Dial("unix", h.client.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, `{"token":%q,"op":"thread_files"}`+"\n"+`{"token":%q,"op":"thread_files"}`+"\n", wrong, h.client.Token)
	r := bufio.NewReader(c)
	line, _ := r.ReadString('\n')
	if !strings.Contains(line, "wrong token") {
		t.Errorf("first response %q", line)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if rest, err := r.ReadString('\n'); err != io.EOF {
		t.Errorf("after a wrong token the connection answered %q (%v)", rest, err)
	}
	if got := h.thread.Sent(); len(got) != 0 {
		t.Errorf("thread got %d files", len(got))
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "wrong token") {
		t.Errorf("the refusal is not logged:\n%s", logs)
	}
	if strings.Contains(logs, wrong) || strings.Contains(logs, h.client.Token) {
		t.Errorf("the log holds a token:\n%s", logs)
	}
	// The right token still works.
	if _, err := h.client.SendFile(t.Context(), "a.txt", ""); err != nil {
		t.Error(err)
	}
}

// Several requests on one connection are answered in order.
func TestProtocolSeveralRequests(t *testing.T) {
	h := start(t, nil)
	h.thread.attach("x.txt", []byte("x"))
	c, err := net.Dial("unix", h.client.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "not json\n{\"token\":%q,\"op\":\"thread_files\"}\n{\"token\":%q,\"op\":\"dance\"}\n", h.client.Token, h.client.Token)
	r := bufio.NewReader(c)
	var got []response
	for range 3 {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var resp response
		if err := json.Unmarshal(line, &resp); err != nil {
			t.Fatal(err)
		}
		got = append(got, resp)
	}
	if !strings.HasPrefix(got[0].Error, "malformed request") || len(got[1].Files) != 1 || got[2].Error != `unknown op "dance"` {
		t.Errorf("responses %+v", got)
	}
}

func TestThreadFilesAndFetch(t *testing.T) {
	h := start(t, nil)
	pdf := []byte("%PDF-1.4 not really\n")
	h.thread.attach("report.pdf", pdf)
	h.thread.attach("../../etc/evil", []byte("evil\n"))
	h.thread.attach("link.txt", []byte("through the link?\n"))
	outside := filepath.Join(t.TempDir(), "target.txt")
	if err := os.Symlink(outside, filepath.Join(h.ws, "link.txt")); err != nil {
		t.Fatal(err)
	}

	files, err := h.client.Files(t.Context())
	if err != nil || len(files) != 3 {
		t.Fatalf("thread_files: %v %v", files, err)
	}
	for i, want := range []string{"report.pdf", "report (1).pdf"} {
		f, err := h.client.FetchFile(t.Context(), "report.pdf")
		if err != nil {
			t.Fatal(err)
		}
		if f.Name != want || f.Path != filepath.Join(h.ws, want) || f.Size != int64(len(pdf)) || f.SHA256 != sha(pdf) {
			t.Errorf("fetch %d: %+v", i, f)
		}
		if b, err := os.ReadFile(f.Path); err != nil || !bytes.Equal(b, pdf) {
			t.Errorf("fetch %d wrote %q (%v)", i, b, err)
		}
	}
	f, err := h.client.FetchFile(t.Context(), "../../etc/evil")
	if err != nil || f.Path != filepath.Join(h.ws, ".._.._etc_evil") {
		t.Errorf("fetch of a name with separators: %+v %v", f, err)
	}
	f, err = h.client.FetchFile(t.Context(), "link.txt")
	if err != nil || f.Name != "link (1).txt" {
		t.Errorf("fetch over a link: %+v %v", f, err)
	}
	if _, err := os.Lstat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a fetch wrote through a link out of the workspace: %v", err)
	}
	if _, err := h.client.FetchFile(t.Context(), "missing.txt"); err == nil || !strings.Contains(err.Error(), "cannot fetch missing.txt") {
		t.Errorf("fetch of a missing attachment: %v", err)
	}
}

func TestFetchOverLimit(t *testing.T) {
	h := start(t, func(c *Config) { c.MaxBytes = 10 })
	h.thread.attach("big.txt", []byte("eleven byte"))
	_, err := h.client.FetchFile(t.Context(), "big.txt")
	if err == nil || err.Error() != "big.txt is over the 10 B limit" {
		t.Errorf("fetch over the limit: %v", err)
	}
	entries, _ := os.ReadDir(h.ws)
	if len(entries) != 0 {
		t.Errorf("the workspace holds %v after a refused fetch", entries)
	}
}

func TestAgentWorkspace(t *testing.T) {
	h := start(t, func(c *Config) { c.AgentWorkspace = "/workspace" })
	h.write(t, "a.txt", []byte("a\n"))
	if _, err := h.client.SendFile(t.Context(), "/workspace/a.txt", ""); err != nil {
		t.Error(err)
	}
	if _, err := h.client.SendFile(t.Context(), "/workspace/../etc/passwd", ""); err == nil || !strings.Contains(err.Error(), "outside the workspace") {
		t.Errorf("an absolute path out of the agent's workspace: %v", err)
	}
	h.thread.attach("b.txt", []byte("b"))
	if f, err := h.client.FetchFile(t.Context(), "b.txt"); err != nil || f.Path != "/workspace/b.txt" {
		t.Errorf("fetch: %+v %v", f, err)
	}
}

func TestCloseRemovesSocket(t *testing.T) {
	h := start(t, nil)
	if err := h.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(h.client.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket after Close: %v", err)
	}
	if _, err := h.client.Files(t.Context()); err == nil {
		t.Error("a closed server answered")
	}
	entries, _ := os.ReadDir(filepath.Dir(h.client.Socket))
	if len(entries) != 0 {
		t.Errorf("the socket's directory holds %v", entries)
	}
}

func TestListenRefusesExisting(t *testing.T) {
	h := start(t, nil)
	_, err := Listen(Config{Socket: h.client.Socket, UID: -1, GID: -1, Token: "t", Workspace: h.ws, Thread: h.thread})
	if !errors.Is(err, os.ErrExist) {
		t.Errorf("a second Listen on the same socket: %v", err)
	}
}
