// Package dendritetest runs a real Matrix homeserver, Dendrite v0.13.8, for
// tests: one per call to Start, with a fresh config and data directory, bound
// to 127.0.0.1 only, federation off, shared-secret registration on, and stopped
// in t.Cleanup.
//
// The binaries come from scripts/install-dendrite.sh (.cache/dendrite/bin at
// the repository root) or from $DENDRITE_BIN. When they are missing the test
// skips with a message naming the script, unless THREADLINE_E2E=1, where it
// fails. See ../../../../shared/reference/chat-platforms/DENDRITE.md for the
// facts the config is built from.
package dendritetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"
	"maunium.net/go/mautrix/synapseadmin"
	_ "modernc.org/sqlite" // to create Dendrite's databases in WAL mode
)

// Version is the Dendrite version the harness expects.
const Version = "v0.13.8"

// SharedSecret is the registration shared secret of every test server.
const SharedSecret = "test-shared-secret"

// ServerName is the server name of every test server: user ids end in
// ":localhost".
const ServerName = "localhost"

// EnvBin names the directory holding the Dendrite binaries.
const EnvBin = "DENDRITE_BIN"

// EnvRequire makes a missing Dendrite a test failure instead of a skip.
const EnvRequire = "THREADLINE_E2E"

var tools = []string{"dendrite", "generate-keys", "generate-config"}

// ErrNotInstalled is returned by Binaries when a Dendrite binary is missing.
var ErrNotInstalled = errors.New("dendrite is not installed (run scripts/install-dendrite.sh)")

// Binaries returns the directory with the Dendrite binaries: $DENDRITE_BIN, or
// .cache/dendrite/bin at the repository root. The error wraps ErrNotInstalled
// when one is missing.
func Binaries() (string, error) {
	dir := os.Getenv(EnvBin)
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrNotInstalled, err)
		}
		dir = filepath.Join(root, ".cache", "dendrite", "bin")
	}
	for _, t := range tools {
		if fi, err := os.Stat(filepath.Join(dir, t)); err != nil || fi.IsDir() {
			return "", fmt.Errorf("%w: %s not found in %s", ErrNotInstalled, t, dir)
		}
	}
	return dir, nil
}

// repoRoot finds the directory of the module's go.mod from the working
// directory up.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/threadline-bot/threadline\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the threadline module root is not above the working directory")
		}
		dir = parent
	}
}

// RateLimit configures client_api.rate_limiting: each caller (user + device)
// has Threshold slots, each freed Cooloff after it was taken.
type RateLimit struct {
	Disabled  bool
	Threshold int
	Cooloff   time.Duration
	Exempt    []id.UserID
}

// Options shape a test server.
type Options struct {
	// RateLimit overrides Dendrite's default limit (5 requests, 500 ms).
	RateLimit *RateLimit
}

// Server is a running Dendrite.
type Server struct {
	// URL is the client-server API base, http://127.0.0.1:<port>.
	URL string
	// Dir holds the config, keys, databases and log.
	Dir string

	cmd  *exec.Cmd
	done chan struct{}
	log  string

	stopOnce sync.Once
	stopErr  error
}

// Start starts a Dendrite for the test and stops it in t.Cleanup. It skips (or,
// with THREADLINE_E2E=1, fails) when Dendrite is not installed.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin, err := Binaries()
	if err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("dendritetest: %v (THREADLINE_E2E=1 requires it)", err)
		}
		t.Skipf("dendritetest: %v; skipping the tests against a real Matrix homeserver", err)
	}
	dir := t.TempDir()
	if err := writeConfig(bin, dir, opts); err != nil {
		t.Fatalf("dendritetest: config: %v", err)
	}
	var s *Server
	for attempt := 0; ; attempt++ {
		s, err = start(bin, dir)
		if err == nil {
			break
		}
		if attempt == 4 {
			t.Fatalf("dendritetest: start: %v", err)
		}
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("dendritetest: stop: %v", err)
		}
		if t.Failed() {
			t.Logf("dendritetest: log of the server at %s:\n%s", s.URL, s.LogTail(8000))
		}
	})
	return s
}

