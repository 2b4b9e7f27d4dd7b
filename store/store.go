// Package store owns all SQL of Threadline: chats, runs and the chat event log over
// Postgres (lib/pq) or SQLite (modernc.org/sqlite), with embedded goose migrations.
//
// Queries are explicit and written with $n placeholders, which both drivers accept.
// Driver errors are translated into ErrNotFound, ErrConflict and ErrRunActive at
// this boundary; callers use errors.Is.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
)

// Dialect names returned by Store.Dialect.
const (
	DialectPostgres = "postgres"
	DialectSQLite   = "sqlite"
)

var (
	// ErrNotFound is returned when the requested row (chat, run) does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict is returned when a write collides with an existing row, e.g. a
	// duplicate chat id or an already used (chat, seq). Nothing of the write is kept.
	ErrConflict = errors.New("store: conflict")
	// ErrRunActive is returned by StartRun when the chat already has a running run
	// (the partial unique index on runs decides, across replicas). It wraps
	// agent.ErrPromptAlreadyRunning.
	ErrRunActive = fmt.Errorf("store: chat already has a running run: %w", agent.ErrPromptAlreadyRunning)
)

//go:embed migrations
var migrationsFS embed.FS

// Store is the concrete storage of Threadline. It is safe for concurrent use.
type Store struct {
	db      *sqlx.DB
	dialect string
	logger  *slog.Logger
	url     string // Postgres only: for the LISTEN connection (notify.go)

	insertOnce sync.Once
	insertStmt *sql.Stmt
	insertErr  error
}

var _ runhub.Store = (*Store)(nil)

// runhub finds Adopter by a type assertion: this keeps it checked.
var _ runhub.Adopter = (*Store)(nil)

// Open connects to the database named by rawURL and pings it. It does not migrate;
// call Migrate or use OpenAndMigrate.
//
// "postgres://..." and "postgresql://..." select Postgres. "sqlite:PATH",
// "file:PATH" or a plain path select SQLite (the parent directory is created; WAL,
// busy_timeout and foreign_keys are set). Errors name the backend and the host or
// path, never the password.
func Open(ctx context.Context, rawURL string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if strings.HasPrefix(rawURL, "postgres://") || strings.HasPrefix(rawURL, "postgresql://") {
		return openPostgres(ctx, rawURL, logger)
	}
	return openSQLite(ctx, rawURL, logger)
}

// OpenAndMigrate is Open followed by Migrate.
func OpenAndMigrate(ctx context.Context, rawURL string, logger *slog.Logger) (*Store, error) {
	s, err := Open(ctx, rawURL, logger)
	if err != nil {
		return nil, err
	}
	if err := s.Migrate(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func openPostgres(ctx context.Context, rawURL string, logger *slog.Logger) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse errors quote the input, which may hold a password.
		return nil, errors.New("store: postgres: malformed database URL")
	}
	where := fmt.Sprintf("host %q database %q", u.Host, strings.TrimPrefix(u.Path, "/"))
	db, err := sqlx.Open("postgres", rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: postgres at %s: %w", where, redact(err, u))
	}
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: connect postgres at %s: %w", where, redact(err, u))
	}
	logger.InfoContext(ctx, "store opened", "dialect", DialectPostgres, "host", u.Host)
	return &Store{db: db, dialect: DialectPostgres, logger: logger, url: rawURL}, nil
}

// redact removes the URL's password from err's text, in case a driver quotes it.
func redact(err error, u *url.URL) error {
	if u.User == nil {
		return err
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pw, "xxxxx"))
}

// SQLiteFiles are the files of the SQLite database rawURL names (the
// database and its -wal, -shm and -journal files); none for Postgres.
func SQLiteFiles(rawURL string) []string {
	if strings.HasPrefix(rawURL, "postgres://") || strings.HasPrefix(rawURL, "postgresql://") {
		return nil
	}
	p := sqlitePath(rawURL)
	if p == "" {
		return nil
	}
	return []string{p, p + "-wal", p + "-shm", p + "-journal"}
}

// sqlitePath extracts the file path from "sqlite:PATH", "file:PATH" or "PATH",
// dropping any query string.
func sqlitePath(rawURL string) string {
	p := rawURL
	for _, prefix := range []string{"sqlite://", "sqlite:", "file://", "file:"} {
		if strings.HasPrefix(p, prefix) {
			p = strings.TrimPrefix(p, prefix)
			break
		}
	}
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	return p
}

