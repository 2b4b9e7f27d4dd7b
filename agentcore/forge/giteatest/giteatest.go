package giteatest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Version is the Gitea version the harness expects.
const Version = "1.27.3"

// EnvBin names the Gitea binary (options/ and templates/ beside it).
const EnvBin = "GITEA_BIN"

// EnvRequire makes a missing Gitea a test failure instead of a skip.
const EnvRequire = "THREADLINE_E2E"

// EnvScale multiplies the harness's waits on a slow machine (the variable
// dendritetest reads too).
const EnvScale = "THREADLINE_TEST_TIMEOUT_SCALE"

// Admin is the name of the admin user of every test server, the owner of
// the repositories CreateRepo makes.
const Admin = "alice"

// ErrNotInstalled is returned by Binary when the Gitea binary or its
// options/ and templates/ are missing.
var ErrNotInstalled = errors.New("gitea is not installed (run scripts/install-gitea.sh)")

// runUser is the unprivileged user Gitea runs as when the tests run as root.
const runUser = "nobody"

// Binary returns the path of the Gitea binary: $GITEA_BIN, or the default
// cache of scripts/install-gitea.sh. The error wraps ErrNotInstalled when the
// binary, options/ or templates/ is missing.
func Binary() (string, error) {
	bin := os.Getenv(EnvBin)
	if bin == "" {
		cache := os.Getenv("THREADLINE_CACHE")
		if cache == "" {
			base := os.Getenv("XDG_CACHE_HOME")
			if base == "" {
				home, err := os.UserHomeDir()
				if err != nil {
					return "", fmt.Errorf("%w: %w", ErrNotInstalled, err)
				}
				base = filepath.Join(home, ".cache")
			}
			cache = filepath.Join(base, "threadline-ci")
		}
		bin = filepath.Join(cache, "gitea-"+Version, "gitea")
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%w: no executable at %s", ErrNotInstalled, bin)
	}
	for _, d := range []string{"options", "templates"} {
		if fi, err := os.Stat(filepath.Join(filepath.Dir(bin), d)); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("%w: no %s/ beside %s", ErrNotInstalled, d, bin)
		}
	}
	return bin, nil
}

// Scale returns d multiplied by $THREADLINE_TEST_TIMEOUT_SCALE (unset or
// invalid: 1).
func Scale(d time.Duration) time.Duration {
	if f, err := strconv.ParseFloat(os.Getenv(EnvScale), 64); err == nil && f > 0 {
		return time.Duration(float64(d) * f)
	}
	return d
}

// Server is a running Gitea.
type Server struct {
	// URL is the server's root, http://127.0.0.1:<port> (no trailing slash);
	// the API is under URL + "/api/v1".
	URL string
	// User and Password are the admin's (Admin).
	User, Password string
	// Token is an API token of the admin with the scopes Scopes.
	Token string
	// Dir is the work path (app.ini in custom/conf, the database, the
	// repositories, the log).
	Dir string

	base  string // removed at Cleanup: holds the work path and the static files
	bin   string // the binary, as reachable by the server's user
	cred  *syscall.Credential
	env   []string
	cmd   *exec.Cmd
	done  chan struct{}
	log   *tailBuffer
	http  *http.Client
	ready time.Duration

	stopOnce sync.Once
	stopErr  error
}

// Scopes are the scopes of Server.Token.
var Scopes = []string{"write:repository", "write:issue", "write:user", "write:organization"}

