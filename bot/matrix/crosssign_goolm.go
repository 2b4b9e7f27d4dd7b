//go:build goolm

// crosssign_goolm.go: the bot account's cross-signing identity. On the
// first start the account gets its master, self-signing and user-signing
// keys, kept in its secret storage under a recovery key that is written to
// Config.RecoveryKeyFile; on later starts, and on a new device, the keys
// are read back from secret storage with that key, never generated again.
// Each device of the bot is signed with the self-signing key, so clients
// that only trust cross-signed devices (MSC4153) read the bot and share
// their keys with it.

package matrix

import (
	"context"
	"fmt"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/crypto/ssss"
	"maunium.net/go/mautrix/crypto/utils"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// setupCrossSigning loads or creates the account's cross-signing keys, signs
// this device and returns the secret storage key (nil when the bot goes on
// without cross-signing).
func (b *Bot) setupCrossSigning(ctx context.Context, mach *crypto.OlmMachine) (*ssss.Key, error) {
	path := b.cfg.RecoveryKeyFile
	recovery, have, err := readRecoveryKey(path)
	if err != nil {
		return nil, err
	}
	if have && looseMode(path) {
		b.log.WarnContext(ctx, "the recovery key file can be read by other users; chmod 600 it", logkey.Path, path)
	}
	published, err := b.publishedMasterKey(ctx)
	if err != nil {
		return nil, err
	}
	var key *ssss.Key
	switch {
	case published != "" && !have:
		b.log.WarnContext(ctx, "the bot account already has cross-signing keys but the recovery key file is missing, "+
			"so this device stays unsigned and there is no key backup; the account's identity is left as it is: "+
			"put the account's recovery key in the file and restart",
			logkey.Path, path, logkey.Key, published)
		return nil, nil
	case published != "":
		key, err = b.loadCrossSigning(ctx, mach, recovery, published)
		if err != nil {
			return nil, err
		}
	default:
		key, err = b.createCrossSigning(ctx, mach, recovery, have)
		if key == nil || err != nil {
			return nil, err
		}
	}
	_, signed, err := mach.GetOwnVerificationStatus(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCrossSigning, err)
	}
	if !signed {
		if err := mach.SignOwnDevice(ctx, mach.OwnIdentity()); err != nil {
			return nil, fmt.Errorf("%w: sign this device: %w", ErrCrossSigning, err)
		}
		if err := mach.SignOwnMasterKey(ctx); err != nil {
			return nil, fmt.Errorf("%w: sign the master key with this device: %w", ErrCrossSigning, err)
		}
		b.log.InfoContext(ctx, "signed this device with the bot's cross-signing key", logkey.DeviceID, b.cli.DeviceID)
	}
	return key, nil
}

// publishedMasterKey is the account's master cross-signing key as the
// homeserver has it ("" when it has none).
func (b *Bot) publishedMasterKey(ctx context.Context) (id.Ed25519, error) {
	resp, err := b.cli.QueryKeys(ctx, &mautrix.ReqQueryKeys{DeviceKeys: mautrix.DeviceKeysRequest{b.me: mautrix.DeviceIDList{}}})
	if err != nil {
		return "", fmt.Errorf("%w: query the account's keys: %w", ErrCrossSigning, err)
	}
	for _, k := range resp.MasterKeys[b.me].Keys {
		return k, nil
	}
	return "", nil
}

