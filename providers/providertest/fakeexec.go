// The start of a fake CLI that is the test binary itself, re-executed by
// the provider under test (its TestMain calls ServeFake when the package's
// fake variable is set).

package providertest

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// ServeFake is the body of a fake CLI: started with --version it prints
// version and exits 0 (unless version is empty: a CLI without that probe);
// otherwise it opens the record file recordPath (OpenRecord: argv and
// environment first) and returns serve's exit code, serve writing every
// stdin line it reads to rec (see RecordLines). It returns 98 when the
// record cannot be opened.
func ServeFake(version, recordPath string, serve func(rec *os.File) int) int {
	if version != "" && slices.Contains(os.Args[1:], "--version") {
		fmt.Println(version)
		return 0
	}
	rec, err := OpenRecord(recordPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 98
	}
	defer rec.Close()
	return serve(rec)
}

// Self is a fake CLI that is the test binary itself (see ServeFake).
type Self struct {
	// Bin is the test binary.
	Bin string
	// Record is the file the fake keeps its record in, in a fresh
	// temporary directory (ReadRecord reads it).
	Record string
	// Env is the fake's environment: what makes the binary the fake and
	// configures it, the record file and GORACE.
	Env map[string]string
}

// SelfFake returns the test binary as a fake CLI: its environment is env
// and then each of more merged over it, with recordEnv naming the record
// file and GORACE=atexit_sleep_ms=0 (a -race binary sleeps 1 s at exit by
// default, which every run of a fake would wait for).
func SelfFake(t testing.TB, recordEnv string, env map[string]string, more ...map[string]string) Self {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := Self{Bin: bin, Record: filepath.Join(t.TempDir(), "record.jsonl"), Env: map[string]string{"GORACE": "atexit_sleep_ms=0"}}
	for _, m := range append([]map[string]string{env}, more...) {
		for k, v := range m {
			s.Env[k] = v
		}
	}
	s.Env[recordEnv] = s.Record
	return s
}

// IgnoreStop makes a fake CLI ignore SIGINT and SIGTERM, as a CLI stuck in
// its turn does: only the kill ends it.
func IgnoreStop() { signal.Ignore(syscall.SIGINT, syscall.SIGTERM) }

// Hang is a stuck fake CLI: it ignores SIGINT and SIGTERM (IgnoreStop),
// answers nothing and keeps copying what it reads from in to rec, until it
// is killed (or a minute has passed).
func Hang(rec io.Writer, in io.Reader) {
	IgnoreStop()
	go io.Copy(rec, in)
	time.Sleep(time.Minute)
}