// writeConfig generates keys and a config in dir and edits it as DENDRITE.md
// describes: absolute key path, no federation, no third-party servers or key
// perspectives, in-memory NATS and search, a small cache, the shared secret,
// the rate limit, bcrypt cost 4, warnings to stderr.
func writeConfig(bin, dir string, opts Options) error {
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o750); err != nil {
		return err
	}
	key := filepath.Join(dir, "matrix_key.pem")
	if out, err := exec.Command(filepath.Join(bin, "generate-keys"), "--private-key", key).CombinedOutput(); err != nil {
		return fmt.Errorf("generate-keys: %w: %s", err, out)
	}
	var stderr bytes.Buffer
	gen := exec.Command(filepath.Join(bin, "generate-config"), "-server", ServerName, "-dir", data)
	gen.Stderr = &stderr
	raw, err := gen.Output()
	if err != nil {
		return fmt.Errorf("generate-config: %w: %s", err, stderr.String())
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("parse generated config: %w", err)
	}
	set := func(path string, v any) error {
		keys := strings.Split(path, ".")
		m := cfg
		for _, k := range keys[:len(keys)-1] {
			sub, ok := m[k].(map[string]any)
			if !ok {
				return fmt.Errorf("generated config has no section %q (in %s)", k, path)
			}
			m = sub
		}
		if _, ok := m[keys[len(keys)-1]]; !ok {
			return fmt.Errorf("generated config has no key %s", path)
		}
		m[keys[len(keys)-1]] = v
		return nil
	}
	rl := RateLimit{Threshold: 5, Cooloff: 500 * time.Millisecond}
	if opts.RateLimit != nil {
		rl = *opts.RateLimit
	}
	exempt := make([]string, 0, len(rl.Exempt))
	for _, u := range rl.Exempt {
		exempt = append(exempt, string(u))
	}
	for _, kv := range []struct {
		path string
		v    any
	}{
		{"global.private_key", key},
		{"global.disable_federation", true},
		{"global.trusted_third_party_id_servers", []string{}},
		{"global.jetstream.in_memory", true},
		{"global.cache.max_size_estimated", 64 << 20},
		{"client_api.registration_shared_secret", SharedSecret},
		{"client_api.rate_limiting.enabled", !rl.Disabled},
		{"client_api.rate_limiting.threshold", rl.Threshold},
		{"client_api.rate_limiting.cooloff_ms", rl.Cooloff.Milliseconds()},
		{"client_api.rate_limiting.exempt_user_ids", exempt},
		{"federation_api.key_perspectives", []any{}},
		{"sync_api.search.in_memory", true},
		{"user_api.bcrypt_cost", 4},
		{"logging", []any{map[string]any{"type": "std", "level": "warn"}}},
	} {
		if err := set(kv.path, kv.v); err != nil {
			return err
		}
	}
	if err := walDatabases(cfg); err != nil {
		return err
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "dendrite.yaml"), out, 0o600)
}

// walDatabases creates each SQLite database of the config in WAL mode, which
// SQLite keeps in the file. Dendrite opens its databases in the default
// rollback-journal mode, where a reader holds writers off: on a loaded
// machine a /sync kept the sync database busy past Dendrite's 10 s
// busy_timeout, the roomserver consumer's write failed ("database is locked",
// then "cannot start a transaction within a transaction") and Dendrite
// panicked. With WAL, readers and the writer do not wait for each other.
func walDatabases(cfg map[string]any) error {
	var paths []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, sub := range x {
				if s, ok := sub.(string); ok && k == "connection_string" && strings.HasPrefix(s, "file:") {
					paths = append(paths, strings.TrimPrefix(s, "file:"))
				}
				walk(sub)
			}
		case []any:
			for _, sub := range x {
				walk(sub)
			}
		}
	}
	walk(cfg)
	for _, p := range paths {
		db, err := sql.Open("sqlite", p)
		if err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
		var mode string
		err = db.QueryRow("PRAGMA journal_mode=WAL").Scan(&mode)
		_ = db.Close()
		if err != nil || mode != "wal" {
			return fmt.Errorf("set WAL mode on %s: %q %v", p, mode, err)
		}
	}
	return nil
}

// start launches Dendrite on a random loopback port and waits until it answers.
func start(bin, dir string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logPath := filepath.Join(dir, "dendrite.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	// HTTPS only starts with -tls-cert/-tls-key; its address is given anyway so
	// that no default (all interfaces) is ever used.
	cmd := exec.Command(filepath.Join(bin, "dendrite"),
		"-config", filepath.Join(dir, "dendrite.yaml"),
		"-http-bind-address", addr,
		"-https-bind-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+1)))
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start dendrite: %w", err)
	}
	s := &Server{URL: "http://" + addr, Dir: dir, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(s.done)
	}()
	if err := s.waitReady(30 * time.Second); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("%w; log:\n%s", err, s.LogTail(4000))
	}
	return s, nil
}

// freePort picks a port in 21000-21998 whose next port is free too.
func freePort() (int, error) {
	for range 50 {
		n, err := rand.Int(rand.Reader, big.NewInt(999))
		if err != nil {
			return 0, err
		}
		p := 21000 + int(n.Int64())
		l1, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+1)))
		_ = l1.Close()
		if err != nil {
			continue
		}
		_ = l2.Close()
		return p, nil
	}
	return 0, errors.New("no free loopback port in 21000-21999")
}

func (s *Server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	hc := &http.Client{Timeout: 2 * time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return errors.New("dendrite exited during start-up")
		default:
		}
		resp, err := hc.Get(s.URL + "/_matrix/client/versions")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("dendrite did not answer /versions within %s", limit)
}

// Stop sends SIGTERM and waits for the process to exit (SIGKILL after 15 s).
// It is idempotent.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		select {
		case <-s.done:
			return
		default:
		}
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
			s.stopErr = errors.New("dendrite ignored SIGTERM for 15 s and was killed")
		}
	})
	return s.stopErr
}