// loadCrossSigning opens secret storage with the recovery key and takes the
// account's cross-signing keys from it.
func (b *Bot) loadCrossSigning(ctx context.Context, mach *crypto.OlmMachine, recovery string, published id.Ed25519) (*ssss.Key, error) {
	keyID, meta, err := mach.SSSS.GetDefaultKeyData(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: the account's secret storage: %w", ErrCrossSigning, err)
	}
	key, err := meta.VerifyRecoveryKey(keyID, recovery)
	if err != nil {
		return nil, fmt.Errorf("%w: the key in %s does not open the account's secret storage: %w", ErrCrossSigning, b.cfg.RecoveryKeyFile, err)
	}
	if err := mach.FetchCrossSigningKeysFromSSSS(ctx, key); err != nil {
		return nil, fmt.Errorf("%w: read the cross-signing keys from secret storage: %w", ErrCrossSigning, err)
	}
	if got := mach.CrossSigningKeys.MasterKey.PublicKey(); got != published {
		mach.CrossSigningKeys = nil
		return nil, fmt.Errorf("%w: secret storage holds the master key %s, but the account publishes %s", ErrCrossSigning, got, published)
	}
	return key, nil
}

// createCrossSigning makes the account's cross-signing identity: a secret
// storage key (the one in the recovery key file when there is one, else a
// new one, written to the file before anything is uploaded) and the three
// cross-signing keys, stored in secret storage and published. It returns
// nil, nil when the homeserver wants a password the bot does not have.
func (b *Bot) createCrossSigning(ctx context.Context, mach *crypto.OlmMachine, recovery string, have bool) (*ssss.Key, error) {
	path := b.cfg.RecoveryKeyFile
	var key *ssss.Key
	var err error
	if have {
		raw := utils.DecodeBase58RecoveryKey(recovery)
		if raw == nil {
			return nil, fmt.Errorf("%w: the recovery key file %s does not hold a recovery key", ErrCrossSigning, path)
		}
		key, err = ssss.WrapKey(raw, nil)
	} else {
		key, err = ssss.NewKey("")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCrossSigning, err)
	}
	if !have {
		if err := writeRecoveryKey(path, key.RecoveryKey()); err != nil {
			return nil, err
		}
		b.log.InfoContext(ctx, "created the bot's recovery key; keep a copy of this file: it is the only way to the bot's cross-signing keys and key backup", logkey.Path, path)
	}
	if err := mach.SSSS.SetKeyData(ctx, key.ID, key.Metadata); err != nil {
		return nil, fmt.Errorf("%w: store the secret storage key: %w", ErrCrossSigning, err)
	}
	keys, err := mach.GenerateCrossSigningKeys()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCrossSigning, err)
	}
	if err := mach.UploadCrossSigningKeysToSSSS(ctx, key, keys); err != nil {
		return nil, fmt.Errorf("%w: store the cross-signing keys in secret storage: %w", ErrCrossSigning, err)
	}
	if err := mach.PublishCrossSigningKeys(ctx, keys, b.passwordAuth); err != nil {
		if b.cfg.Password == "" {
			b.log.WarnContext(ctx, "the homeserver did not take the bot's cross-signing keys without the account password "+
				"(set matrix.password); going on without cross-signing", logkey.Err, err)
			return nil, nil
		}
		return nil, fmt.Errorf("%w: publish the cross-signing keys: %w", ErrCrossSigning, err)
	}
	if err := mach.SSSS.SetDefaultKeyID(ctx, key.ID); err != nil {
		return nil, fmt.Errorf("%w: mark the secret storage key as the default: %w", ErrCrossSigning, err)
	}
	if err := mach.ImportCrossSigningKeys(keys.Seeds()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCrossSigning, err)
	}
	b.log.InfoContext(ctx, "created the bot's cross-signing keys", logkey.Key, keys.MasterKey.PublicKey())
	return key, nil
}

// passwordAuth answers the homeserver's user-interactive authentication
// with the account password (nil without one: the request fails).
func (b *Bot) passwordAuth(resp *mautrix.RespUserInteractive) any {
	if b.cfg.Password == "" {
		return nil
	}
	return &mautrix.ReqUIAuthLogin{
		BaseAuthData: mautrix.BaseAuthData{Type: mautrix.AuthTypePassword, Session: resp.Session},
		User:         string(b.me),
		Password:     b.cfg.Password,
	}
}
