// Package storetest opens throwaway stores for tests on both backends.
//
// Postgres uses TEST_DATABASE_URL: every store gets a fresh schema (tl_<random>),
// reached through search_path, migrated, and dropped in t.Cleanup. Without
// TEST_DATABASE_URL the postgres subtests skip, unless CI=true or
// THREADLINE_REQUIRE_POSTGRES=1, where they fail. An unreachable database always
// fails. SQLite uses a file in t.TempDir().
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/store"
)

// EnvDatabaseURL names the Postgres URL used by the postgres subtests.
const EnvDatabaseURL = "TEST_DATABASE_URL"

// Dialects lists the backends Each runs, in order.
var Dialects = []string{store.DialectPostgres, store.DialectSQLite}

// Each runs f once per backend as subtests "postgres" and "sqlite", each with a
// fresh migrated store.
func Each(t *testing.T, f func(t *testing.T, s *store.Store)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(d, func(t *testing.T) {
			t.Helper()
			f(t, Open(t, d))
		})
	}
}

// Open returns a fresh migrated store of the dialect ("postgres" or "sqlite"),
// closed and removed in t.Cleanup.
func Open(t testing.TB, dialect string) *store.Store {
	t.Helper()
	u := URL(t, dialect)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.OpenAndMigrate(ctx, u, nil)
	if err != nil {
		t.Fatalf("storetest: open %s: %v", dialect, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// URL prepares an empty database of the dialect (a fresh Postgres schema or a
// temp SQLite path), removed in t.Cleanup, and returns its URL without migrating.
// It skips or fails the test as described in the package doc when Postgres is not
// configured.
func URL(t testing.TB, dialect string) string {
	t.Helper()
	switch dialect {
	case store.DialectSQLite:
		return "sqlite:" + filepath.Join(t.TempDir(), "threadline.db")
	case store.DialectPostgres:
		return postgresSchema(t)
	default:
		t.Fatalf("storetest: unknown dialect %q", dialect)
		return ""
	}
}

// RequirePostgres reports whether a missing TEST_DATABASE_URL is a failure.
func RequirePostgres() bool {
	return os.Getenv("CI") == "true" || os.Getenv("THREADLINE_REQUIRE_POSTGRES") == "1"
}

func postgresSchema(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvDatabaseURL)
	if base == "" {
		if RequirePostgres() {
			t.Fatalf("storetest: %s is not set but Postgres is required (CI=true or THREADLINE_REQUIRE_POSTGRES=1)", EnvDatabaseURL)
		}
		t.Skipf("storetest: %s not set; skipping the Postgres backend (e.g. %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", EnvDatabaseURL, EnvDatabaseURL)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	schema := "tl_" + hex.EncodeToString(rnd[:])

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := store.Open(ctx, base, nil)
	if err != nil {
		t.Fatalf("storetest: %s is set but unusable: %v", EnvDatabaseURL, err)
	}
	if _, err := admin.DB().ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		_ = admin.Close()
		t.Fatalf("storetest: create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.DB().ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("storetest: drop schema %s: %v", schema, err)
		}
		_ = admin.Close()
	})

	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("storetest: %s: malformed URL", EnvDatabaseURL)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
