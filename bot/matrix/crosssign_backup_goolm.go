//go:build goolm

// crosssign_backup_goolm.go: server-side key backup (m.megolm_backup.v1).
// The backup's private key lives in the account's secret storage, under the
// recovery key; the backup version's auth data is signed with the master
// key, so the account's other clients trust it. Every Megolm session the
// bot stores (its own outbound ones, and those other devices send it) is
// uploaded soon after; a crypto store that does not know the current
// backup (a new device, a lost database) first restores the keys of earlier
// messages from it.

package matrix

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/crypto/backup"
	"maunium.net/go/mautrix/crypto/signatures"
	"maunium.net/go/mautrix/crypto/ssss"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// backupBatch is the most sessions one upload carries.
const backupBatch = 100

// backupRetry is how long a failed upload waits before the next try.
const backupRetry = 30 * time.Second

// startKeyBackup restores from and uploads to the account's key backup,
// creating it when the account has none. The uploader runs until ctx ends.
func (b *Bot) startKeyBackup(ctx context.Context, mach *crypto.OlmMachine, key *ssss.Key) error {
	bk, err := b.backupKey(ctx, mach, key)
	if err != nil {
		return err
	}
	version, created, err := b.backupVersion(ctx, mach, bk)
	if err != nil {
		return err
	}
	if created {
		if err := mach.SetKeyBackupVersion(ctx, version); err != nil {
			return fmt.Errorf("%w: %w", ErrCrossSigning, err)
		}
	}
	if mach.KeyBackupVersion() != version {
		// A crypto store that has not used this backup: a new device, a
		// lost database, or a backup made since. Take what it holds.
		if err := mach.GetAndStoreKeyBackup(ctx, version, bk); err != nil {
			return fmt.Errorf("%w: restore from key backup %s: %w", ErrCrossSigning, version, err)
		}
		if err := mach.SetKeyBackupVersion(ctx, version); err != nil {
			return fmt.Errorf("%w: %w", ErrCrossSigning, err)
		}
		b.log.InfoContext(ctx, "restored room keys from the key backup", logkey.Version, version)
	}
	up := &backupUploader{mach: mach, cli: b.cli, key: bk, version: version, log: b.log, kick: make(chan struct{}, 1)}
	mach.CryptoStore = &backupStore{Store: mach.CryptoStore, version: version, kick: up.nudge}
	up.nudge()
	go up.run(ctx)
	return nil
}

// backupKey is the backup's private key from secret storage; a new one is
// stored there when there is none.
func (b *Bot) backupKey(ctx context.Context, mach *crypto.OlmMachine, key *ssss.Key) (*backup.MegolmBackupKey, error) {
	raw, err := mach.SSSS.GetDecryptedAccountData(ctx, event.AccountDataMegolmBackupKey, key)
	switch {
	case err == nil:
		bk, err := backup.MegolmBackupKeyFromBytes(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: the key backup's key in secret storage: %w", ErrCrossSigning, err)
		}
		return bk, nil
	case !errors.Is(err, mautrix.MNotFound) && !errors.Is(err, ssss.ErrNotEncryptedForKey):
		return nil, fmt.Errorf("%w: read the key backup's key from secret storage: %w", ErrCrossSigning, err)
	}
	bk, err := backup.NewMegolmBackupKey()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCrossSigning, err)
	}
	if err := mach.SSSS.SetEncryptedAccountData(ctx, event.AccountDataMegolmBackupKey, bk.Bytes(), key); err != nil {
		return nil, fmt.Errorf("%w: store the key backup's key in secret storage: %w", ErrCrossSigning, err)
	}
	return bk, nil
}

// backupVersion is the account's current backup when it is made for bk,
// else a new backup version for bk (created), signed with the master key.
func (b *Bot) backupVersion(ctx context.Context, mach *crypto.OlmMachine, bk *backup.MegolmBackupKey) (version id.KeyBackupVersion, created bool, err error) {
	pub := id.Ed25519(base64.RawStdEncoding.EncodeToString(bk.PublicKey().Bytes()))
	latest, err := b.cli.GetKeyBackupLatestVersion(ctx)
	switch {
	case err == nil && latest.Algorithm == id.KeyBackupAlgorithmMegolmBackupV1 && latest.AuthData.PublicKey == pub:
		return latest.Version, false, nil
	case err != nil && !errors.Is(err, mautrix.MNotFound):
		return "", false, fmt.Errorf("%w: the account's key backup: %w", ErrCrossSigning, err)
	}
	auth := backup.MegolmAuthData{PublicKey: pub}
	master := mach.CrossSigningKeys.MasterKey
	sig, err := master.SignJSON(auth)
	if err != nil {
		return "", false, fmt.Errorf("%w: sign the key backup: %w", ErrCrossSigning, err)
	}
	auth.Signatures = signatures.NewSingleSignature(b.me, id.KeyAlgorithmEd25519, master.PublicKey().String(), sig)
	resp, err := b.cli.CreateKeyBackupVersion(ctx, &mautrix.ReqRoomKeysVersionCreate[backup.MegolmAuthData]{
		Algorithm: id.KeyBackupAlgorithmMegolmBackupV1, AuthData: auth,
	})
	if err != nil {
		return "", false, fmt.Errorf("%w: create the key backup: %w", ErrCrossSigning, err)
	}
	b.log.InfoContext(ctx, "created the account's key backup", logkey.Version, resp.Version)
	return resp.Version, true, nil
}