// Start starts a Gitea for the test and stops and removes it in t.Cleanup. It
// skips (or, with THREADLINE_E2E=1, fails) when Gitea is not installed.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("giteatest: %v (THREADLINE_E2E=1 requires it)", err)
		}
		t.Skipf("giteatest: %v; skipping the tests against a real Gitea", err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("giteatest: Gitea needs git: %v", err)
	}
	s, err := prepare(bin)
	if s != nil {
		t.Cleanup(func() {
			if err := s.Stop(); err != nil {
				t.Errorf("giteatest: stop: %v", err)
			}
			if t.Failed() && s.log != nil {
				t.Logf("giteatest: log of the server at %s:\n%s", s.URL, s.LogTail(8000))
			}
			if err := os.RemoveAll(s.base); err != nil {
				t.Errorf("giteatest: remove %s: %v", s.base, err)
			}
		})
	}
	if err != nil {
		t.Fatalf("giteatest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Scale(3*time.Minute))
	defer cancel()
	for attempt := 1; ; attempt++ {
		err = s.start(ctx)
		if err == nil {
			break
		}
		if attempt == 3 || ctx.Err() != nil {
			t.Fatalf("giteatest: start: %v\nlog:\n%s", err, s.LogTail(4000))
		}
		t.Logf("giteatest: start attempt %d: %v; trying another port", attempt, err)
	}
	if err := s.createToken(ctx); err != nil {
		t.Fatalf("giteatest: token: %v", err)
	}
	return s
}

// prepare lays out the work path, writes app.ini, migrates the database and
// creates the admin. The server is returned (for cleanup) even with an error.
func prepare(bin string) (*Server, error) {
	base, err := os.MkdirTemp("", "giteatest-")
	if err != nil {
		return nil, err
	}
	s := &Server{
		base:     base,
		Dir:      filepath.Join(base, "work"),
		User:     Admin,
		Password: "giteatest-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		log:      &tailBuffer{max: 256 << 10},
		http:     &http.Client{Timeout: Scale(60 * time.Second)},
	}
	runAs, err := s.account()
	if err != nil {
		return s, err
	}
	// The static files (binary, options/, templates/) beside the work path,
	// readable by the server's user; base itself is traversable only.
	static := filepath.Join(base, "static")
	if err := linkTree(filepath.Dir(bin), static, []string{filepath.Base(bin), "options", "templates"}); err != nil {
		return s, fmt.Errorf("stage the binary and its assets: %w", err)
	}
	s.bin = filepath.Join(static, filepath.Base(bin))
	for _, d := range []string{s.Dir, filepath.Join(s.Dir, "custom", "conf"), filepath.Join(s.Dir, "data"), filepath.Join(s.Dir, "repos"), filepath.Join(s.Dir, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return s, err
		}
	}
	if s.cred != nil {
		if err := os.Chmod(base, 0o711); err != nil {
			return s, err
		}
		if err := chownTree(s.Dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return s, err
		}
	}
	s.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(s.Dir, "home"),
		"USER=" + runAs,
		"GITEA_WORK_DIR=" + s.Dir,
		"LANG=C.UTF-8",
	}
	port, err := freePort()
	if err != nil {
		return s, err
	}
	if err := s.writeConfig(runAs, static, port); err != nil {
		return s, err
	}
	if out, err := s.run("migrate"); err != nil {
		return s, fmt.Errorf("gitea migrate: %w: %s", err, out)
	}
	if out, err := s.run("admin", "user", "create", "--username", s.User, "--password", s.Password,
		"--email", s.User+"@giteatest.invalid", "--admin", "--must-change-password=false"); err != nil {
		return s, fmt.Errorf("gitea admin user create: %w: %s", err, out)
	}
	return s, nil
}

