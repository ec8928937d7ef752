package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/messaging/internal/domain"
)

// WabaTemplateRepository keeps the business templates (adapters/postgres):
// the platform's copy of what the provider holds, which lists and sends
// read without calling the provider.
type WabaTemplateRepository interface {
	// CreateWabaTemplate stores t; ErrTemplateNameTaken when its connection
	// has a template of that name.
	CreateWabaTemplate(ctx context.Context, t domain.BusinessTemplate) (domain.BusinessTemplate, error)
	// WabaTemplate is a template of the company's connection by name;
	// domain.ErrNotFound when none.
	WabaTemplate(ctx context.Context, company, connectionID int64, name string) (domain.BusinessTemplate, error)
	// WabaTemplateSummaries are the company's templates (of one
	// connection when connectionID is set) as the list shows them, newest
	// first.
	WabaTemplateSummaries(ctx context.Context, company int64, connectionID *int64) ([]domain.TemplateSummary, error)
	// ResubmitWabaTemplate stores t's category, components and examples
	// with status SUBMITTED and no rejected reason; domain.ErrNotFound when
	// the template is gone.
	ResubmitWabaTemplate(ctx context.Context, t domain.BusinessTemplate) (domain.BusinessTemplate, error)
	// DeleteWabaTemplate removes a template; domain.ErrNotFound when none.
	DeleteWabaTemplate(ctx context.Context, company, connectionID int64, name string) error
	// ModerateWabaTemplate sets a template's status and rejected reason
	// and, when they change, emits EventWabaTemplateStatus in the same
	// transaction; domain.ErrNotFound when the connection has no template
	// of that name.
	ModerateWabaTemplate(ctx context.Context, connectionID int64, name, status, reason string) (domain.BusinessTemplate, error)
	// AutoWabaTemplate is the connection's auto template, made from
	// fresh() (and stored) when it has none; concurrent calls get one.
	AutoWabaTemplate(ctx context.Context, company, connectionID int64, fresh func() domain.BusinessTemplate) (domain.BusinessTemplate, error)
}

// ErrTemplateNameTaken is a generated template name its connection has.
var ErrTemplateNameTaken = errors.New("template name taken")

// TemplateProvider is the provider side of the business channel's
// templates: the sandbox in test mode. Its errors are answered as they
// are (a *apierr.Error reaches the client).
type TemplateProvider interface {
	// SubmitTemplate hands a new or changed template to the provider's
	// moderation.
	SubmitTemplate(ctx context.Context, conn Connection, t domain.BusinessTemplate) error
	// DeleteTemplate removes a template at the provider.
	DeleteTemplate(ctx context.Context, conn Connection, name string) error
}

// templateUnknown is 15010 on the template routes, where an unknown name
// is a missing resource (404), not a refused send (400).
func templateUnknown() error {
	return apierr.MessagingWabaTemplateNotFound.E().WithStatus(http.StatusNotFound)
}

// wabaConnection is a waba connection of the company; any other is 404
// error 10000.
func (s *Service) wabaConnection(ctx context.Context, company, id int64) (Connection, error) {
	conn, err := s.connections.Connection(ctx, company, id)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && conn.Type != domain.Waba) {
		return Connection{}, apierr.ConnectionNotFound.E()
	}
	return conn, err
}

// CreateWabaTemplateCmd is POST /messaging/templates/waba_templates/.
type CreateWabaTemplateCmd struct {
	CompanyID    int64
	ConnectionID int64
	CustomName   string
	Category     string
	Locale       string
	Components   []domain.Component
	Examples     domain.Examples
}

