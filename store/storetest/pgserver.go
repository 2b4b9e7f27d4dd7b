// A PostgreSQL server of the test's own, which the test may stop and start
// (a database restart mid-run), from the binaries of the system's install.

package storetest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// PGServer is a PostgreSQL server in a directory of the test's own,
// listening on a loopback port, with trust authentication for the user
// postgres and a database "test".
type PGServer struct {
	t    testing.TB
	bin  string // the directory of pg_ctl, initdb, postgres
	data string
	port int
	// as runs a command as the server's owner (root may not run it).
	as func(name string, args ...string) *exec.Cmd
}

// StartPG initdb's and starts a server for t, stopped at its end. Without
// PostgreSQL's binaries (/usr/lib/postgresql/*/bin) it fails t when CI or
// THREADLINE_REQUIRE_POSTGRES asks for Postgres, else skips.
func StartPG(t testing.TB) *PGServer {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		if os.Getenv("CI") == "true" || os.Getenv("THREADLINE_REQUIRE_POSTGRES") == "1" {
			t.Fatal("storetest: no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/pg_ctl)")
		}
		t.Skip("storetest: no PostgreSQL server binaries")
	}
	s := &PGServer{t: t, bin: filepath.Dir(bins[len(bins)-1])}
	dir, err := os.MkdirTemp("", "tlpg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s.data = filepath.Join(dir, "data")
	s.as = exec.Command
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("storetest: as root the server runs as the user postgres: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		s.as = func(name string, args ...string) *exec.Cmd {
			return exec.Command("setpriv", append([]string{"--reuid", u.Uid, "--regid", u.Gid, "--clear-groups", "--", name}, args...)...)
		}
	}
	s.port = freePort(t)
	s.run("initdb", "-D", s.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	s.Start()
	t.Cleanup(func() { _ = s.ctl("stop", "-m", "immediate") })
	cmd := s.as(filepath.Join(s.bin, "psql"), "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", "postgres", "-c", "CREATE DATABASE test")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("storetest: create database: %v\n%s", err, out)
	}
	return s
}

// URL is the server's database URL.
func (s *PGServer) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/test?sslmode=disable", s.port)
}

// Stop stops the server at once (connections are cut, as in a crash or a
// failover).
func (s *PGServer) Stop() {
	s.t.Helper()
	if err := s.ctl("stop", "-m", "immediate"); err != nil {
		s.t.Fatalf("storetest: stop postgres: %v", err)
	}
}

// Start starts the server and returns once it accepts connections.
func (s *PGServer) Start() {
	s.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", s.port, filepath.Dir(s.data))
	if err := s.ctl("start", "-w", "-t", "120", "-l", filepath.Join(filepath.Dir(s.data), "log"), "-o", opts); err != nil {
		log, _ := os.ReadFile(filepath.Join(filepath.Dir(s.data), "log"))
		s.t.Fatalf("storetest: start postgres: %v\n%s", err, log)
	}
}

func (s *PGServer) ctl(args ...string) error {
	out, err := s.as(filepath.Join(s.bin, "pg_ctl"), append([]string{"-D", s.data}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

func (s *PGServer) run(name string, args ...string) {
	s.t.Helper()
	if out, err := s.as(filepath.Join(s.bin, name), args...).CombinedOutput(); err != nil {
		s.t.Fatalf("storetest: %s: %v\n%s", name, err, out)
	}
}

// freePort is a loopback TCP port free now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
