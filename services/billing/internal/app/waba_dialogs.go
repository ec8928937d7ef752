package app

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/billing/internal/domain"
)

// AddWabaDialogs is the operator's change of a company's business (WABA)
// dialog balance: count is added (negative takes away; the balance may go
// below 0) and the balance after the change is answered. A count of 0
// changes and writes nothing and answers the balance as it is, so the
// operator can read it. The company must exist (identity says so), else
// 404 8000 and nothing is written.
func (s *Service) AddWabaDialogs(ctx context.Context, companyID int64, count int32) (int64, error) {
	if err := s.requireCompany(ctx, companyID); err != nil {
		return 0, err
	}
	if count == 0 {
		return s.repo.WabaDialogsBalance(ctx, companyID)
	}
	balance, err := s.repo.AddWabaDialogs(ctx, companyID, count)
	if errors.Is(err, domain.ErrBalanceOutOfRange) {
		return 0, apierr.Field(apierr.Body("count"), "value_error",
			"Value error, the balance would leave the range of a 64-bit integer")
	}
	return balance, err
}

// requireCompany answers 404 8000 unless identity knows the company. Ids
// <= 0 name no company and are not asked about.
func (s *Service) requireCompany(ctx context.Context, companyID int64) error {
	if companyID <= 0 {
		return apierr.CompanyNotFound.E()
	}
	exists, err := s.companies.Exists(ctx, companyID)
	if err != nil {
		return err
	}
	if !exists {
		return apierr.CompanyNotFound.E()
	}
	return nil
}

// WabaDialogsBalance is the company's business dialog balance (0 for a
// company billing has never seen); for the messaging service, which passes
// a key's company, so existence is not asked.
func (s *Service) WabaDialogsBalance(ctx context.Context, companyID int64) (int64, error) {
	if companyID <= 0 {
		return 0, apierr.Field(apierr.Body("company_id"), "greater_than", "company_id must be positive")
	}
	return s.repo.WabaDialogsBalance(ctx, companyID)
}

// MaxIdempotencyKey is the longest idempotency key TakeWabaDialog accepts
// (in characters, as the proto's max_len).
const MaxIdempotencyKey = 128

// Take is the answer of TakeWabaDialog.
type Take struct {
	// Taken: one dialog was taken, by this call or an earlier one with the
	// same key.
	Taken bool
	// Balance after the take (as the take first answered it); when not
	// taken, the balance now.
	Balance int64
}

// TakeWabaDialog takes one business dialog of the company for a new dialog
// session of the messaging service, only when the balance is above 0.
// It is idempotent per (company, key): the same key again answers the same
// and takes nothing more. A call that takes nothing leaves no trace, so a
// retry with the same key after a top-up may take. Each dialog taken is
// an outbox event EventWabaDialogOpened, in the take's transaction: the
// partner programme counts the dialogs a client opens in a month.
func (s *Service) TakeWabaDialog(ctx context.Context, companyID int64, key string) (Take, error) {
	if companyID <= 0 {
		return Take{}, apierr.Field(apierr.Body("company_id"), "greater_than", "company_id must be positive")
	}
	// The proto's rules hold at the gRPC edge; these hold for any caller,
	// and PostgreSQL stores no NUL in text.
	n := utf8.RuneCountInString(key)
	switch {
	case n == 0:
		return Take{}, apierr.Field(apierr.Body("idempotency_key"), "string_too_short", "idempotency_key must not be empty")
	case n > MaxIdempotencyKey:
		return Take{}, apierr.Field(apierr.Body("idempotency_key"), "string_too_long",
			"idempotency_key must be at most %d characters", MaxIdempotencyKey)
	case !utf8.ValidString(key):
		return Take{}, apierr.Field(apierr.Body("idempotency_key"), "value_error", "idempotency_key must be valid UTF-8")
	case strings.ContainsRune(key, 0):
		return Take{}, apierr.Field(apierr.Body("idempotency_key"), "string_nul", "idempotency_key must not contain NUL")
	}
	taken, balance, err := s.repo.TakeWabaDialog(ctx, companyID, key, s.now())
	if err != nil {
		return Take{}, err
	}
	return Take{Taken: taken, Balance: balance}, nil
}

// EventWabaDialogOpened is the event of a business dialog taken: the
// company opened one.
const EventWabaDialogOpened = "waba_dialogs.opened"

// DialogOpenedEvent is the outbox payload of EventWabaDialogOpened; the
// partner programme counts it in the UTC month of at.
func DialogOpenedEvent(companyID int64, at time.Time) map[string]any {
	return map[string]any{"company_id": companyID, "at": at.UTC().Format(time.RFC3339Nano)}
}
