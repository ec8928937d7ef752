package app

import (
	"context"
	"errors"
	"fmt"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/messaging/internal/domain"
)

// sessionOpen reports a waba chat's 24-hour dialog session open at now:
// the person wrote within it.
func (s *Service) sessionOpen(chat domain.Chat) bool {
	exp := chat.SessionExpiresAt()
	return exp != nil && s.now().Before(*exp)
}

// prepareTemplate checks a waba_template send against the connection's
// stored template (spec 4.2): unknown, of another locale or not APPROVED
// is 400 15010; values not matching its variables 422. It answers the
// content as the API shows a sent template, and what the messenger needs.
func (s *Service) prepareTemplate(ctx context.Context, company int64, conn Connection, content map[string]any) (map[string]any, *domain.TemplateSend, error) {
	send, err := domain.ParseTemplateSend(content, "waba_template")
	if err != nil {
		return nil, nil, FieldErrors(err)
	}
	t, err := s.wabaTemplates.WabaTemplate(ctx, company, conn.ID, send.Name)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return nil, nil, apierr.MessagingWabaTemplateNotFound.Msg("the connection has no business template %q", send.Name)
	case err != nil:
		return nil, nil, err
	case t.Locale != send.Locale:
		return nil, nil, apierr.MessagingWabaTemplateNotFound.Msg("the business template %q is in locale %q, not %q", t.Name, t.Locale, send.Locale)
	case t.Status != domain.TemplateApproved:
		return nil, nil, apierr.MessagingWabaTemplateNotFound.Msg("the business template %q is %s: only APPROVED templates can be sent", t.Name, t.Status)
	}
	loc := func(field ...any) []any { return apierr.Body(append([]any{"waba_template"}, field...)...) }
	if n := t.BodyParamsCount(); len(send.BodyParams) != n {
		return nil, nil, apierr.Field(loc("body_params"), "value_error", "Value error, the template's body has %d variables: give %d values", n, n)
	}
	if n := t.URLVariables(); len(send.ButtonParams) != n {
		return nil, nil, apierr.Field(loc("button_params"), "value_error", "Value error, the template has %d URL buttons with a variable: give %d values", n, n)
	}
	var mediaHeader any
	var headerText []string
	format := t.HeaderFormat()
	switch {
	case format != nil && *format != domain.HeaderText:
		if len(send.HeaderParams) != 1 || send.HeaderParams[0].URL == nil || send.HeaderParams[0].Text != nil {
			return nil, nil, apierr.Field(loc("header_params"), "value_error", "Value error, the template's %s header needs one value {url}: its file", *format)
		}
		if err := s.checkFileURL(ctx, map[string]any{"url": *send.HeaderParams[0].URL}); err != nil {
			return nil, nil, err
		}
		mediaHeader = map[string]any{"format": *format, "file_name": nil, "file_size": nil, "file_mime_type": nil, "file_url": *send.HeaderParams[0].URL}
	case t.HeaderVariables() == 1:
		if len(send.HeaderParams) != 1 || send.HeaderParams[0].Text == nil || send.HeaderParams[0].URL != nil {
			return nil, nil, apierr.Field(loc("header_params"), "value_error", "Value error, the template's TEXT header has a variable: give one value {text}")
		}
		headerText = []string{*send.HeaderParams[0].Text}
	case len(send.HeaderParams) > 0:
		return nil, nil, apierr.Field(loc("header_params"), "value_error", "Value error, the template's header takes no values")
	}
	buttons := make([]any, 0, len(t.Buttons()))
	for _, b := range t.Buttons() {
		buttons = append(buttons, buttonJSON(b))
	}
	shown := map[string]any{
		"text":            t.RenderText(headerText, send.BodyParams),
		"template_locale": t.Locale,
		"template_name":   t.Name,
		"media_header":    mediaHeader,
		"buttons":         buttons,
		"carousel":        []any{},
	}
	return shown, &send, nil
}

// buttonJSON is a template button as a sent message shows it: every field
// of the button object, null when the button has none.
func buttonJSON(b domain.Button) map[string]any {
	// Plain values only: content becomes a protobuf Struct.
	val := func(s *string) any {
		if s == nil {
			return nil
		}
		return *s
	}
	return map[string]any{
		"type": b.Type, "text": val(b.Text), "otp_type": val(b.OtpType), "autofill_text": val(b.AutofillText),
		"package_name": val(b.PackageName), "signature_hash": val(b.SignatureHash), "phone_number": val(b.PhoneNumber), "url": val(b.URL),
	}
}

// viaAutoTemplate turns a waba text outside the dialog session into a send
// of the connection's auto template (waba_auto_templates_enabled), made on
// first need; the message stays a text. done is set when the send has
// failed for good.
func (s *Service) viaAutoTemplate(ctx context.Context, c Claim, conn Connection, m *domain.Message) (done bool, err error) {
	t, err := s.wabaTemplates.AutoWabaTemplate(ctx, c.CompanyID, conn.ID, func() domain.BusinessTemplate {
		return autoTemplate(c.CompanyID, conn.ID)
	})
	if err != nil {
		return false, fmt.Errorf("auto template: %w", err)
	}
	if t.Status != domain.TemplateApproved {
		return true, s.repo.SendFailed(ctx, m.ID, domain.ErrGeneric,
			fmt.Sprintf("the connection's auto template %s is %s, not APPROVED", t.Name, t.Status))
	}
	text, _ := m.Content["text"].(string)
	m.Template = &domain.TemplateSend{
		Name: t.Name, Locale: t.Locale, HeaderParams: []domain.HeaderParam{}, BodyParams: []string{text}, ButtonParams: []string{},
	}
	return false, nil
}

// FieldErrors is the 422 of the values a domain parser refused
// (domain.FieldErrors, located from the request body down); other
// errors pass unchanged.
func FieldErrors(err error) error {
	var te domain.FieldErrors
	if !errors.As(err, &te) {
		return err
	}
	out := make([]apierr.FieldError, len(te))
	for i, f := range te {
		out[i] = apierr.FieldError{Location: apierr.Body(f.Path...), Message: f.Message, Type: f.Type}
	}
	return apierr.Validation(out...)
}
