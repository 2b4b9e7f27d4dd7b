//go:build goolm

// crypto_goolm.go: end-to-end encryption with mautrix's cryptohelper and the
// pure-Go Olm/Megolm (goolm, this file's build tag), its keys in Threadline's
// database through dbutil (Postgres, or modernc SQLite), so they survive
// restarts.

package matrix

import (
	"context"
	"fmt"

	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix/crypto/cryptohelper"
)

// EncryptionAvailable reports whether this build can do end-to-end encryption.
const EncryptionAvailable = true

func (b *Bot) initCrypto(ctx context.Context, pickleKey []byte) error {
	db, err := dbutil.NewWithDB(b.cfg.CryptoDB, b.cfg.CryptoDialect)
	if err != nil {
		return fmt.Errorf("matrix: crypto database: %w", err)
	}
	db.Log = dbutil.ZeroLogger(zerologFor(b.log.With("component", "crypto_db")))
	if db.Dialect == dbutil.Postgres {
		// dbutil asks information_schema whether its version tables exist,
		// in any schema: beside another schema with mautrix tables (a
		// bridge in the same database, or a concurrent test) it would take
		// that one's for Threadline's and fail ("relation mx_version does
		// not exist"). Made here, in Threadline's own schema, they exist
		// where dbutil then reads them; an empty one means version 0.
		for _, table := range []string{"mx_version", "crypto_version"} {
			if _, err := db.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+table+" (version INTEGER, compat INTEGER)"); err != nil {
				return fmt.Errorf("matrix: crypto database: %w", err)
			}
		}
	}
	// The helper creates mautrix's state store (mx_*) and crypto store
	// (crypto_*) in db. Its Close would close Threadline's database, so the
	// bot never calls it.
	h, err := cryptohelper.NewCryptoHelper(b.cli, pickleKey, db)
	if err != nil {
		return fmt.Errorf("matrix: encryption: %w", err)
	}
	h.DecryptErrorCallback = b.onUndecryptable
	if err := h.Init(ctx); err != nil {
		return fmt.Errorf("matrix: encryption: %w", err)
	}
	b.cli.Crypto = h
	b.crypto = h
	if b.cfg.RecoveryKeyFile == "" {
		return nil
	}
	key, err := b.setupCrossSigning(ctx, h.Machine())
	if key == nil || err != nil {
		return err
	}
	return b.startKeyBackup(ctx, h.Machine(), key)
}
