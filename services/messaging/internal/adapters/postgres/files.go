package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

var _ app.FileRepository = (*Repo)(nil)

// CreateFile implements app.FileRepository.
func (r *Repo) CreateFile(ctx context.Context, f app.File) error {
	_, err := r.db.Exec(ctx, `INSERT INTO files (token, company_id, name, size, mime_type, storage_key)
		VALUES ($1, $2, $3, $4, $5, $6)`, f.Token, f.CompanyID, f.Name, f.Size, f.MimeType, f.StorageKey)
	if err != nil {
		return fmt.Errorf("insert file: %w", err)
	}
	return nil
}

// FileByToken implements app.FileRepository.
func (r *Repo) FileByToken(ctx context.Context, token string) (app.File, error) {
	var f app.File
	err := r.db.QueryRow(ctx, `SELECT token, company_id, name, size, mime_type, storage_key, created_at
		FROM files WHERE token = $1`, token).
		Scan(&f.Token, &f.CompanyID, &f.Name, &f.Size, &f.MimeType, &f.StorageKey, &f.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return app.File{}, domain.ErrNotFound
	}
	if err != nil {
		return app.File{}, fmt.Errorf("read file: %w", err)
	}
	return f, nil
}
