package app

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"unicode/utf8"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/messaging/internal/domain"
)

// TemplateRepository stores account templates. Every method is scoped by
// company.
type TemplateRepository interface {
	// ListTemplates are the company's templates, newest first.
	ListTemplates(ctx context.Context, company int64) ([]domain.Template, error)
	// CreateTemplate stores t and answers it with its id and created_at.
	CreateTemplate(ctx context.Context, t domain.Template) (domain.Template, error)
	// UpdateTemplate calls change with the company's template, locked until
	// what change leaves is stored; an error of change stores nothing and
	// is answered as is. domain.ErrNotFound when there is no such template.
	UpdateTemplate(ctx context.Context, company, id int64, change func(*domain.Template) error) (domain.Template, error)
	// DeleteTemplate is domain.ErrNotFound when there is no such template.
	DeleteTemplate(ctx context.Context, company, id int64) error
	// FileByToken is an uploaded file (FileRepository's): its stored MIME
	// type judges the type of a template with its link.
	FileByToken(ctx context.Context, token string) (File, error)
}

// Templates are the company's account templates, newest first.
func (s *Service) Templates(ctx context.Context, company int64) ([]domain.Template, error) {
	return s.templates.ListTemplates(ctx, company)
}

// CreateTemplateCmd is POST /messaging/templates/. Text and FileURL are nil
// when not given; Params is nil or empty when not given.
type CreateTemplateCmd struct {
	CompanyID int64
	Type      domain.TemplateType
	Name      string
	Text      *string
	FileURL   *string
	Params    map[string]any
}

// CreateTemplate stores a template by the rules of design/messaging.md
// "Account templates" (see templateDraft.template).
func (s *Service) CreateTemplate(ctx context.Context, cmd CreateTemplateCmd) (domain.Template, error) {
	if err := requestType(cmd.Type); err != nil {
		return domain.Template{}, err
	}
	d := templateDraft{kind: cmd.Type, name: cmd.Name, text: cmd.Text, fileURL: nonEmpty(cmd.FileURL), params: cmd.Params}
	if d.fileURL != nil && d.kind == domain.TemplateTypeText {
		var err error
		if d.fileType, err = s.fileTemplateType(ctx, *d.fileURL); err != nil {
			return domain.Template{}, err
		}
	}
	t, err := d.template()
	if err != nil {
		return domain.Template{}, err
	}
	t.CompanyID = cmd.CompanyID
	return s.templates.CreateTemplate(ctx, t)
}

// UpdateTemplateCmd is PATCH /messaging/templates/{id}: nil is "unchanged".
// An empty FileURL removes the file; a non-nil Params ({} included)
// replaces the stored ones.
type UpdateTemplateCmd struct {
	CompanyID int64
	ID        int64
	Type      *domain.TemplateType
	Name      *string
	Text      *string
	FileURL   *string
	Params    map[string]any
}

// UpdateTemplate applies the given fields to a template; the result obeys
// the rules of a create as a whole and its type is derived again: a new
// file_url is judged, a kept file keeps the type it was judged as. An
// interactive template's text follows its params: a text given for one
// changes nothing. Unknown or another
// company's template is 404 15005.
func (s *Service) UpdateTemplate(ctx context.Context, cmd UpdateTemplateCmd) (domain.Template, error) {
	if cmd.Type != nil {
		if err := requestType(*cmd.Type); err != nil {
			return domain.Template{}, err
		}
	}
	// A new file is judged before the transaction: the judgement may read
	// the files table on another pool connection, and holding the
	// transaction's one meanwhile could exhaust the pool under load.
	newFile := nonEmpty(cmd.FileURL)
	var newFileType domain.TemplateType
	if newFile != nil && (cmd.Type == nil || *cmd.Type == domain.TemplateTypeText) {
		var err error
		if newFileType, err = s.fileTemplateType(ctx, *newFile); err != nil {
			return domain.Template{}, err
		}
	}
	t, err := s.templates.UpdateTemplate(ctx, cmd.CompanyID, cmd.ID, func(t *domain.Template) error {
		d := templateDraft{kind: domain.TemplateTypeText, name: t.Name, text: cmd.Text, fileURL: t.FileURL, fileType: t.Type, params: t.Params}
		if t.Type == domain.TemplateTypeInteractive {
			d.kind = domain.TemplateTypeInteractive
		}
		if cmd.Type != nil {
			d.kind = *cmd.Type
		}
		// A plain template keeps its text; an interactive one's is derived
		// from its params, so it is never carried over (to or from), and a
		// text given for one is ignored (template).
		if d.text == nil && d.kind == domain.TemplateTypeText && t.Type != domain.TemplateTypeInteractive {
			d.text = &t.Text
		}
		if cmd.Name != nil {
			d.name = *cmd.Name
		}
		if cmd.FileURL != nil {
			d.fileURL, d.fileType = newFile, newFileType
		}
		if cmd.Params != nil {
			d.params = cmd.Params
		}
		out, err := d.template()
		if err != nil {
			return err
		}
		t.Type, t.Name, t.Text, t.FileURL, t.Params = out.Type, out.Name, out.Text, out.FileURL, out.Params
		return nil
	})
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Template{}, apierr.MessagingTemplateNotFound.E()
	}
	return t, err
}