// account decides the user the server runs as: nobody when the tests run as
// root (Gitea refuses root), else the current user. It returns its name.
func (s *Server) account() (string, error) {
	if os.Geteuid() != 0 {
		u, err := user.Current()
		if err != nil {
			return "", err
		}
		return u.Username, nil
	}
	u, err := user.Lookup(runUser)
	if err != nil {
		return "", fmt.Errorf("no user %s to run Gitea as (it refuses root): %w", runUser, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return "", err
	}
	s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	return u.Username, nil
}

// writeConfig writes custom/conf/app.ini for the port.
func (s *Server) writeConfig(runAs, static string, port int) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s.URL = "http://" + addr
	ini := fmt.Sprintf(`APP_NAME = giteatest
RUN_USER = %[1]s
RUN_MODE = prod
WORK_PATH = %[2]s

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[3]d
ROOT_URL = http://%[4]s/
STATIC_ROOT_PATH = %[5]s
OFFLINE_MODE = true
DISABLE_SSH = true
START_SSH_SERVER = false
LFS_START_SERVER = false
GRACEFUL_HAMMER_TIME = 5s

[database]
DB_TYPE = sqlite3
PATH = %[2]s/data/gitea.db
SQLITE_JOURNAL_MODE = WAL

[security]
INSTALL_LOCK = true

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false
ENABLE_NOTIFY_MAIL = false

[repository]
ROOT = %[2]s/repos
DEFAULT_BRANCH = main

[indexer]
ISSUE_INDEXER_TYPE = db

[session]
PROVIDER = memory

[mailer]
ENABLED = false

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[log]
MODE = console
LEVEL = Warn
`, runAs, s.Dir, port, addr, static)
	path := filepath.Join(s.Dir, "custom", "conf", "app.ini")
	// Gitea writes generated secrets (INTERNAL_TOKEN, JWT keys) back into
	// app.ini, so its user owns it.
	if err := os.WriteFile(path, []byte(ini), 0o600); err != nil {
		return err
	}
	if s.cred != nil {
		return os.Chown(path, int(s.cred.Uid), int(s.cred.Gid))
	}
	return nil
}

// command returns a gitea command on the work path, as the server's user,
// in its own process group (Stop ends the group), killed if the test
// binary dies first (a test run killed at its timeout leaves no server).
func (s *Server) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.bin, append([]string{"--work-path", s.Dir, "--config", filepath.Join(s.Dir, "custom", "conf", "app.ini")}, args...)...)
	cmd.Dir = s.Dir
	cmd.Env = s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// run runs a gitea subcommand to its end and returns its output.
func (s *Server) run(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Scale(2*time.Minute))
	defer cancel()
	return s.command(ctx, args...).CombinedOutput()
}

// start launches `gitea web` and waits until GET /api/v1/version answers.
// On a port taken meanwhile it picks another and returns the error.
func (s *Server) start(ctx context.Context) error {
	cmd := s.command(context.Background(), "web")
	cmd.Stdout, cmd.Stderr = s.log, s.log
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start gitea web: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	s.stopOnce = sync.Once{}
	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		if port, perr := freePort(); perr == nil {
			if cerr := s.rewritePort(port); cerr != nil {
				return errors.Join(err, cerr)
			}
		}
		return err
	}
	s.ready = time.Since(begin)
	return nil
}

// rewritePort moves the server to another port in app.ini (kept otherwise:
// Gitea may have written secrets into it).
func (s *Server) rewritePort(port int) error {
	path := filepath.Join(s.Dir, "custom", "conf", "app.ini")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	old := strings.TrimPrefix(s.URL, "http://")
	_, oldPort, _ := net.SplitHostPort(old)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	out := strings.ReplaceAll(string(b), "HTTP_PORT = "+oldPort+"\n", "HTTP_PORT = "+strconv.Itoa(port)+"\n")
	out = strings.ReplaceAll(out, "http://"+old+"/", "http://"+addr+"/")
	s.URL = "http://" + addr
	return os.WriteFile(path, []byte(out), 0o600)
}