// backupStore is the crypto store that tells the uploader of each Megolm
// session stored that the backup does not have yet.
type backupStore struct {
	crypto.Store
	version id.KeyBackupVersion
	kick    func()
}

func (s *backupStore) PutGroupSession(ctx context.Context, sess *crypto.InboundGroupSession) error {
	if err := s.Store.PutGroupSession(ctx, sess); err != nil {
		return err
	}
	if sess.KeyBackupVersion != s.version {
		s.kick()
	}
	return nil
}

// backupUploader uploads the sessions the backup does not have, when told
// (and after a failure, every backupRetry).
type backupUploader struct {
	mach    *crypto.OlmMachine
	cli     *mautrix.Client
	key     *backup.MegolmBackupKey
	version id.KeyBackupVersion
	log     *slog.Logger
	kick    chan struct{}
}

func (u *backupUploader) nudge() {
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

func (u *backupUploader) run(ctx context.Context) {
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-u.kick:
		case <-retry:
		}
		retry = nil
		if err := u.upload(ctx); err != nil && ctx.Err() == nil {
			u.log.WarnContext(ctx, "upload room keys to the key backup", logkey.Version, u.version, logkey.Err, err, logkey.RetryIn, backupRetry)
			retry = time.After(backupRetry)
		}
	}
}

// upload sends every stored session the backup lacks, a batch at a time,
// and marks each as backed up.
func (u *backupUploader) upload(ctx context.Context) error {
	for {
		sessions, err := u.mach.CryptoStore.GetGroupSessionsWithoutKeyBackupVersion(ctx, u.version).AsList()
		if err != nil {
			return err
		}
		if len(sessions) == 0 {
			return nil
		}
		if len(sessions) > backupBatch {
			sessions = sessions[:backupBatch]
		}
		req := &mautrix.ReqKeyBackup{Rooms: map[id.RoomID]mautrix.ReqRoomKeyBackup{}}
		for _, s := range sessions {
			data, err := u.sessionData(s)
			if err != nil {
				return err
			}
			room := req.Rooms[s.RoomID]
			if room.Sessions == nil {
				room.Sessions = map[id.SessionID]mautrix.ReqKeyBackupData{}
			}
			room.Sessions[s.ID()] = data
			req.Rooms[s.RoomID] = room
		}
		if _, err := u.cli.PutKeysInBackup(ctx, u.version, req); err != nil {
			return err
		}
		for _, s := range sessions {
			if err := u.markBackedUp(ctx, s); err != nil {
				return err
			}
		}
	}
}

// markBackedUp records that the backup has s: in mautrix's SQL store the
// one column, elsewhere the whole session again.
func (u *backupUploader) markBackedUp(ctx context.Context, s *crypto.InboundGroupSession) error {
	st := u.mach.CryptoStore
	if w, ok := st.(*backupStore); ok {
		st = w.Store
	}
	if sql, ok := st.(interface {
		SetGroupSessionKeyBackupVersion(context.Context, id.SessionID, id.KeyBackupVersion) error
	}); ok {
		return sql.SetGroupSessionKeyBackupVersion(ctx, s.ID(), u.version)
	}
	s.KeyBackupVersion = u.version
	return st.PutGroupSession(ctx, s)
}

// sessionData is one session as the backup keeps it: its key from the
// first index known, encrypted to the backup's public key.
func (u *backupUploader) sessionData(s *crypto.InboundGroupSession) (mautrix.ReqKeyBackupData, error) {
	first := s.Internal.FirstKnownIndex()
	exported, err := s.Internal.Export(first)
	if err != nil {
		return mautrix.ReqKeyBackupData{}, fmt.Errorf("export session %s: %w", s.ID(), err)
	}
	chain := s.ForwardingChains
	if chain == nil {
		chain = []string{}
	}
	enc, err := backup.EncryptSessionData(u.key, backup.MegolmSessionData{
		Algorithm:          id.AlgorithmMegolmV1,
		ForwardingKeyChain: chain,
		SenderClaimedKeys:  backup.SenderClaimedKeys{Ed25519: s.SigningKey},
		SenderKey:          s.SenderKey,
		SessionKey:         string(exported),
		SharedHistory:      s.SharedHistory,
	})
	if err != nil {
		return mautrix.ReqKeyBackupData{}, fmt.Errorf("encrypt session %s: %w", s.ID(), err)
	}
	raw, err := json.Marshal(enc)
	if err != nil {
		return mautrix.ReqKeyBackupData{}, err
	}
	return mautrix.ReqKeyBackupData{
		FirstMessageIndex: int(first),
		ForwardedCount:    len(s.ForwardingChains),
		SessionData:       raw,
	}, nil
}
