package domain

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Business template statuses (spec-gaps: SUBMITTED -> APPROVED | REJECTED
// | PAUSED | DISABLED, as the provider moderates).
const (
	TemplateSubmitted = "SUBMITTED"
	TemplateApproved  = "APPROVED"
	TemplateRejected  = "REJECTED"
	TemplatePaused    = "PAUSED"
	TemplateDisabled  = "DISABLED"
)

// Component types and header formats of business templates.
const (
	ComponentHeader  = "HEADER"
	ComponentBody    = "BODY"
	ComponentFooter  = "FOOTER"
	ComponentButtons = "BUTTONS"

	HeaderText = "TEXT"

	ButtonOTP   = "OTP"
	ButtonURL   = "URL"
	CategoryOTP = "AUTHENTICATION"
)

// EventWabaTemplateStatus is emitted when the provider moderates a
// business template (beyond spec 6's five kinds; docs/architecture.md).
const EventWabaTemplateStatus = "waba_templates.status_changed"

// BusinessTemplate is a business template of a waba connection, as the
// platform keeps it (the provider holds the original).
type BusinessTemplate struct {
	CompanyID      int64
	ConnectionID   int64
	Name           string
	CustomName     string
	Locale         string
	Category       string
	Status         string
	RejectedReason string
	Components     []Component
	Examples       Examples
	// Auto is the template the platform made for texts outside the dialog
	// session (waba_auto_templates_enabled): its body is one variable.
	Auto      bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TemplateSummary is what sending a business template needs to know of
// it: the list's item.
type TemplateSummary struct {
	ConnectionID    int64
	Name            string
	Locale          string
	Status          string
	Category        string
	BodyParamsCount int
	HeaderFormat    *string
	Buttons         []Button
}

// Component of a business template; the fields of other types are nil.
type Component struct {
	Type                      string   `json:"type"`
	Format                    *string  `json:"format,omitempty"`
	Text                      *string  `json:"text,omitempty"`
	AddSecurityRecommendation *bool    `json:"add_security_recommendation,omitempty"`
	CodeExpirationMinutes     *int32   `json:"code_expiration_minutes,omitempty"`
	Buttons                   []Button `json:"buttons,omitempty"`
}

// Button of a BUTTONS component.
type Button struct {
	Type          string  `json:"type"`
	Text          *string `json:"text,omitempty"`
	OtpType       *string `json:"otp_type,omitempty"`
	AutofillText  *string `json:"autofill_text,omitempty"`
	PackageName   *string `json:"package_name,omitempty"`
	SignatureHash *string `json:"signature_hash,omitempty"`
	PhoneNumber   *string `json:"phone_number,omitempty"`
	URL           *string `json:"url,omitempty"`
}

// Examples of a business template's variables and file header.
type Examples struct {
	HeaderURL     *string  `json:"header_url,omitempty"`
	HeaderText    []string `json:"header_text,omitempty"`
	BodyText      []string `json:"body_text,omitempty"`
	ButtonURLText []string `json:"button_url_text,omitempty"`
}

// Component is the template's component of a type, nil when it has none.
func (t BusinessTemplate) Component(typ string) *Component {
	for i := range t.Components {
		if t.Components[i].Type == typ {
			return &t.Components[i]
		}
	}
	return nil
}

// BodyParamsCount is how many values a send's body_params must hold.
func (t BusinessTemplate) BodyParamsCount() int {
	if b := t.Component(ComponentBody); b != nil && b.Text != nil {
		return VariableCount(*b.Text)
	}
	return 0
}

// HeaderFormat is the header's format, nil without a header.
func (t BusinessTemplate) HeaderFormat() *string {
	if h := t.Component(ComponentHeader); h != nil {
		return h.Format
	}
	return nil
}

// HeaderVariables is how many variables a TEXT header has (0 or 1).
func (t BusinessTemplate) HeaderVariables() int {
	if h := t.Component(ComponentHeader); h != nil && h.Text != nil {
		return VariableCount(*h.Text)
	}
	return 0
}

// Buttons are the buttons of the BUTTONS component.
func (t BusinessTemplate) Buttons() []Button {
	if b := t.Component(ComponentButtons); b != nil {
		return b.Buttons
	}
	return nil
}

// URLVariables is how many URL buttons hold a variable: a send gives one
// button_params value for each, in order.
func (t BusinessTemplate) URLVariables() int {
	n := 0
	for _, b := range t.Buttons() {
		if b.Type == ButtonURL && b.URL != nil && len(Variables(*b.URL)) > 0 {
			n++
		}
	}
	return n
}

var variable = regexp.MustCompile(`\{\{(\d+)\}\}`)

// Variables are the numbers of the {{n}} variables in text, in order of
// appearance.
func Variables(text string) []int {
	var out []int
	for _, m := range variable.FindAllStringSubmatch(text, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			n = -1 // too many digits: never a valid number
		}
		out = append(out, n)
	}
	return out
}

// VariableCount is how many values text takes: the highest variable
// number (validation makes them 1..n without gaps).
func VariableCount(text string) int {
	n := 0
	for _, v := range Variables(text) {
		n = max(n, v)
	}
	return n
}

// Render replaces {{n}} with values[n-1]; a variable without a value stays.
func Render(text string, values []string) string {
	return variable.ReplaceAllStringFunc(text, func(v string) string {
		n, err := strconv.Atoi(v[2 : len(v)-2])
		if err != nil || n < 1 || n > len(values) {
			return v
		}
		return values[n-1]
	})
}

// RenderText is what a sent template says: its text header, body and
// footer with the values put in, joined by line breaks.
func (t BusinessTemplate) RenderText(header, body []string) string {
	var parts []string
	if h := t.Component(ComponentHeader); h != nil && h.Text != nil {
		parts = append(parts, Render(*h.Text, header))
	}
	if b := t.Component(ComponentBody); b != nil && b.Text != nil {
		parts = append(parts, Render(*b.Text, body))
	}
	if f := t.Component(ComponentFooter); f != nil && f.Text != nil {
		parts = append(parts, *f.Text)
	}
	return strings.Join(parts, "\n")
}

// TemplateSend is what the messenger needs to send a business template:
// the template and the values of its variables.
type TemplateSend struct {
	Name         string        `json:"template_name"`
	Locale       string        `json:"template_locale"`
	HeaderParams []HeaderParam `json:"header_params"`
	BodyParams   []string      `json:"body_params"`
	ButtonParams []string      `json:"button_params"`
}

// HeaderParam is the value of a header: a file's url, or a TEXT header's
// variable.
type HeaderParam struct {
	URL  *string `json:"url,omitempty"`
	Text *string `json:"text,omitempty"`
}

// TemplateStatusChanged is the event of a moderation that changed a
// template's status (or reason) from old.
func TemplateStatusChanged(t BusinessTemplate, old string) Event {
	return envelope(t.CompanyID, EventWabaTemplateStatus, map[string]any{
		"connection_id":   t.ConnectionID,
		"name":            t.Name,
		"locale":          t.Locale,
		"old_status":      old,
		"new_status":      t.Status,
		"rejected_reason": t.RejectedReason,
	})
}

// ParseTemplateSend reads a waba_template send's content (spec 2.7
// "waba_template (sent)": template_name, template_locale, header_params of
// {url} or {text}, body_params and button_params of strings), collecting
// the refused values located under at.
func ParseTemplateSend(raw map[string]any, at ...any) (TemplateSend, error) {
	c := &checker{}
	c.known(raw, at, "template_name", "template_locale", "header_params", "body_params", "button_params")
	send := TemplateSend{HeaderParams: []HeaderParam{}}
	send.Name, _ = c.str(raw, at, "template_name", true, MaxTemplateNameLen)
	send.Locale, _ = c.str(raw, at, "template_locale", true, 15)
	send.BodyParams = c.strings(raw, at, "body_params")
	send.ButtonParams = c.strings(raw, at, "button_params")
	list, _ := c.list(raw, at, "header_params", false)
	hat := pathTo(at, "header_params")
	for i, v := range list {
		obj, ok := v.(map[string]any)
		if !ok {
			c.fail(hat, i, "dict_type", "Input should be a valid dictionary or object")
			continue
		}
		pat := pathTo(hat, i)
		c.known(obj, pat, "url", "text")
		var p HeaderParam
		if s, ok := c.str(obj, pat, "url", false, 2048); ok {
			p.URL = &s
		}
		if s, ok := c.str(obj, pat, "text", false, 1024); ok {
			p.Text = &s
		}
		send.HeaderParams = append(send.HeaderParams, p)
	}
	if len(c.errs) > 0 {
		return TemplateSend{}, c.errs
	}
	return send, nil
}

// MaxTemplateNameLen is the longest business template name (spec 8).
const MaxTemplateNameLen = 512

// strings reads obj[key] as a list of strings of up to 1024 characters;
// absent or null is an empty list.
func (c *checker) strings(obj map[string]any, at []any, key string) []string {
	out := []string{}
	list, _ := c.list(obj, at, key, false)
	lat := pathTo(at, key)
	for i, v := range list {
		s, ok := v.(string)
		switch {
		case !ok:
			c.fail(lat, i, "string_type", "Input should be a valid string")
		case len([]rune(s)) > 1024:
			c.fail(lat, i, "string_too_long", "String should have at most 1024 characters")
		default:
			out = append(out, s)
		}
	}
	return out
}