// waitReady polls GET /api/v1/version until it reports Version, the process
// exits or ctx ends.
func (s *Server) waitReady(ctx context.Context) error {
	poll := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		v, err := s.version(ctx, poll)
		if err == nil {
			if v != Version {
				return fmt.Errorf("the server reports version %q, want %s", v, Version)
			}
			return nil
		}
		last = err
		select {
		case <-s.done:
			return fmt.Errorf("gitea web exited during start-up (%v)", s.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("gitea did not answer /api/v1/version: %w (last: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// version returns the version GET /api/v1/version reports.
func (s *Server) version(ctx context.Context, hc *http.Client) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/v1/version", nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct {
		Version string `json:"version"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return "", err
	}
	return v.Version, nil
}

// createToken creates the admin's API token (basic auth, as the API wants).
func (s *Server) createToken(ctx context.Context) error {
	body, _ := json.Marshal(map[string]any{"name": "giteatest", "scopes": Scopes})
	var tok struct {
		SHA1 string `json:"sha1"`
	}
	if err := s.api(ctx, http.MethodPost, "/users/"+s.User+"/tokens", body, true, &tok); err != nil {
		return err
	}
	if tok.SHA1 == "" {
		return errors.New("the answer carries no token")
	}
	s.Token = tok.SHA1
	return nil
}

// api calls the API (as the admin: basic auth, or its token) and decodes a
// 2xx answer into out.
func (s *Server) api(ctx context.Context, method, path string, body []byte, basic bool, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, s.URL+"/api/v1"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if basic {
		req.SetBasicAuth(s.User, s.Password)
	} else {
		req.Header.Set("Authorization", "token "+s.Token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// CreateRepo creates a public repository of the admin, initialised with a
// README on the branch main, and returns its clone URL with the admin's
// name and token as credentials, ready for git clone and push.
func (s *Server) CreateRepo(t testing.TB, name string) (cloneURL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Scale(2*time.Minute))
	defer cancel()
	body, _ := json.Marshal(map[string]any{"name": name, "auto_init": true, "default_branch": "main", "readme": "Default"})
	var repo struct {
		CloneURL string `json:"clone_url"`
	}
	if err := s.api(ctx, http.MethodPost, "/user/repos", body, false, &repo); err != nil {
		t.Fatalf("giteatest: create repository %s: %v", name, err)
	}
	u, err := url.Parse(repo.CloneURL)
	if err != nil || u.Host != strings.TrimPrefix(s.URL, "http://") {
		t.Fatalf("giteatest: repository %s has clone URL %q (server %s)", name, repo.CloneURL, s.URL)
	}
	u.User = url.UserPassword(s.User, s.Token)
	return u.String()
}

// Stop sends SIGTERM to the server's process group and waits for it to exit
// (SIGKILL after 30 s, scaled). It is idempotent.
func (s *Server) Stop() error {
	if s.cmd == nil {
		return nil
	}
	s.stopOnce.Do(func() {
		pgid := s.cmd.Process.Pid
		select {
		case <-s.done:
		default:
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			select {
			case <-s.done:
			case <-time.After(Scale(30 * time.Second)):
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				<-s.done
				s.stopErr = errors.New("gitea ignored SIGTERM for 30 s and was killed")
			}
		}
		// Whatever the server left in its group (git children) goes too.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
	return s.stopErr
}

// Pid returns the process id of `gitea web` (its process group id too).
func (s *Server) Pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// StartupTime returns how long `gitea web` took to answer /api/v1/version.
func (s *Server) StartupTime() time.Duration { return s.ready }

// LogTail returns the last n bytes of the server's output.
func (s *Server) LogTail(n int) string { return s.log.tail(n) }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) tail(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// freePort returns a loopback port that was free a moment ago (start retries
// on another one when it was taken meanwhile).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// linkTree hard-links (or, across file systems, copies) the named entries of
// src into dst, directories recursively, readable by everyone.
func linkTree(src, dst string, names []string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(dst, 0o755); err != nil {
		return err
	}
	for _, name := range names {
		root := filepath.Join(src, name)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(src, p)
			if err != nil {
				return err
			}
			to := filepath.Join(dst, rel)
			if d.IsDir() {
				return os.Mkdir(to, 0o755)
			}
			if !d.Type().IsRegular() {
				return nil
			}
			if os.Link(p, to) == nil {
				return nil
			}
			return copyFile(p, to)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies a regular file, keeping its mode's execute bits.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644|fi.Mode().Perm()&0o111)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// chownTree gives dir and everything under it to uid:gid.
func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}