// CreateWabaTemplate validates a template, stores it SUBMITTED under a
// generated name and submits it to the provider; a refusal of the
// provider removes it again.
func (s *Service) CreateWabaTemplate(ctx context.Context, cmd CreateWabaTemplateCmd) (domain.BusinessTemplate, error) {
	conn, err := s.wabaConnection(ctx, cmd.CompanyID, cmd.ConnectionID)
	if err != nil {
		return domain.BusinessTemplate{}, err
	}
	if err := ValidateWabaTemplate(cmd.Category, cmd.Components, cmd.Examples); err != nil {
		return domain.BusinessTemplate{}, err
	}
	t := domain.BusinessTemplate{
		CompanyID: cmd.CompanyID, ConnectionID: conn.ID, CustomName: cmd.CustomName, Locale: cmd.Locale,
		Category: cmd.Category, Status: domain.TemplateSubmitted, Components: cmd.Components, Examples: cmd.Examples,
	}
	// 36^6 names per custom name: a second draw practically never happens.
	for range 5 {
		t.Name = cmd.CustomName + "_" + nameSuffix()
		var stored domain.BusinessTemplate
		stored, err = s.wabaTemplates.CreateWabaTemplate(ctx, t)
		if errors.Is(err, ErrTemplateNameTaken) {
			continue
		}
		if err != nil {
			return domain.BusinessTemplate{}, err
		}
		if err := s.templateProvider.SubmitTemplate(ctx, conn, stored); err != nil {
			if derr := s.wabaTemplates.DeleteWabaTemplate(ctx, cmd.CompanyID, conn.ID, t.Name); derr != nil && !errors.Is(derr, domain.ErrNotFound) {
				return domain.BusinessTemplate{}, errors.Join(err, fmt.Errorf("remove refused template: %w", derr))
			}
			return domain.BusinessTemplate{}, err
		}
		return stored, nil
	}
	return domain.BusinessTemplate{}, fmt.Errorf("no free name for %q: %w", cmd.CustomName, err)
}

const suffixAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// nameSuffix is six random lower-case letters and digits.
func nameSuffix() string {
	b := make([]byte, 6)
	for i := range b {
		b[i] = suffixAlphabet[randIndex(len(suffixAlphabet))]
	}
	return string(b)
}

// randIndex is uniform in [0, n) for n ≤ 256: bytes past the last whole
// multiple of n are drawn again.
func randIndex(n int) int {
	limit := 256 - 256%n
	var b [1]byte
	for {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
		if int(b[0]) < limit {
			return int(b[0]) % n
		}
	}
}

// WabaTemplates lists the company's business templates from the
// platform's copy.
func (s *Service) WabaTemplates(ctx context.Context, company int64, connectionID *int64) ([]domain.TemplateSummary, error) {
	return s.wabaTemplates.WabaTemplateSummaries(ctx, company, connectionID)
}

// UpdateWabaTemplateCmd is PATCH /messaging/templates/waba_templates/actions/update.
type UpdateWabaTemplateCmd struct {
	CompanyID    int64
	ConnectionID int64
	Name         string
	Components   []domain.Component
	// Category and Examples stay as they are when nil.
	Category *string
	Examples *domain.Examples
}

// UpdateWabaTemplate replaces a template's components and submits it to
// moderation again.
func (s *Service) UpdateWabaTemplate(ctx context.Context, cmd UpdateWabaTemplateCmd) (domain.BusinessTemplate, error) {
	conn, err := s.wabaConnection(ctx, cmd.CompanyID, cmd.ConnectionID)
	if err != nil {
		return domain.BusinessTemplate{}, err
	}
	t, err := s.wabaTemplates.WabaTemplate(ctx, cmd.CompanyID, conn.ID, cmd.Name)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.BusinessTemplate{}, templateUnknown()
	}
	if err != nil {
		return domain.BusinessTemplate{}, err
	}
	t.Components = cmd.Components
	if cmd.Category != nil {
		t.Category = *cmd.Category
	}
	if cmd.Examples != nil {
		t.Examples = *cmd.Examples
	}
	if err := ValidateWabaTemplate(t.Category, t.Components, t.Examples); err != nil {
		return domain.BusinessTemplate{}, err
	}
	if err := s.templateProvider.SubmitTemplate(ctx, conn, t); err != nil {
		return domain.BusinessTemplate{}, err
	}
	t, err = s.wabaTemplates.ResubmitWabaTemplate(ctx, t)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.BusinessTemplate{}, templateUnknown()
	}
	return t, err
}

