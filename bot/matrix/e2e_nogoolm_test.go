//go:build !goolm

package matrix_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/bot/matrix"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatstore"
)

// TestEncryptionNeedsGoolm: without -tags goolm a bot configured for
// encryption refuses to start, and says what to do.
func TestEncryptionNeedsGoolm(t *testing.T) {
	if matrix.EncryptionAvailable {
		t.Fatal("EncryptionAvailable in a build without goolm")
	}
	w := newWorld(t, "sqlite")
	threads := chatops.NewDesk(w.core, chatstore.Store{St: w.st}, w.policy, chatops.DeskOptions{DefaultAgent: "fake"}, w.log)
	defer threads.Close()
	bot, err := matrix.New(matrix.Config{
		Homeserver: w.hs.URL, UserID: string(w.botUser.ID), Password: w.botUser.Password,
		Encryption: true, CryptoDB: w.st.DB().DB, CryptoDialect: w.dialect,
	}, threads, w.st, w.st, w.log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err = bot.Run(ctx)
	if !errors.Is(err, matrix.ErrEncryptionUnavailable) {
		t.Fatalf("Run = %v, want ErrEncryptionUnavailable", err)
	}
	if want := "-tags goolm"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}