func openSQLite(ctx context.Context, rawURL string, logger *slog.Logger) (*Store, error) {
	path := sqlitePath(rawURL)
	if path == "" {
		return nil, errors.New("store: sqlite: empty database path")
	}
	onDisk := path != ":memory:"
	if err := mkdirPrivate(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("store: sqlite at %q: %w", path, err)
	}
	// The database holds every chat and project secret: it and its -wal and
	// -shm are 0600 whatever the umask. SQLite creates the -wal and -shm
	// with the database file's mode, so a database created 0600 here gets
	// private companions; files of an older install are tightened.
	if err := privateFiles(onDisk, path); err != nil {
		return nil, fmt.Errorf("store: sqlite at %q: %w", path, err)
	}
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "busy_timeout(10000)", "foreign_keys(1)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	q.Set("_time_format", "sqlite")
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	db, err := sqlx.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: sqlite at %q: %w", path, err)
	}
	// One connection serializes writers inside the process, so concurrent writers
	// never see SQLITE_BUSY; busy_timeout covers other processes.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: open sqlite at %q: %w", path, err)
	}
	// The connection switched to WAL mode: the -wal and -shm exist now.
	if err := privateFiles(onDisk, path, path+"-wal", path+"-shm"); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: sqlite at %q: %w", path, err)
	}
	logger.InfoContext(ctx, "store opened", "dialect", DialectSQLite, "path", path)
	return &Store{db: db, dialect: DialectSQLite, logger: logger}, nil
}

// mkdirPrivate creates dir and its missing parents with mode 0700, set
// explicitly so that no umask changes it. Directories that exist are left
// as they are: they may be the operator's (or /tmp).
func mkdirPrivate(dir string) error {
	if dir == "" || dir == "." {
		return nil
	}
	if _, err := os.Stat(dir); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirPrivate(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	} else if err != nil {
		return nil // created by someone else meanwhile
	}
	return os.Chmod(dir, 0o700)
}

// privateFiles makes the first path exist (created empty) and every path
// that exists mode 0600, set explicitly so that no umask changes it. It does
// nothing when onDisk is false (an in-memory database).
func privateFiles(onDisk bool, paths ...string) error {
	if !onDisk {
		return nil
	}
	for i, p := range paths {
		if i == 0 {
			f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				return err
			}
			_ = f.Close()
		}
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode().Perm() != 0o600 {
			if err := os.Chmod(p, 0o600); err != nil {
				return fmt.Errorf("make %s private: %w", p, err)
			}
		}
	}
	return nil
}

// Dialect reports "postgres" or "sqlite".
func (s *Store) Dialect() string { return s.dialect }

// DB exposes the underlying handle for tests and tools. Production code should use
// the Store's methods.
func (s *Store) DB() *sqlx.DB { return s.db }

// Close closes the database handle.
func (s *Store) Close() error {
	// Synchronizes with insertPG and stops later prepares.
	s.insertOnce.Do(func() { s.insertErr = errors.New("store: closed") })
	if s.insertStmt != nil {
		_ = s.insertStmt.Close()
	}
	return s.db.Close()
}

// Migrate applies all pending embedded migrations. Running it again is a no-op.
func (s *Store) Migrate(ctx context.Context) error {
	sub, err := fs.Sub(migrationsFS, "migrations/"+s.dialect)
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	d := goose.DialectPostgres
	if s.dialect == DialectSQLite {
		d = goose.DialectSQLite3
	}
	p, err := goose.NewProvider(d, s.db.DB, sub, goose.WithDisableGlobalRegistry(true), goose.WithAllowOutofOrder(true))
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("store: migrate %s: %w", s.dialect, err)
	}
	for _, r := range results {
		s.logger.InfoContext(ctx, "migration applied", "dialect", s.dialect, "version", r.Source.Version, "duration", r.Duration)
	}
	return nil
}

// InTx runs f in one transaction, committing when f returns nil.
func (s *Store) InTx(ctx context.Context, f func(tx *sqlx.Tx) error) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return translate(err)
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return translate(tx.Commit())
}

// translate maps driver errors to the package sentinels, keeping the original text.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if isDiskFull(err) {
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	}
	if _, ok := constraintOf(err); ok {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// constraintOf reports whether err is a unique/primary-key violation and, when the
// driver says so, which constraint (Postgres name, SQLite "table.column" text).
func constraintOf(err error) (string, bool) {
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		if pqErr.Code == "23505" {
			return pqErr.Constraint, true
		}
		return "", false
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		switch sqErr.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return sqErr.Error(), true
		}
	}
	return "", false
}

// isFKViolation reports a foreign-key violation (the referenced chat is missing).
// ErrDiskFull wraps a write the database refused for want of disk space
// (SQLite SQLITE_FULL, Postgres 53100): the run hub stops the run at once
// instead of holding its events.
var ErrDiskFull = runhub.ErrStoreFull

// isDiskFull reports whether err is the database's disk being full.
func isDiskFull(err error) bool {
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		return pqErr.Code == "53100"
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		return sqErr.Code()&0xff == sqlite3.SQLITE_FULL
	}
	return errors.Is(err, syscall.ENOSPC)
}

func isFKViolation(err error) bool {
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		return pqErr.Code == "23503"
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		return sqErr.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
	}
	return false
}