// DeleteWabaTemplate removes a template at the provider, then here.
func (s *Service) DeleteWabaTemplate(ctx context.Context, company, connectionID int64, name string) error {
	conn, err := s.wabaConnection(ctx, company, connectionID)
	if err != nil {
		return err
	}
	if _, err := s.wabaTemplates.WabaTemplate(ctx, company, conn.ID, name); err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			return templateUnknown()
		}
		return err
	}
	if err := s.templateProvider.DeleteTemplate(ctx, conn, name); err != nil {
		return err
	}
	err = s.wabaTemplates.DeleteWabaTemplate(ctx, company, conn.ID, name)
	if errors.Is(err, domain.ErrNotFound) {
		return templateUnknown() // a concurrent delete won
	}
	return err
}

// ModerateWabaTemplate applies the provider's verdict on a template (in
// test mode through the sandbox): APPROVED, REJECTED with a reason, PAUSED
// or DISABLED.
func (s *Service) ModerateWabaTemplate(ctx context.Context, connectionID int64, name, status string, reason *string) (domain.BusinessTemplate, error) {
	conn, _, err := s.connections.ConnectionByID(ctx, connectionID)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && conn.Type != domain.Waba) {
		return domain.BusinessTemplate{}, apierr.ConnectionNotFound.E()
	}
	if err != nil {
		return domain.BusinessTemplate{}, err
	}
	switch {
	case status == domain.TemplateRejected && reason == nil:
		return domain.BusinessTemplate{}, apierr.Field(apierr.Body("rejected_reason"), "missing", "Field required: a REJECTED template needs its reason")
	case status != domain.TemplateRejected && reason != nil:
		return domain.BusinessTemplate{}, apierr.Field(apierr.Body("rejected_reason"), "value_error", "Value error, only a REJECTED template has a reason")
	}
	why := ""
	if reason != nil {
		why = *reason
	}
	t, err := s.wabaTemplates.ModerateWabaTemplate(ctx, conn.ID, name, status, why)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.BusinessTemplate{}, templateUnknown()
	}
	return t, err
}

// Auto template of a connection with waba_auto_templates_enabled: a text
// outside the dialog session goes out as this template with the text as
// its one value. The platform makes it on first need, approved: its body
// is nothing but the value, so there is nothing to moderate.
const (
	autoTemplateName   = "switchboard_auto_text"
	autoTemplateLocale = "en"
)

func autoTemplate(company, connectionID int64) domain.BusinessTemplate {
	body, example := "{{1}}", "Hello"
	return domain.BusinessTemplate{
		CompanyID: company, ConnectionID: connectionID, Name: autoTemplateName, CustomName: autoTemplateName,
		Locale: autoTemplateLocale, Category: "UTILITY", Status: domain.TemplateApproved, Auto: true,
		Components: []domain.Component{{Type: domain.ComponentBody, Text: &body}},
		Examples:   domain.Examples{BodyText: []string{example}},
	}
}

