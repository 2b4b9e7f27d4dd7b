// matrix.go: the Matrix bot's account row (migration 0005): its login, kept as
// the bot's own JSON, and its /sync position.
package store

import (
	"context"
	"errors"
	"fmt"
)

const (
	queryMatrixAccount = `SELECT login, next_batch, filter_id FROM matrix_accounts WHERE user_id = $1`
	querySaveLogin     = `INSERT INTO matrix_accounts (user_id, login, updated_at) VALUES ($1, $2, $3)
ON CONFLICT (user_id) DO UPDATE SET login = excluded.login, updated_at = excluded.updated_at`
	querySaveNextBatch = `INSERT INTO matrix_accounts (user_id, next_batch, updated_at) VALUES ($1, $2, $3)
ON CONFLICT (user_id) DO UPDATE SET next_batch = excluded.next_batch, updated_at = excluded.updated_at`
	querySaveFilterID = `INSERT INTO matrix_accounts (user_id, filter_id, updated_at) VALUES ($1, $2, $3)
ON CONFLICT (user_id) DO UPDATE SET filter_id = excluded.filter_id, updated_at = excluded.updated_at`
)

type matrixRow struct {
	Login     string `db:"login"`
	NextBatch string `db:"next_batch"`
	FilterID  string `db:"filter_id"`
}

func (s *Store) matrixAccount(ctx context.Context, userID string) (matrixRow, bool, error) {
	var r matrixRow
	if err := s.db.GetContext(ctx, &r, queryMatrixAccount, userID); err != nil {
		if err = translate(err); errors.Is(err, ErrNotFound) {
			return matrixRow{}, false, nil
		}
		return matrixRow{}, false, fmt.Errorf("store: matrix account %s: %w", userID, err)
	}
	return r, true, nil
}

// MatrixLogin returns the login the Matrix bot saved for the user; ok is false
// when it saved none.
func (s *Store) MatrixLogin(ctx context.Context, userID string) (login []byte, ok bool, err error) {
	r, found, err := s.matrixAccount(ctx, userID)
	if err != nil || !found || r.Login == "" {
		return nil, false, err
	}
	return []byte(r.Login), true, nil
}

// SaveMatrixLogin stores the user's login (the bot's JSON, holding its access
// token: the row is a secret).
func (s *Store) SaveMatrixLogin(ctx context.Context, userID string, login []byte) error {
	if _, err := s.db.ExecContext(ctx, querySaveLogin, userID, string(login), now()); err != nil {
		return fmt.Errorf("store: save matrix login of %s: %w", userID, translate(err))
	}
	return nil
}

// MatrixSync returns the user's /sync position and filter id, empty when none
// is saved.
func (s *Store) MatrixSync(ctx context.Context, userID string) (nextBatch, filterID string, err error) {
	r, _, err := s.matrixAccount(ctx, userID)
	return r.NextBatch, r.FilterID, err
}

// SaveMatrixNextBatch stores the user's /sync position.
func (s *Store) SaveMatrixNextBatch(ctx context.Context, userID, nextBatch string) error {
	if _, err := s.db.ExecContext(ctx, querySaveNextBatch, userID, nextBatch, now()); err != nil {
		return fmt.Errorf("store: save matrix sync position of %s: %w", userID, translate(err))
	}
	return nil
}

// SaveMatrixFilterID stores the user's /sync filter id.
func (s *Store) SaveMatrixFilterID(ctx context.Context, userID, filterID string) error {
	if _, err := s.db.ExecContext(ctx, querySaveFilterID, userID, filterID, now()); err != nil {
		return fmt.Errorf("store: save matrix filter of %s: %w", userID, translate(err))
	}
	return nil
}
