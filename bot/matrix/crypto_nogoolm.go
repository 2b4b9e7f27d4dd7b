//go:build !goolm

// crypto_nogoolm.go: builds without the goolm tag have no Olm implementation
// (mautrix's default, libolm, needs cgo and the C library), so encryption is
// refused with a clear error instead of failing to build.

package matrix

import "context"

// EncryptionAvailable reports whether this build can do end-to-end encryption.
const EncryptionAvailable = false

func (b *Bot) initCrypto(context.Context, []byte) error { return ErrEncryptionUnavailable }
