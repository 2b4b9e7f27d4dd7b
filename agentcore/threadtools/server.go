package threadtools

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/shipgate"
)

// Config configures a run's Server.
type Config struct {
	// Socket is the path of the unix socket to create; it must not exist.
	Socket string
	// UID and GID own the socket and the files fetch_thread_file writes:
	// the agent user. -1 leaves the bot's own.
	UID, GID int
	// Token is the run's token (NewToken); every request must carry it.
	Token string
	// Workspace is the run's workspace on the bot's host.
	Workspace string
	// AgentWorkspace is the workspace's path as the agent sees it (inside a
	// container: "/workspace"); empty: Workspace.
	AgentWorkspace string
	// Thread is the run's chat thread.
	Thread Thread
	// Secrets are the configured secret values (the bot's redactor); nil:
	// none. A file holding one is refused.
	Secrets shipgate.Secrets
	// MaxBytes bounds a file sent or fetched; 0: DefaultMaxBytes.
	MaxBytes int64
	// Timeout bounds one request; 0: RequestTimeout.
	Timeout time.Duration
	// Logger receives the server's lines; nil: slog.Default().
	Logger *slog.Logger
	// OnSent, when set, is told of every file posted.
	OnSent func(Sent)
	// OnRefused, when set, is told of every file send_file refused: its
	// cleaned name and the reason, a line for the person.
	OnRefused func(name, reason string)
}

// Server serves one run's thread tools on its socket.
type Server struct {
	cfg    Config
	log    *slog.Logger
	root   *os.File // the workspace, O_PATH
	ln     *net.UnixListener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	done   bool
	images int             // images posted or refused (their names' numbers)
	posted map[string]bool // the SHA-256 of the images posted

	// afterStat, when set (tests), runs between a sent file's fstat and
	// its read.
	afterStat func()
}

// NewToken returns a fresh random token: 32 bytes, hex.
func NewToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// Listen creates cfg.Socket (mode 0600, owned by cfg.UID:cfg.GID) and serves
// requests on it until Close.
func Listen(cfg Config) (*Server, error) {
	if cfg.Token == "" {
		return nil, errors.New("threadtools: no token")
	}
	if cfg.Thread == nil {
		return nil, errors.New("threadtools: no thread")
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.AgentWorkspace == "" {
		cfg.AgentWorkspace = cfg.Workspace
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	fd, err := unix.Open(cfg.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("threadtools: workspace: %w", &os.PathError{Op: "open", Path: cfg.Workspace, Err: err})
	}
	root := os.NewFile(uintptr(fd), cfg.Workspace)
	ln, err := listen(cfg.Socket, cfg.UID, cfg.GID)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("threadtools: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, log: log, root: root, ln: ln, ctx: ctx, cancel: cancel,
		conns: map[net.Conn]struct{}{}}
	s.wg.Go(s.accept)
	return s, nil
}

// listen binds a unix socket at path that only uid (and root) may connect
// to: bound in a private directory beside path, given its mode and owner
// there, then renamed into place, so it is never reachable with wider
// permissions.
func listen(path string, uid, gid int) (*net.UnixListener, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".threadtools-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bound := filepath.Join(tmp, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: bound, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false)
	err = os.Chmod(bound, 0o600)
	if err == nil && (uid >= 0 || gid >= 0) {
		err = os.Lchown(bound, uid, gid)
	}
	if err == nil {
		err = unix.Renameat2(unix.AT_FDCWD, bound, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE)
		if err != nil {
			err = &os.LinkError{Op: "rename", Old: bound, New: path, Err: err}
		}
	}
	if err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// Socket is the socket's path.
func (s *Server) Socket() string { return s.cfg.Socket }

// Close stops serving: it closes the socket and every connection, waits
// for requests in progress (their context is cancelled) and removes the
// socket file.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return nil
	}
	s.done = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	err := s.ln.Close()
	s.wg.Wait()
	if rerr := os.Remove(s.cfg.Socket); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	s.root.Close()
	return err
}

func (s *Server) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() == nil {
				s.log.Error("thread tools: accept", logkey.Err, err)
			}
			return
		}
		s.mu.Lock()
		if s.done {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Go(func() {
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			s.serve(c)
		})
	}
}

// request is one request line.
type request struct {
	Token string `json:"token"`
	Op    string `json:"op"`
	Path  string `json:"path,omitempty"`
	Title string `json:"title,omitempty"`
	Name  string `json:"name,omitempty"`
}

// response is one response line.
type response struct {
	Error   string       `json:"error,omitempty"`
	Sent    *Sent        `json:"sent,omitempty"`
	Files   []ThreadFile `json:"files,omitempty"`
	Fetched *Fetched     `json:"fetched,omitempty"`
}

// The ops.
const (
	opSendFile  = "send_file"
	opFiles     = "thread_files"
	opFetchFile = "fetch_thread_file"
)

func (s *Server) serve(c net.Conn) {
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 4096), MaxRequestBytes)
	enc := json.NewEncoder(c)
	for sc.Scan() {
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			enc.Encode(response{Error: "malformed request: " + err.Error()})
			continue
		}
		if subtle.ConstantTimeCompare([]byte(req.Token), []byte(s.cfg.Token)) != 1 {
			s.log.Warn("thread tools: request with a wrong token refused", logkey.Method, req.Op)
			enc.Encode(response{Error: "refused: wrong token"})
			return
		}
		if err := enc.Encode(s.handle(req)); err != nil {
			return
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, net.ErrClosed) {
		s.log.Warn("thread tools: connection", logkey.Err, err)
		if errors.Is(err, bufio.ErrTooLong) {
			enc.Encode(response{Error: fmt.Sprintf("request longer than %d bytes", MaxRequestBytes)})
		}
	}
}

// RequestTimeout bounds one request: the post or download of a file of
// MaxBytes to the chat platform, a slow platform included; past it the
// agent gets an error saying so, and its run goes on.
const RequestTimeout = 5 * time.Minute

func (s *Server) handle(req request) response {
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout())
	defer cancel()
	resp := s.handleIn(ctx, req)
	if resp.Error != "" && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		resp.Error = fmt.Sprintf("%s: gave up after %s", req.Op, s.timeout())
	}
	return resp
}

func (s *Server) timeout() time.Duration {
	if s.cfg.Timeout > 0 {
		return s.cfg.Timeout
	}
	return RequestTimeout
}

func (s *Server) handleIn(ctx context.Context, req request) response {
	switch req.Op {
	case opSendFile:
		sent, err := s.sendFile(ctx, req.Path, req.Title)
		if err != nil {
			return response{Error: err.Error()}
		}
		return response{Sent: &sent}
	case opFiles:
		files, err := s.cfg.Thread.Files(ctx)
		if err != nil {
			s.log.Warn("thread tools: thread_files", logkey.Err, err)
			return response{Error: "cannot list the thread's files: " + err.Error()}
		}
		if files == nil {
			files = []ThreadFile{}
		}
		return response{Files: files}
	case opFetchFile:
		f, err := s.fetchFile(ctx, req.Name)
		if err != nil {
			return response{Error: err.Error()}
		}
		return response{Fetched: &f}
	}
	return response{Error: fmt.Sprintf("unknown op %q", req.Op)}
}

// copyLimited copies r to w, failing with errTooLarge past max bytes.
func copyLimited(w io.Writer, r io.Reader, max int64) (int64, error) {
	n, err := io.Copy(w, io.LimitReader(r, max+1))
	if err == nil && n > max {
		err = errTooLarge
	}
	return n, err
}

var errTooLarge = errors.New("too large")