// ValidateWabaTemplate checks a template's components and examples
// against each other (design/messaging.md "Business (WABA) templates");
// the transport has checked each field on its own. Errors are 422 located
// under body.components and body.examples.
func ValidateWabaTemplate(category string, comps []domain.Component, ex domain.Examples) error {
	at := func(i int, field ...any) []any { return apierr.Body(append([]any{"components", i}, field...)...) }
	seen := map[string]int{}
	for i, c := range comps {
		if first, dup := seen[c.Type]; dup {
			return apierr.Field(at(i, "type"), "value_error", "Value error, a template has at most one %s component (another is components.%d)", c.Type, first)
		}
		seen[c.Type] = i
		if err := checkComponent(category, c, func(field ...any) []any { return at(i, field...) }); err != nil {
			return err
		}
	}
	if _, ok := seen[domain.ComponentBody]; !ok {
		return apierr.Field(apierr.Body("components"), "value_error", "Value error, a template needs one BODY component")
	}
	t := domain.BusinessTemplate{Components: comps}
	exAt := func(field string) []any { return apierr.Body("examples", field) }
	if n := t.BodyParamsCount(); len(ex.BodyText) != n {
		return apierr.Field(exAt("body_text"), "value_error", "Value error, the body has %d variables: give %d examples, one for each", n, n)
	}
	if n := t.HeaderVariables(); len(ex.HeaderText) != n {
		return apierr.Field(exAt("header_text"), "value_error", "Value error, the header has %d variables: give %d examples", n, n)
	}
	if n := t.URLVariables(); len(ex.ButtonURLText) != n {
		return apierr.Field(exAt("button_url_text"), "value_error", "Value error, %d URL buttons have a variable: give %d examples", n, n)
	}
	fileHeader := false
	if f := t.HeaderFormat(); f != nil && *f != domain.HeaderText {
		fileHeader = true
	}
	switch {
	case fileHeader && ex.HeaderURL == nil:
		return apierr.Field(exAt("header_url"), "missing", "Field required: a template with a file header needs an example file")
	case !fileHeader && ex.HeaderURL != nil:
		return apierr.Field(exAt("header_url"), "value_error", "Value error, only a file header (IMAGE, VIDEO, DOCUMENT) takes an example file")
	case fileHeader && !httpURL(*ex.HeaderURL):
		return apierr.Field(exAt("header_url"), "url_parsing", "Input should be an absolute http or https URL")
	}
	return nil
}