// LogTail returns the last n bytes of the server's log.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// EnvScale multiplies the harness's waits on a slow machine.
const EnvScale = "THREADLINE_TEST_TIMEOUT_SCALE"

// Scale returns d multiplied by $THREADLINE_TEST_TIMEOUT_SCALE (unset or
// invalid: 1).
func Scale(d time.Duration) time.Duration {
	if f, err := strconv.ParseFloat(os.Getenv(EnvScale), 64); err == nil && f > 0 {
		return time.Duration(float64(d) * f)
	}
	return d
}

// busyLimit bounds how long Transport keeps retrying one request.
const busyLimit = 60 * time.Second

// Transport returns a RoundTripper over base (nil: http.DefaultTransport)
// that retries the answers a loaded Dendrite gives a test's users: 429
// M_LIMIT_EXCEEDED after the retry_after_ms it asks for, and a 500 whose
// SQLite database was locked, with a backoff from 50 ms to 1 s. It keeps
// trying while the server runs, for up to 60 s (scaled by
// THREADLINE_TEST_TIMEOUT_SCALE) per request; a server that exited, the
// request's context or the limit end it with the last answer.
func (s *Server) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &busyTransport{next: base, done: s.done}
}

type busyTransport struct {
	next http.RoundTripper
	done <-chan struct{}
}

// busyWait reports whether an answer is a passing overload of the server and
// how long to wait before trying again (0: the backoff).
func busyWait(status int, body []byte) (bool, time.Duration) {
	switch status {
	case http.StatusTooManyRequests:
		var e struct {
			RetryAfterMS int64 `json:"retry_after_ms"`
		}
		_ = json.Unmarshal(body, &e)
		return true, time.Duration(e.RetryAfterMS) * time.Millisecond
	case http.StatusInternalServerError:
		return bytes.Contains(body, []byte("database is locked")) || bytes.Contains(body, []byte("SQLITE_BUSY")), 0
	}
	return false, 0
}

func (t *busyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	deadline := time.Now().Add(Scale(busyLimit))
	backoff := 50 * time.Millisecond
	for {
		resp, err := t.next.RoundTrip(req)
		if err != nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusInternalServerError) {
			return resp, err
		}
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		busy, wait := busyWait(resp.StatusCode, body)
		if rerr != nil || !busy || (req.Body != nil && req.GetBody == nil) || time.Now().After(deadline) {
			return resp, nil
		}
		if wait <= 0 {
			wait, backoff = backoff, min(backoff*2, time.Second)
		}
		timer := time.NewTimer(wait)
		select {
		case <-req.Context().Done():
			timer.Stop()
			return resp, nil
		case <-t.done:
			timer.Stop()
			return resp, nil
		case <-timer.C:
		}
		if req.GetBody != nil {
			nb, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = nb
		}
	}
}

// User is a registered account.
type User struct {
	ID       id.UserID
	Name     string
	Password string
}

// Register creates a user named name plus a random suffix (so that tests
// sharing a server do not collide) through shared-secret registration.
func (s *Server) Register(t testing.TB, name string) User {
	t.Helper()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	u := User{Name: strings.ToLower(name) + "-" + hex.EncodeToString(rnd[:])}
	u.Password = "pw-" + u.Name
	cli, err := mautrix.NewClient(s.URL, "", "")
	if err != nil {
		t.Fatal(err)
	}
	cli.DefaultHTTPRetries = 5
	cli.DefaultHTTPBackoff = 200 * time.Millisecond
	cli.Client = &http.Client{Timeout: 180 * time.Second, Transport: s.Transport(nil)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := (&synapseadmin.Client{Client: cli}).SharedSecretRegister(ctx, SharedSecret,
		synapseadmin.ReqSharedSecretRegister{Username: u.Name, Password: u.Password, InhibitLogin: true})
	if err != nil {
		t.Fatalf("dendritetest: register %s: %v", u.Name, err)
	}
	u.ID = resp.UserID
	return u
}

// Login logs u in with the device id and returns a client with retries on
// (429s are expected: Dendrite rate-limits logins, joins and typing).
func (s *Server) Login(t testing.TB, u User, device id.DeviceID) *mautrix.Client {
	t.Helper()
	cli, err := mautrix.NewClient(s.URL, "", "")
	if err != nil {
		t.Fatal(err)
	}
	cli.DefaultHTTPRetries = 5
	cli.DefaultHTTPBackoff = 200 * time.Millisecond
	cli.Client = &http.Client{Timeout: 180 * time.Second, Transport: s.Transport(nil)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = cli.Login(ctx, &mautrix.ReqLogin{
		Type:       mautrix.AuthTypePassword,
		Identifier: mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: u.Name},
		Password:   u.Password, DeviceID: device, StoreCredentials: true,
	})
	if err != nil {
		t.Fatalf("dendritetest: login %s: %v", u.Name, err)
	}
	return cli
}
