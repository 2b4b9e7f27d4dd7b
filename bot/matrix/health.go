// The bot's health, for serve's /healthz.

package matrix

import (
	"context"
	"errors"
	"fmt"
)

// Healthy reports whether the bot is connected: it has synced (Ready), and
// the homeserver answers who the bot is.
func (b *Bot) Healthy(ctx context.Context) error {
	select {
	case <-b.Ready():
	default:
		return errors.New("not connected yet")
	}
	if _, err := b.Client().Whoami(ctx); err != nil {
		return fmt.Errorf("whoami: %w", err)
	}
	return nil
}
