package domain

import (
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// TemplateType is an account template's type as JSON writes it (spec 2.11).
type TemplateType string

// The template types. A request names text or waba_interactive; image,
// video and document are what a text with a file is stored as.
const (
	TemplateTypeText        TemplateType = "text"
	TemplateTypeImage       TemplateType = "image"
	TemplateTypeVideo       TemplateType = "video"
	TemplateTypeDocument    TemplateType = "document"
	TemplateTypeInteractive TemplateType = "waba_interactive"
)

// Limits of account templates, in characters (the business channel's
// limits for interactive messages; spec 8's caption limit for files). The
// name, text and file_url bounds are the protos' validation rules too.
const (
	MaxTemplateName        = 256
	MaxTemplateText        = 4096
	MaxTemplateCaption     = 1024
	MaxTemplateFileURL     = 2048
	MaxTemplateBody        = 1024
	MaxTemplateHeaderText  = 60
	MaxTemplateFooter      = 60
	MaxTemplateFilename    = 255
	MaxTemplateButtons     = 3
	MaxTemplateButtonID    = 256
	MaxTemplateButtonTitle = 20
)

// Template is an account message template of a company.
type Template struct {
	ID        int64
	CompanyID int64
	Type      TemplateType
	Name      string
	Text      string
	// FileURL is the file of image, video and document templates.
	FileURL *string
	// Params is empty for plain templates; for waba_interactive it is the
	// structure ParseInteractive answers.
	Params    map[string]any
	CreatedAt time.Time
}

// FileTemplateType is the type of a template with a file of this MIME type.
func FileTemplateType(mimeType string) TemplateType {
	switch strings.ToLower(mimeType) {
	case "image/jpeg", "image/png", "image/webp", "image/gif":
		return TemplateTypeImage
	case "video/mp4", "video/3gpp", "video/quicktime":
		return TemplateTypeVideo
	}
	return TemplateTypeDocument
}

// templateExtMIME names the MIME types of FileTemplateType by extension,
// for links whose file the platform does not know.
var templateExtMIME = map[string]string{
	".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".webp": "image/webp", ".gif": "image/gif",
	".mp4": "video/mp4", ".3gp": "video/3gpp", ".3gpp": "video/3gpp", ".mov": "video/quicktime",
}

// FileTemplateTypeByURL is the type of a template with a file known only by
// its link: the extension of the link's path (case-insensitive), document
// when it has none of the image or video ones.
func FileTemplateTypeByURL(u *url.URL) TemplateType {
	return FileTemplateType(templateExtMIME[strings.ToLower(path.Ext(u.Path))])
}

// TemplateFileURL reads an absolute http(s) link with a host; nil when raw
// is not one.
func TemplateFileURL(raw string) *url.URL {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return nil
	}
	return u
}

// FieldError is one refused value of free-form content (a template's
// params, a message's waba_template, an order), located from the request
// body down (["params", "action", "buttons", 0, "reply", "id"]).
type FieldError struct {
	Path    []any
	Type    string
	Message string
}

// FieldErrors is every refused value of one object, in the order the
// structure declares its fields; app.FieldErrors makes it the 422.
type FieldErrors []FieldError

func (e FieldErrors) Error() string {
	parts := make([]string, len(e))
	for i, f := range e {
		parts[i] = fmt.Sprintf("%v: %s", f.Path, f.Message)
	}
	return strings.Join(parts, "; ")
}

// InteractiveTemplate is the checked params of a waba_interactive template.
type InteractiveTemplate struct {
	// Params is the structure in its one shape: every key present, null
	// where a part is absent.
	Params map[string]any
	// Text is the header text, body and footer joined by "\n", absent
	// parts skipped.
	Text string
}

// ParseInteractive checks the params of a waba_interactive template (raw
// as JSON gives them: objects map[string]any, arrays []any) and collects
// every refused value, located under at (["params"] for a template,
// ["waba_interactive"] for a message).
func ParseInteractive(raw map[string]any, at ...any) (InteractiveTemplate, error) {
	c := &checker{}
	c.known(raw, at, "type", "header", "body", "footer", "action")
	if s, ok := c.str(raw, at, "type", true, 0); ok && s != "button" {
		c.fail(at, "type", "enum", "Input should be 'button'")
	}
	header := c.header(raw, at)
	body, _ := c.str(raw, at, "body", true, MaxTemplateBody)
	footer, hasFooter := c.str(raw, at, "footer", false, MaxTemplateFooter)
	buttons := c.action(raw, at)
	if len(c.errs) > 0 {
		return InteractiveTemplate{}, c.errs
	}

	var parts []string
	var headerOut any
	if header != nil {
		headerOut = header
		if header["type"] == "text" {
			parts = append(parts, header["text"].(string))
		}
	}
	parts = append(parts, body)
	var footerOut any
	if hasFooter {
		footerOut = footer
		parts = append(parts, footer)
	}
	return InteractiveTemplate{
		Params: map[string]any{
			"type":   "button",
			"header": headerOut,
			"body":   body,
			"footer": footerOut,
			"action": map[string]any{"buttons": buttons, "sections": nil},
		},
		Text: strings.Join(parts, "\n"),
	}, nil
}

// checker collects the refused values of free-form content: the parsers
// of this package (ParseInteractive, ParseTemplateSend, ParseOrder,
// ParseInteractiveReply) share it.
type checker struct {
	errs FieldErrors
}

func (c *checker) fail(at []any, key any, typ, format string, args ...any) {
	c.errs = append(c.errs, FieldError{Path: pathTo(at, key), Type: typ, Message: fmt.Sprintf(format, args...)})
}