// DeleteTemplate removes a template; unknown or another company's is 404
// 15005.
func (s *Service) DeleteTemplate(ctx context.Context, company, id int64) error {
	err := s.templates.DeleteTemplate(ctx, company, id)
	if errors.Is(err, domain.ErrNotFound) {
		return apierr.MessagingTemplateNotFound.E()
	}
	return err
}

// requestType refuses the types a request may not name: image, video and
// document are what a text with a file is stored as, judged by the
// platform, so a client naming one could only contradict the file.
func requestType(t domain.TemplateType) error {
	switch t {
	case domain.TemplateTypeText, domain.TemplateTypeInteractive:
		return nil
	case "":
		return apierr.Field(apierr.Body("type"), "missing", "Field required")
	}
	return apierr.Field(apierr.Body("type"), "enum",
		"Input should be 'text' or 'waba_interactive' (a file template is created as text with a file_url)")
}

// templateDraft is a template as a request leaves it, before its rules.
type templateDraft struct {
	// kind is text or waba_interactive.
	kind domain.TemplateType
	name string
	// text is nil when neither given nor kept.
	text    *string
	fileURL *string
	// fileType is what the file of a text makes it (fileTemplateType).
	fileType domain.TemplateType
	params   map[string]any
}

// template applies the rules of design/messaging.md "Account templates".
// A text is a text (1..4096 chars) or, with a file, the file's type with
// the text as its caption (0..1024 chars, spec 8); its params are empty.
// An interactive template has checked params and no file, and its text is
// derived from them: a given text is ignored.
func (d templateDraft) template() (domain.Template, error) {
	t := domain.Template{Name: d.name, FileURL: d.fileURL, Params: map[string]any{}}
	if d.kind == domain.TemplateTypeInteractive {
		if d.fileURL != nil {
			return domain.Template{}, apierr.Field(apierr.Body("file_url"), "value_error",
				"Value error, an interactive template has no file_url: its media go in params.header")
		}
		if d.params == nil {
			return domain.Template{}, apierr.Field(apierr.Body("params"), "missing", "Field required")
		}
		it, err := domain.ParseInteractive(d.params, "params")
		if err != nil {
			return domain.Template{}, FieldErrors(err)
		}
		// d.text is ignored: the text is derived, and a client that sends a
		// text with every template (the create body names it) is served
		// like one that leaves it out.
		t.Type, t.Text, t.Params = domain.TemplateTypeInteractive, it.Text, it.Params
		return t, nil
	}
	if len(d.params) > 0 {
		return domain.Template{}, apierr.Field(apierr.Body("params"), "value_error",
			"Value error, a text template has no params: omit them or send {}")
	}
	if d.text != nil {
		t.Text = *d.text
	}
	n := utf8.RuneCountInString(t.Text)
	switch {
	case d.fileURL != nil && n > domain.MaxTemplateCaption:
		return domain.Template{}, apierr.Field(apierr.Body("text"), "string_too_long",
			"String should have at most %d characters (the caption of a file)", domain.MaxTemplateCaption)
	case d.fileURL != nil:
		t.Type = d.fileType
	case d.text == nil:
		return domain.Template{}, apierr.Field(apierr.Body("text"), "missing", "Field required")
	case n == 0:
		return domain.Template{}, apierr.Field(apierr.Body("text"), "string_too_short", "String should have at least 1 character")
	case n > domain.MaxTemplateText:
		return domain.Template{}, apierr.Field(apierr.Body("text"), "string_too_long",
			"String should have at most %d characters", domain.MaxTemplateText)
	default:
		t.Type = domain.TemplateTypeText
	}
	return t, nil
}

// fileTemplateType is the type of a text with the file at raw: by the
// stored MIME type of an uploaded file when raw is the platform's link to
// one (any company's: the link itself is the file's credential), else by
// the extension of the link's path. raw must be an absolute http(s) link,
// and a platform file link must name an uploaded file (422 at file_url).
func (s *Service) fileTemplateType(ctx context.Context, raw string) (domain.TemplateType, error) {
	u := domain.TemplateFileURL(raw)
	if u == nil {
		return "", apierr.Field(apierr.Body("file_url"), "url_parsing", "Input should be an absolute http or https URL")
	}
	token, own := fileLinkToken(s.cfg.PublicURL, u)
	if !own {
		return domain.FileTemplateTypeByURL(u), nil
	}
	var f File
	err := domain.ErrNotFound
	if tokenShape.MatchString(token) {
		f, err = s.templates.FileByToken(ctx, token)
	}
	if errors.Is(err, domain.ErrNotFound) {
		return "", apierr.Field(apierr.Body("file_url"), "value_error", "Value error, no uploaded file has this link")
	}
	if err != nil {
		return "", err
	}
	return domain.FileTemplateType(f.MimeType), nil
}

// fileLinkToken reads the token of a link under the platform's file links
// (publicURL + "/files/"; scheme and host compared without regard to
// case). own is false for any other link.
func fileLinkToken(publicURL string, u *url.URL) (token string, own bool) {
	base := domain.TemplateFileURL(publicURL)
	if base == nil || u.Scheme != base.Scheme || !strings.EqualFold(u.Host, base.Host) {
		return "", false
	}
	return strings.CutPrefix(u.Path, strings.TrimRight(base.Path, "/")+"/files/")
}

// nonEmpty is s, or nil for nil and "".
func nonEmpty(s *string) *string {
	if s == nil || *s == "" {
		return nil
	}
	return s
}