// checkComponent checks one component; at locates its fields.
func checkComponent(category string, c domain.Component, at func(field ...any) []any) error {
	only := func(field, typ string) error {
		return apierr.Field(at(field), "value_error", "Value error, %s is a field of %s components only", field, typ)
	}
	if c.Format != nil && c.Type != domain.ComponentHeader {
		return only("format", domain.ComponentHeader)
	}
	if c.AddSecurityRecommendation != nil && c.Type != domain.ComponentBody {
		return only("add_security_recommendation", domain.ComponentBody)
	}
	if c.CodeExpirationMinutes != nil && c.Type != domain.ComponentFooter {
		return only("code_expiration_minutes", domain.ComponentFooter)
	}
	if len(c.Buttons) > 0 && c.Type != domain.ComponentButtons {
		return only("buttons", domain.ComponentButtons)
	}
	if c.Type == domain.ComponentButtons && c.Text != nil {
		return apierr.Field(at("text"), "value_error", "Value error, a BUTTONS component has no text: its buttons have")
	}
	authOnly := func(field string) error {
		return apierr.Field(at(field), "value_error", "Value error, %s is for AUTHENTICATION templates only", field)
	}
	switch c.Type {
	case domain.ComponentHeader:
		switch {
		case c.Format == nil:
			return apierr.Field(at("format"), "missing", "Field required: a HEADER's format (TEXT, IMAGE, VIDEO or DOCUMENT)")
		case *c.Format == domain.HeaderText && c.Text == nil:
			return apierr.Field(at("text"), "missing", "Field required: a TEXT header's text")
		case *c.Format != domain.HeaderText && c.Text != nil:
			return apierr.Field(at("text"), "value_error", "Value error, a %s header has no text", *c.Format)
		case c.Text != nil && len([]rune(*c.Text)) > 60:
			return apierr.Field(at("text"), "string_too_long", "String should have at most 60 characters")
		case c.Text != nil && domain.VariableCount(*c.Text) > 1:
			return apierr.Field(at("text"), "value_error", "Value error, a header holds at most one variable, {{1}}")
		}
		if c.Text != nil {
			return checkNumbering(*c.Text, at("text"))
		}
	case domain.ComponentBody:
		if c.Text == nil {
			return apierr.Field(at("text"), "missing", "Field required: the BODY's text")
		}
		if c.AddSecurityRecommendation != nil && category != domain.CategoryOTP {
			return authOnly("add_security_recommendation")
		}
		return checkNumbering(*c.Text, at("text"))
	case domain.ComponentFooter:
		switch {
		case c.Text == nil && c.CodeExpirationMinutes == nil:
			return apierr.Field(at("text"), "missing", "Field required: a FOOTER's text (or, in AUTHENTICATION templates, code_expiration_minutes)")
		case c.CodeExpirationMinutes != nil && category != domain.CategoryOTP:
			return authOnly("code_expiration_minutes")
		case c.Text != nil && len([]rune(*c.Text)) > 60:
			return apierr.Field(at("text"), "string_too_long", "String should have at most 60 characters")
		case c.Text != nil && len(domain.Variables(*c.Text)) > 0:
			return apierr.Field(at("text"), "value_error", "Value error, a footer holds no variables")
		}
	case domain.ComponentButtons:
		if len(c.Buttons) == 0 {
			return apierr.Field(at("buttons"), "missing", "Field required: a BUTTONS component's buttons (1 to 10)")
		}
		for j, b := range c.Buttons {
			if err := checkButton(category, b, func(field string) []any { return at("buttons", j, field) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkButton checks one button; at locates its fields.
func checkButton(category string, b domain.Button, at func(field string) []any) error {
	given := map[string]bool{
		"text": b.Text != nil, "otp_type": b.OtpType != nil, "autofill_text": b.AutofillText != nil,
		"package_name": b.PackageName != nil, "signature_hash": b.SignatureHash != nil,
		"phone_number": b.PhoneNumber != nil, "url": b.URL != nil,
	}
	var required, allowed []string
	switch b.Type {
	case domain.ButtonOTP:
		if category != domain.CategoryOTP {
			return apierr.Field(at("type"), "value_error", "Value error, OTP buttons are for AUTHENTICATION templates only")
		}
		required, allowed = []string{"otp_type"}, []string{"text", "otp_type", "autofill_text", "package_name", "signature_hash"}
	case "QUICK_REPLY":
		required, allowed = []string{"text"}, []string{"text"}
	case "PHONE_NUMBER":
		required, allowed = []string{"text", "phone_number"}, []string{"text", "phone_number"}
	case domain.ButtonURL:
		required, allowed = []string{"text", "url"}, []string{"text", "url"}
	}
	for _, f := range required {
		if !given[f] {
			return apierr.Field(at(f), "missing", "Field required: a %s button's %s", b.Type, f)
		}
	}
	for _, f := range []string{"text", "otp_type", "autofill_text", "package_name", "signature_hash", "phone_number", "url"} {
		if given[f] && !slices.Contains(allowed, f) {
			return apierr.Field(at(f), "value_error", "Value error, a %s button has no %s", b.Type, f)
		}
	}
	if b.Text != nil && len(domain.Variables(*b.Text)) > 0 {
		return apierr.Field(at("text"), "value_error", "Value error, a button's text holds no variables")
	}
	if b.URL != nil {
		vars := domain.Variables(*b.URL)
		switch {
		case len(vars) > 1 || (len(vars) == 1 && (vars[0] != 1 || !strings.HasSuffix(*b.URL, "{{1}}"))):
			return apierr.Field(at("url"), "value_error", "Value error, a URL button may hold one variable, {{1}}, at its end")
		case !httpURL(strings.TrimSuffix(*b.URL, "{{1}}")):
			return apierr.Field(at("url"), "url_parsing", "Input should be an absolute http or https URL")
		}
	}
	return nil
}

// checkNumbering refuses variables not numbered 1..n without gaps.
func checkNumbering(text string, loc []any) error {
	vars := domain.Variables(text)
	n := domain.VariableCount(text)
	for _, v := range vars {
		if v < 1 {
			return apierr.Field(loc, "value_error", "Value error, variables are numbered from {{1}}")
		}
	}
	for want := 1; want <= n; want++ {
		if !slices.Contains(vars, want) {
			return apierr.Field(loc, "value_error", "Value error, variables are numbered {{1}} to {{%d}} without gaps: {{%d}} is missing", n, want)
		}
	}
	return nil
}

// httpURL reports an absolute http(s) URL with a host.
func httpURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != ""
}