// pathTo is the location at/step, never sharing at's array.
func pathTo(at []any, step any) []any {
	return append(slices.Clip(at), step)
}

// known refuses the keys of obj not among keys, by name.
func (c *checker) known(obj map[string]any, at []any, keys ...string) {
	c.knownOr(obj, at, keys, nil, "")
}

// str reads obj[key] as a string of 1..max characters (max 0: any
// length). An absent or null key is refused when required, else ok is
// false.
func (c *checker) str(obj map[string]any, at []any, key string, required bool, max int) (s string, ok bool) {
	v, present := obj[key]
	if !present || v == nil {
		if required {
			c.fail(at, key, "missing", "Field required")
		}
		return "", false
	}
	s, isString := v.(string)
	switch n := utf8.RuneCountInString(s); {
	case !isString:
		c.fail(at, key, "string_type", "Input should be a valid string")
	case n == 0:
		c.fail(at, key, "string_too_short", "String should have at least 1 character")
	case max > 0 && n > max:
		c.fail(at, key, "string_too_long", "String should have at most %d characters", max)
	default:
		return s, true
	}
	return "", false
}

// object reads obj[key] as an object; ok is false when it is absent, null
// (refused when required) or not an object.
func (c *checker) object(obj map[string]any, at []any, key string, required bool) (map[string]any, bool) {
	v, present := obj[key]
	if !present || v == nil {
		if required {
			c.fail(at, key, "missing", "Field required")
		}
		return nil, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		c.fail(at, key, "dict_type", "Input should be a valid dictionary or object")
	}
	return m, ok
}

// absent refuses obj[key] unless it is absent or null.
func (c *checker) absent(obj map[string]any, at []any, key, why string) {
	if v, present := obj[key]; present && v != nil {
		c.fail(at, key, "value_error", "Value error, %s", why)
	}
}

// header checks params.header; nil when there is none (or it is refused).
func (c *checker) header(raw map[string]any, at []any) map[string]any {
	h, ok := c.object(raw, at, "header", false)
	if !ok {
		return nil
	}
	at = pathTo(at, "header")
	c.known(h, at, "type", "text", "url", "filename")
	typ, ok := c.str(h, at, "type", true, 0)
	if !ok {
		return nil
	}
	out := map[string]any{"type": typ, "text": nil, "url": nil, "filename": nil}
	switch typ {
	case "text":
		c.absent(h, at, "url", "a text header has no url")
		c.absent(h, at, "filename", "a text header has no filename")
		text, ok := c.str(h, at, "text", true, MaxTemplateHeaderText)
		if !ok {
			return nil
		}
		out["text"] = text
	case "image", "video", "document":
		c.absent(h, at, "text", "a "+typ+" header has no text: the body holds the words")
		if typ != "document" {
			c.absent(h, at, "filename", "only a document header has a filename")
		} else if name, ok := c.str(h, at, "filename", false, MaxTemplateFilename); ok {
			out["filename"] = name
		}
		link, ok := c.str(h, at, "url", true, MaxTemplateFileURL)
		if !ok {
			return nil
		}
		if TemplateFileURL(link) == nil {
			c.fail(at, "url", "url_parsing", "Input should be an absolute http or https URL")
			return nil
		}
		out["url"] = link
	default:
		c.fail(at, "type", "enum", "Input should be 'text', 'image', 'video' or 'document'")
		return nil
	}
	return out
}

// action checks params.action and answers its buttons in their one shape.
func (c *checker) action(raw map[string]any, at []any) []any {
	a, ok := c.object(raw, at, "action", true)
	if !ok {
		return nil
	}
	at = pathTo(at, "action")
	c.known(a, at, "buttons", "sections")
	c.absent(a, at, "sections", "menu lists (sections) are not supported: use buttons")
	v, present := a["buttons"]
	if !present || v == nil {
		c.fail(at, "buttons", "missing", "Field required")
		return nil
	}
	list, ok := v.([]any)
	switch {
	case !ok:
		c.fail(at, "buttons", "list_type", "Input should be a valid list")
		return nil
	case len(list) == 0:
		c.fail(at, "buttons", "too_short", "List should have at least 1 item after validation, not 0")
		return nil
	case len(list) > MaxTemplateButtons:
		c.fail(at, "buttons", "too_long", "List should have at most %d items after validation, not %d", MaxTemplateButtons, len(list))
		return nil
	}
	at = pathTo(at, "buttons")
	out := make([]any, 0, len(list))
	seen := map[string]bool{}
	for i, item := range list {
		b, ok := item.(map[string]any)
		if !ok {
			c.fail(at, i, "dict_type", "Input should be a valid dictionary or object")
			continue
		}
		bat := pathTo(at, i)
		c.known(b, bat, "type", "reply")
		if typ, ok := c.str(b, bat, "type", true, 0); ok && typ != "reply" {
			c.fail(bat, "type", "enum", "Input should be 'reply'")
		}
		reply, ok := c.object(b, bat, "reply", true)
		if !ok {
			continue
		}
		rat := pathTo(bat, "reply")
		c.known(reply, rat, "id", "title")
		id, idOK := c.str(reply, rat, "id", true, MaxTemplateButtonID)
		title, titleOK := c.str(reply, rat, "title", true, MaxTemplateButtonTitle)
		if idOK && seen[id] {
			c.fail(rat, "id", "value_error", "Value error, button ids must be unique")
			idOK = false
		}
		seen[id] = true
		if idOK && titleOK {
			out = append(out, map[string]any{"type": "reply", "reply": map[string]any{"id": id, "title": title}})
		}
	}
	return out
}
