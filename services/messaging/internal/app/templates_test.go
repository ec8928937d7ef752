package app_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// The account template rules, on an in-memory repository (the postgres
// one has its own tests in adapters/postgres).

const (
	tplCompany = int64(11)
	tplOther   = int64(12)
	// tplPublic is the gateway's address: file links are under it.
	tplPublic = "https://api.example.com/sb"
)

// Uploaded files of the template tests, by token (43 characters, as
// Files makes them).
var (
	tplPNG  = strings.Repeat("p", 43)
	tplMOV  = strings.Repeat("m", 43)
	tplPDF  = strings.Repeat("d", 43)
	tplNone = strings.Repeat("n", 43) // no file has it
)

func tplFileLink(token string) string { return tplPublic + "/files/" + token }

// tplRepo is app.TemplateRepository in memory. UpdateTemplate works on a
// copy and stores it only when change succeeds, like the transaction of
// the postgres one.
type tplRepo struct {
	rows   map[int64]domain.Template
	files  map[string]app.File
	nextID int64
	// fileReads counts FileByToken calls.
	fileReads int
}

func newTplRepo() *tplRepo {
	return &tplRepo{rows: map[int64]domain.Template{}, files: map[string]app.File{
		tplPNG: {Token: tplPNG, CompanyID: tplOther, MimeType: "image/png"},
		tplMOV: {Token: tplMOV, CompanyID: tplCompany, MimeType: "video/quicktime"},
		tplPDF: {Token: tplPDF, CompanyID: tplCompany, MimeType: "application/pdf"},
	}}
}

func (r *tplRepo) ListTemplates(_ context.Context, company int64) ([]domain.Template, error) {
	var out []domain.Template
	for id := r.nextID; id > 0; id-- {
		if t, ok := r.rows[id]; ok && t.CompanyID == company {
			out = append(out, t)
		}
	}
	return out, nil
}

func (r *tplRepo) CreateTemplate(_ context.Context, t domain.Template) (domain.Template, error) {
	r.nextID++
	t.ID = r.nextID
	r.rows[t.ID] = t
	return t, nil
}

func (r *tplRepo) UpdateTemplate(_ context.Context, company, id int64, change func(*domain.Template) error) (domain.Template, error) {
	t, ok := r.rows[id]
	if !ok || t.CompanyID != company {
		return domain.Template{}, domain.ErrNotFound
	}
	t.Params = maps.Clone(t.Params)
	if err := change(&t); err != nil {
		return domain.Template{}, err
	}
	r.rows[id] = t
	return t, nil
}

func (r *tplRepo) DeleteTemplate(_ context.Context, company, id int64) error {
	t, ok := r.rows[id]
	if !ok || t.CompanyID != company {
		return domain.ErrNotFound
	}
	delete(r.rows, id)
	return nil
}

func (r *tplRepo) FileByToken(_ context.Context, token string) (app.File, error) {
	r.fileReads++
	f, ok := r.files[token]
	if !ok {
		return app.File{}, domain.ErrNotFound
	}
	return f, nil
}

func newTemplates(t *testing.T) (*app.Service, *tplRepo) {
	t.Helper()
	repo := newTplRepo()
	return app.New(app.Deps{Templates: repo, Config: app.Config{PublicURL: tplPublic}}), repo
}

func tplStr(s string) *string { return &s }

// tplRequireLocs checks a 422 and the location and type of each of its
// errors, in order.
func tplRequireLocs(t *testing.T, err error, want ...[]any) {
	t.Helper()
	require.Error(t, err)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	require.Equal(t, 422, e.Status, e.Error())
	require.Equal(t, apierr.RequestValidation.Code, e.Code)
	errs := e.Detail.(map[string]any)["errors"].([]apierr.FieldError)
	got := make([][]any, len(errs))
	for i, fe := range errs {
		got[i] = append(append([]any{}, fe.Location...), fe.Type)
	}
	require.Equal(t, want, got, "%v", errs)
}

// loc is a body location followed by the error type, as tplRequireLocs
// compares them.
func tplLoc(typ string, path ...any) []any { return append(append([]any{"body"}, path...), typ) }

// TestTemplateFileType: a text with a file is stored as the file's type:
// by the stored MIME type of an uploaded file (any company's) when the
// link is the platform's, else by the link path's extension.
func TestTemplateFileType(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want domain.TemplateType
	}{
		{"https://cdn.example.com/a/cat.jpg", domain.TemplateTypeImage},
		{"https://cdn.example.com/a/cat.JPEG", domain.TemplateTypeImage},
		{"http://cdn.example.com/cat.png", domain.TemplateTypeImage},
		{"https://cdn.example.com/cat.webp?size=2", domain.TemplateTypeImage},
		{"https://cdn.example.com/c%61t.gif", domain.TemplateTypeImage},
		{"https://cdn.example.com/clip.mp4", domain.TemplateTypeVideo},
		{"https://cdn.example.com/clip.3gp", domain.TemplateTypeVideo},
		{"https://cdn.example.com/clip.3GPP#t=1", domain.TemplateTypeVideo},
		{"https://cdn.example.com/clip.mov", domain.TemplateTypeVideo},
		{"https://cdn.example.com/report.pdf", domain.TemplateTypeDocument},
		{"https://cdn.example.com/song.mp3", domain.TemplateTypeDocument},
		{"https://cdn.example.com/noextension", domain.TemplateTypeDocument},
		{"https://cdn.example.com/dir.png/", domain.TemplateTypeDocument},
		// The query is not the path.
		{"https://cdn.example.com/get?name=cat.png", domain.TemplateTypeDocument},
		// The platform's file links: by the stored MIME type, whatever the
		// company that uploaded the file.
		{tplFileLink(tplPNG), domain.TemplateTypeImage},
		{tplFileLink(tplMOV), domain.TemplateTypeVideo},
		{tplFileLink(tplPDF), domain.TemplateTypeDocument},
		{"https://API.Example.com/sb/files/" + tplPNG, domain.TemplateTypeImage},
		// Another host, or outside the files path: a link like any other.
		{"https://cdn.example.com/sb/files/" + tplPNG, domain.TemplateTypeDocument},
		{"http://api.example.com/sb/files/" + tplPNG, domain.TemplateTypeDocument},
		{"https://api.example.com/files/" + tplPNG, domain.TemplateTypeDocument},
		{"https://api.example.com/sb/static/logo.png", domain.TemplateTypeImage},
	} {
		t.Run(tc.url, func(t *testing.T) {
			s, _ := newTemplates(t)
			got, err := s.CreateTemplate(context.Background(), app.CreateTemplateCmd{
				CompanyID: tplCompany, Type: domain.TemplateTypeText, Name: "file", Text: tplStr("caption"), FileURL: &tc.url,
			})
			require.NoError(t, err)
			require.Equal(t, tc.want, got.Type)
			require.Equal(t, &tc.url, got.FileURL)
			require.Equal(t, "caption", got.Text)
			require.Equal(t, map[string]any{}, got.Params)
		})
	}

	// MIME types judge alone, without regard to case.
	require.Equal(t, domain.TemplateTypeImage, domain.FileTemplateType("IMAGE/JPEG"))
	require.Equal(t, domain.TemplateTypeVideo, domain.FileTemplateType("video/3gpp"))
	require.Equal(t, domain.TemplateTypeDocument, domain.FileTemplateType("image/svg+xml"))
	require.Equal(t, domain.TemplateTypeDocument, domain.FileTemplateType(""))
}

// TestTemplateFileURLRefused: not an absolute http(s) link, or a platform
// file link to no uploaded file: 422 at file_url, nothing stored.
func TestTemplateFileURLRefused(t *testing.T) {
	for _, raw := range []string{
		"ftp://cdn.example.com/cat.png", "/files/cat.png", "cat.png", "http://", "https:///cat.png",
		"javascript:alert(1)", "https://exa mple.com/cat.png", "mailto:ann@example.com",
	} {
		s, repo := newTemplates(t)
		_, err := s.CreateTemplate(context.Background(), app.CreateTemplateCmd{
			CompanyID: tplCompany, Type: domain.TemplateTypeText, Name: "file", FileURL: tplStr(raw),
		})
		tplRequireLocs(t, err, tplLoc("url_parsing", "file_url"))
		require.Empty(t, repo.rows, raw)
	}
	for _, raw := range []string{tplFileLink(tplNone), tplFileLink("cat.png"), tplFileLink(tplPNG + "/x"), tplPublic + "/files/"} {
		s, repo := newTemplates(t)
		_, err := s.CreateTemplate(context.Background(), app.CreateTemplateCmd{
			CompanyID: tplCompany, Type: domain.TemplateTypeText, Name: "file", FileURL: tplStr(raw),
		})
		tplRequireLocs(t, err, tplLoc("value_error", "file_url"))
		require.Empty(t, repo.rows, raw)
		// A token of the wrong shape is not looked up.
		wantReads := 0
		if raw == tplFileLink(tplNone) {
			wantReads = 1
		}
		require.Equal(t, wantReads, repo.fileReads, raw)
	}
}

// TestTemplatePlainRules: a text needs a text; a file's text is an
// optional caption of at most 1024 characters; params stay empty; the
// request names text or waba_interactive only.
func TestTemplatePlainRules(t *testing.T) {
	ctx := context.Background()
	file := tplStr("https://cdn.example.com/cat.png")
	for name, tc := range map[string]struct {
		cmd  app.CreateTemplateCmd
		want []any
	}{
		"no text":                {app.CreateTemplateCmd{Type: domain.TemplateTypeText}, tplLoc("missing", "text")},
		"empty text":             {app.CreateTemplateCmd{Type: domain.TemplateTypeText, Text: tplStr("")}, tplLoc("string_too_short", "text")},
		"empty file is no file":  {app.CreateTemplateCmd{Type: domain.TemplateTypeText, FileURL: tplStr("")}, tplLoc("missing", "text")},
		"text too long":          {app.CreateTemplateCmd{Type: domain.TemplateTypeText, Text: tplStr(strings.Repeat("ж", 4097))}, tplLoc("string_too_long", "text")},
		"caption too long":       {app.CreateTemplateCmd{Type: domain.TemplateTypeText, Text: tplStr(strings.Repeat("ж", 1025)), FileURL: file}, tplLoc("string_too_long", "text")},
		"params on a text":       {app.CreateTemplateCmd{Type: domain.TemplateTypeText, Text: tplStr("hi"), Params: map[string]any{"body": "x"}}, tplLoc("value_error", "params")},
		"params on a file":       {app.CreateTemplateCmd{Type: domain.TemplateTypeText, FileURL: file, Params: map[string]any{"a": nil}}, tplLoc("value_error", "params")},
		"no type":                {app.CreateTemplateCmd{Text: tplStr("hi")}, tplLoc("missing", "type")},
		"a stored type: image":   {app.CreateTemplateCmd{Type: domain.TemplateTypeImage, Text: tplStr("hi"), FileURL: file}, tplLoc("enum", "type")},
		"a stored type: video":   {app.CreateTemplateCmd{Type: domain.TemplateTypeVideo, FileURL: file}, tplLoc("enum", "type")},
		"a stored type: doc":     {app.CreateTemplateCmd{Type: domain.TemplateTypeDocument, FileURL: file}, tplLoc("enum", "type")},
		"an unknown type":        {app.CreateTemplateCmd{Type: "audio", Text: tplStr("hi")}, tplLoc("enum", "type")},
		"interactive with file":  {app.CreateTemplateCmd{Type: domain.TemplateTypeInteractive, FileURL: file, Params: tplButtons()}, tplLoc("value_error", "file_url")},
		"interactive, no params": {app.CreateTemplateCmd{Type: domain.TemplateTypeInteractive}, tplLoc("missing", "params")},
	} {
		t.Run(name, func(t *testing.T) {
			s, repo := newTemplates(t)
			tc.cmd.CompanyID, tc.cmd.Name = tplCompany, "t"
			_, err := s.CreateTemplate(ctx, tc.cmd)
			tplRequireLocs(t, err, tc.want)
			require.Empty(t, repo.rows)
		})
	}

	s, _ := newTemplates(t)
	for _, tc := range []struct {
		cmd  app.CreateTemplateCmd
		want domain.Template
	}{
		{app.CreateTemplateCmd{Type: domain.TemplateTypeText, Text: tplStr(strings.Repeat("ж", 4096))},
			domain.Template{Type: domain.TemplateTypeText, Text: strings.Repeat("ж", 4096)}},
		{app.CreateTemplateCmd{Type: domain.TemplateTypeText, Text: tplStr("hi"), FileURL: tplStr(""), Params: map[string]any{}},
			domain.Template{Type: domain.TemplateTypeText, Text: "hi"}},
		{app.CreateTemplateCmd{Type: domain.TemplateTypeText, FileURL: file},
			domain.Template{Type: domain.TemplateTypeImage, FileURL: file}},
		{app.CreateTemplateCmd{Type: domain.TemplateTypeText, Text: tplStr(strings.Repeat("ж", 1024)), FileURL: file},
			domain.Template{Type: domain.TemplateTypeImage, Text: strings.Repeat("ж", 1024), FileURL: file}},
	} {
		tc.cmd.CompanyID, tc.cmd.Name = tplCompany, "plain"
		got, err := s.CreateTemplate(ctx, tc.cmd)
		require.NoError(t, err)
		tc.want.ID, tc.want.CompanyID, tc.want.Name, tc.want.Params = got.ID, tplCompany, "plain", map[string]any{}
		require.Equal(t, tc.want, got)
	}
}

// tplButtons is the smallest interactive params.
func tplButtons() map[string]any {
	return map[string]any{
		"type": "button",
		"body": "Pick one",
		"action": map[string]any{"buttons": []any{
			map[string]any{"type": "reply", "reply": map[string]any{"id": "yes", "title": "Yes"}},
		}},
	}
}

// TestTemplateInteractive: the structure is stored in its one shape and
// the text is the header text, body and footer joined by line breaks,
// whatever text the request gave.
func TestTemplateInteractive(t *testing.T) {
	ctx := context.Background()
	button := func(id, title string) map[string]any {
		return map[string]any{"type": "reply", "reply": map[string]any{"id": id, "title": title}}
	}
	shape := func(header, footer any, buttons ...any) map[string]any {
		return map[string]any{"type": "button", "header": header, "body": "Pick one", "footer": footer,
			"action": map[string]any{"buttons": buttons, "sections": nil}}
	}
	for name, tc := range map[string]struct {
		params     map[string]any
		text       *string
		wantParams map[string]any
		wantText   string
	}{
		"minimal": {tplButtons(), nil, shape(nil, nil, button("yes", "Yes")), "Pick one"},
		"text header, footer, three buttons, nulls": {map[string]any{
			"type":   "button",
			"header": map[string]any{"type": "text", "text": "Order 42", "url": nil},
			"body":   "Pick one", "footer": "Reply within a day",
			"action": map[string]any{"buttons": []any{button("a", "Yes"), button("b", strings.Repeat("ж", 20)), button("c", "Later")}, "sections": nil},
		}, tplStr("Order 42\nPick one\nReply within a day"),
			shape(map[string]any{"type": "text", "text": "Order 42", "url": nil, "filename": nil}, "Reply within a day",
				button("a", "Yes"), button("b", strings.Repeat("ж", 20)), button("c", "Later")),
			"Order 42\nPick one\nReply within a day"},
		"image header: no text of its own": {map[string]any{
			"type": "button", "header": map[string]any{"type": "image", "url": "https://cdn.example.com/cat.png"},
			"body": "Pick one", "footer": nil, "action": map[string]any{"buttons": []any{button("yes", "Yes")}},
		}, nil, shape(map[string]any{"type": "image", "text": nil, "url": "https://cdn.example.com/cat.png", "filename": nil}, nil, button("yes", "Yes")),
			"Pick one"},
		"document header with a filename, footer": {map[string]any{
			"type": "button", "header": map[string]any{"type": "document", "url": "http://cdn.example.com/a", "filename": "price.pdf"},
			"body": "Pick one", "footer": "f", "action": map[string]any{"buttons": []any{button("yes", "Yes")}},
		}, nil, shape(map[string]any{"type": "document", "text": nil, "url": "http://cdn.example.com/a", "filename": "price.pdf"}, "f", button("yes", "Yes")),
			"Pick one\nf"},
		"video header, no filename": {map[string]any{
			"type": "button", "header": map[string]any{"type": "video", "url": "https://cdn.example.com/v.mp4", "filename": nil},
			"body": "Pick one", "action": map[string]any{"buttons": []any{button("yes", "Yes")}},
		}, nil, shape(map[string]any{"type": "video", "text": nil, "url": "https://cdn.example.com/v.mp4", "filename": nil}, nil, button("yes", "Yes")),
			"Pick one"},
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := newTemplates(t)
			got, err := s.CreateTemplate(ctx, app.CreateTemplateCmd{
				CompanyID: tplCompany, Type: domain.TemplateTypeInteractive, Name: "menu", Text: tc.text, Params: tc.params,
			})
			require.NoError(t, err)
			require.Equal(t, domain.TemplateTypeInteractive, got.Type)
			require.Equal(t, tc.wantParams, got.Params)
			require.Equal(t, tc.wantText, got.Text)
			require.Nil(t, got.FileURL)
			// The stored shape reads back as itself.
			again, err := domain.ParseInteractive(got.Params, "params")
			require.NoError(t, err)
			require.Equal(t, got.Params, again.Params)
		})
	}

	// A text given with the params is ignored, whatever it says: the
	// stored text is the derived one.
	s, _ := newTemplates(t)
	for _, text := range []string{"Something else", "", "Pick one"} {
		got, err := s.CreateTemplate(ctx, app.CreateTemplateCmd{
			CompanyID: tplCompany, Type: domain.TemplateTypeInteractive, Name: "menu", Text: tplStr(text), Params: tplButtons(),
		})
		require.NoError(t, err)
		require.Equal(t, "Pick one", got.Text, "given %q", text)
	}
}

// TestTemplateInteractiveRefused: every refused value of the structure,
// each at its location; all of one request's are listed; nothing stored.
func TestTemplateInteractiveRefused(t *testing.T) {
	ctx := context.Background()
	// with is tplButtons changed at one key (a dotted path; nil deletes).
	with := func(path string, v any) map[string]any {
		p := tplButtons()
		m := p
		keys := strings.Split(path, ".")
		for _, k := range keys[:len(keys)-1] {
			m = m[k].(map[string]any)
		}
		if v == nil {
			delete(m, keys[len(keys)-1])
		} else {
			m[keys[len(keys)-1]] = v
		}
		return p
	}
	button := func(id, title any) any {
		return map[string]any{"type": "reply", "reply": map[string]any{"id": id, "title": title}}
	}
	buttons := func(b ...any) map[string]any { return with("action.buttons", b) }
	at := func(typ string, path ...any) []any { return tplLoc(typ, append([]any{"params"}, path...)...) }
	bt := func(typ string, path ...any) []any { return at(typ, append([]any{"action", "buttons"}, path...)...) }

	for name, tc := range map[string]struct {
		params map[string]any
		want   [][]any
	}{
		"empty":                 {map[string]any{}, [][]any{at("missing", "type"), at("missing", "body"), at("missing", "action")}},
		"unknown keys, by name": {with("zeta", 1), [][]any{at("extra_forbidden", "zeta")}},
		"type list":             {with("type", "list"), [][]any{at("enum", "type")}},
		"type not a string":     {with("type", float64(1)), [][]any{at("string_type", "type")}},
		"type null":             {map[string]any{"type": nil, "body": "b", "action": tplButtons()["action"]}, [][]any{at("missing", "type")}},
		"header not an object":  {with("header", "Hi"), [][]any{at("dict_type", "header")}},
		"header type unknown":   {with("header", map[string]any{"type": "audio", "url": "https://x.example/a.ogg"}), [][]any{at("enum", "header", "type")}},
		"header without type":   {with("header", map[string]any{"text": "Hi"}), [][]any{at("missing", "header", "type")}},
		"header unknown key":    {with("header", map[string]any{"type": "text", "text": "Hi", "caption": "x"}), [][]any{at("extra_forbidden", "header", "caption")}},
		"text header, no text":  {with("header", map[string]any{"type": "text"}), [][]any{at("missing", "header", "text")}},
		"text header, empty":    {with("header", map[string]any{"type": "text", "text": ""}), [][]any{at("string_too_short", "header", "text")}},
		"text header too long":  {with("header", map[string]any{"type": "text", "text": strings.Repeat("ж", 61)}), [][]any{at("string_too_long", "header", "text")}},
		"text header with url": {with("header", map[string]any{"type": "text", "text": "Hi", "url": "https://x.example/a.png"}),
			[][]any{at("value_error", "header", "url")}},
		"text header with filename": {with("header", map[string]any{"type": "text", "text": "Hi", "filename": "a"}),
			[][]any{at("value_error", "header", "filename")}},
		"image header, no url":    {with("header", map[string]any{"type": "image"}), [][]any{at("missing", "header", "url")}},
		"image header, ftp url":   {with("header", map[string]any{"type": "image", "url": "ftp://x.example/a.png"}), [][]any{at("url_parsing", "header", "url")}},
		"image header, url a num": {with("header", map[string]any{"type": "image", "url": float64(5)}), [][]any{at("string_type", "header", "url")}},
		"image header with text": {with("header", map[string]any{"type": "image", "url": "https://x.example/a.png", "text": "Hi"}),
			[][]any{at("value_error", "header", "text")}},
		"video header with filename": {with("header", map[string]any{"type": "video", "url": "https://x.example/a.mp4", "filename": "a.mp4"}),
			[][]any{at("value_error", "header", "filename")}},
		"document filename empty": {with("header", map[string]any{"type": "document", "url": "https://x.example/a", "filename": ""}),
			[][]any{at("string_too_short", "header", "filename")}},
		"document filename too long": {with("header", map[string]any{"type": "document", "url": "https://x.example/a", "filename": strings.Repeat("a", 256)}),
			[][]any{at("string_too_long", "header", "filename")}},
		"body missing":       {with("body", nil), [][]any{at("missing", "body")}},
		"body empty":         {with("body", ""), [][]any{at("string_too_short", "body")}},
		"body too long":      {with("body", strings.Repeat("ж", 1025)), [][]any{at("string_too_long", "body")}},
		"body not a string":  {with("body", []any{"a"}), [][]any{at("string_type", "body")}},
		"footer empty":       {with("footer", ""), [][]any{at("string_too_short", "footer")}},
		"footer too long":    {with("footer", strings.Repeat("ж", 61)), [][]any{at("string_too_long", "footer")}},
		"footer an object":   {with("footer", map[string]any{"text": "f"}), [][]any{at("string_type", "footer")}},
		"action missing":     {with("action", nil), [][]any{at("missing", "action")}},
		"action a list":      {with("action", []any{}), [][]any{at("dict_type", "action")}},
		"action unknown key": {with("action.catalog_id", "c1"), [][]any{at("extra_forbidden", "action", "catalog_id")}},
		"menu lists":         {with("action.sections", []any{map[string]any{"title": "s"}}), [][]any{at("value_error", "action", "sections")}},
		"buttons missing":    {with("action.buttons", nil), [][]any{at("missing", "action", "buttons")}},
		"buttons not a list": {with("action.buttons", "yes"), [][]any{at("list_type", "action", "buttons")}},
		"no buttons":         {buttons(), [][]any{at("too_short", "action", "buttons")}},
		"four buttons":       {buttons(button("a", "A"), button("b", "B"), button("c", "C"), button("d", "D")), [][]any{at("too_long", "action", "buttons")}},
		"button not object":  {buttons("yes"), [][]any{bt("dict_type", 0)}},
		"button type url":    {buttons(map[string]any{"type": "url", "reply": map[string]any{"id": "a", "title": "A"}}), [][]any{bt("enum", 0, "type")}},
		"button no type":     {buttons(map[string]any{"reply": map[string]any{"id": "a", "title": "A"}}), [][]any{bt("missing", 0, "type")}},
		"button unknown key": {buttons(map[string]any{"type": "reply", "reply": map[string]any{"id": "a", "title": "A"}, "url": "u"}), [][]any{bt("extra_forbidden", 0, "url")}},
		"button no reply":    {buttons(button("a", "A"), map[string]any{"type": "reply"}), [][]any{bt("missing", 1, "reply")}},
		"reply a string":     {buttons(map[string]any{"type": "reply", "reply": "a"}), [][]any{bt("dict_type", 0, "reply")}},
		"reply unknown key":  {buttons(map[string]any{"type": "reply", "reply": map[string]any{"id": "a", "title": "A", "payload": "p"}}), [][]any{bt("extra_forbidden", 0, "reply", "payload")}},
		"title too long":     {buttons(button("a", "A"), button("b", strings.Repeat("ж", 21))), [][]any{bt("string_too_long", 1, "reply", "title")}},
		"title missing":      {buttons(map[string]any{"type": "reply", "reply": map[string]any{"id": "a"}}), [][]any{bt("missing", 0, "reply", "title")}},
		"title a number":     {buttons(button("a", float64(7))), [][]any{bt("string_type", 0, "reply", "title")}},
		"id empty":           {buttons(button("", "A")), [][]any{bt("string_too_short", 0, "reply", "id")}},
		"id too long":        {buttons(button(strings.Repeat("i", 257), "A")), [][]any{bt("string_too_long", 0, "reply", "id")}},
		"id a number":        {buttons(button(float64(1), "A")), [][]any{bt("string_type", 0, "reply", "id")}},
		"ids repeated":       {buttons(button("a", "A"), button("b", "B"), button("a", "C")), [][]any{bt("value_error", 2, "reply", "id")}},
		"several at once": {map[string]any{
			"type": "carousel", "body": "", "extra": true,
			"header": map[string]any{"type": "text", "text": strings.Repeat("h", 61)},
			"action": map[string]any{"buttons": []any{button("a", strings.Repeat("t", 21)), button("a", "B")}},
		}, [][]any{
			at("extra_forbidden", "extra"), at("enum", "type"), at("string_too_long", "header", "text"), at("string_too_short", "body"),
			bt("string_too_long", 0, "reply", "title"), bt("value_error", 1, "reply", "id"),
		}},
	} {
		t.Run(name, func(t *testing.T) {
			s, repo := newTemplates(t)
			_, err := s.CreateTemplate(ctx, app.CreateTemplateCmd{CompanyID: tplCompany, Type: domain.TemplateTypeInteractive, Name: "menu", Params: tc.params})
			tplRequireLocs(t, err, tc.want...)
			require.Empty(t, repo.rows)
		})
	}

	// The limits themselves pass.
	s, _ := newTemplates(t)
	_, err := s.CreateTemplate(ctx, app.CreateTemplateCmd{CompanyID: tplCompany, Type: domain.TemplateTypeInteractive, Name: "menu",
		Params: map[string]any{
			"type": "button", "header": map[string]any{"type": "text", "text": strings.Repeat("ж", 60)},
			"body": strings.Repeat("ж", 1024), "footer": strings.Repeat("ж", 60),
			"action": map[string]any{"buttons": []any{button(strings.Repeat("i", 256), strings.Repeat("ж", 20)), button("b", "B"), button("c", "C")}},
		}})
	require.NoError(t, err)
}

// TestUpdateTemplate: only the given fields change, the whole obeys the
// create rules, a given type or file_url derives the type again, and a
// refused change stores nothing.
func TestUpdateTemplate(t *testing.T) {
	ctx := context.Background()
	s, repo := newTemplates(t)
	create := func(cmd app.CreateTemplateCmd) domain.Template {
		t.Helper()
		cmd.CompanyID = tplCompany
		out, err := s.CreateTemplate(ctx, cmd)
		require.NoError(t, err)
		return out
	}
	update := func(cmd app.UpdateTemplateCmd) (domain.Template, error) {
		if cmd.CompanyID == 0 {
			cmd.CompanyID = tplCompany
		}
		return s.UpdateTemplate(ctx, cmd)
	}
	// refused checks a 422 that left the template as it was.
	refused := func(cmd app.UpdateTemplateCmd, want ...[]any) {
		t.Helper()
		before := repo.rows[cmd.ID]
		_, err := update(cmd)
		tplRequireLocs(t, err, want...)
		require.Equal(t, before, repo.rows[cmd.ID])
	}
	typ := func(t domain.TemplateType) *domain.TemplateType { return &t }

	plain := create(app.CreateTemplateCmd{Type: domain.TemplateTypeText, Name: "hello", Text: tplStr("Hello!")})
	// Nothing given: nothing changes.
	got, err := update(app.UpdateTemplateCmd{ID: plain.ID})
	require.NoError(t, err)
	require.Equal(t, plain, got)
	// The name only.
	got, err = update(app.UpdateTemplateCmd{ID: plain.ID, Name: tplStr("greeting")})
	require.NoError(t, err)
	plain.Name = "greeting"
	require.Equal(t, plain, got)
	// A file: the type follows it; the text stays, now a caption.
	got, err = update(app.UpdateTemplateCmd{ID: plain.ID, FileURL: tplStr(tplFileLink(tplMOV))})
	require.NoError(t, err)
	require.Equal(t, domain.TemplateTypeVideo, got.Type)
	require.Equal(t, "Hello!", got.Text)
	require.Equal(t, tplFileLink(tplMOV), *got.FileURL)
	// Another file, by extension.
	got, err = update(app.UpdateTemplateCmd{ID: plain.ID, FileURL: tplStr("https://cdn.example.com/cat.webp")})
	require.NoError(t, err)
	require.Equal(t, domain.TemplateTypeImage, got.Type)
	// The text alone keeps the file's type (judged when the file was given).
	reads := repo.fileReads
	got, err = update(app.UpdateTemplateCmd{ID: plain.ID, Text: tplStr(""), Type: typ(domain.TemplateTypeText)})
	require.NoError(t, err)
	require.Equal(t, domain.TemplateTypeImage, got.Type)
	require.Equal(t, "", got.Text)
	require.Equal(t, reads, repo.fileReads)
	// Removing the file of a template without a caption needs a text.
	refused(app.UpdateTemplateCmd{ID: plain.ID, FileURL: tplStr("")}, tplLoc("string_too_short", "text"))
	got, err = update(app.UpdateTemplateCmd{ID: plain.ID, FileURL: tplStr(""), Text: tplStr("Hi again")})
	require.NoError(t, err)
	require.Equal(t, domain.Template{ID: plain.ID, CompanyID: tplCompany, Type: domain.TemplateTypeText, Name: "greeting",
		Text: "Hi again", Params: map[string]any{}}, got)
	// Rules of the whole and of each field.
	refused(app.UpdateTemplateCmd{ID: plain.ID, Text: tplStr("")}, tplLoc("string_too_short", "text"))
	refused(app.UpdateTemplateCmd{ID: plain.ID, Params: map[string]any{"x": "y"}}, tplLoc("value_error", "params"))
	refused(app.UpdateTemplateCmd{ID: plain.ID, Type: typ(domain.TemplateTypeImage)}, tplLoc("enum", "type"))
	refused(app.UpdateTemplateCmd{ID: plain.ID, FileURL: tplStr("file.png")}, tplLoc("url_parsing", "file_url"))
	refused(app.UpdateTemplateCmd{ID: plain.ID, FileURL: tplStr(tplFileLink(tplNone))}, tplLoc("value_error", "file_url"))
	refused(app.UpdateTemplateCmd{ID: plain.ID, FileURL: tplStr("https://cdn.example.com/a.png"), Text: tplStr(strings.Repeat("ж", 1025))},
		tplLoc("string_too_long", "text"))
	// (its params are the stored {}, which lacks everything)
	refused(app.UpdateTemplateCmd{ID: plain.ID, Type: typ(domain.TemplateTypeInteractive)},
		tplLoc("missing", "params", "type"), tplLoc("missing", "params", "body"), tplLoc("missing", "params", "action"))
	refused(app.UpdateTemplateCmd{ID: plain.ID, Type: typ(domain.TemplateTypeInteractive), Params: map[string]any{"type": "button"}},
		tplLoc("missing", "params", "body"), tplLoc("missing", "params", "action"))

	// To interactive: the text follows the params (the old one is not
	// kept, and a given one is ignored).
	got, err = update(app.UpdateTemplateCmd{ID: plain.ID, Type: typ(domain.TemplateTypeInteractive), Params: tplButtons(), Text: tplStr("Hi again")})
	require.NoError(t, err)
	require.Equal(t, domain.TemplateTypeInteractive, got.Type)
	require.Equal(t, "Pick one", got.Text)
	menu := got
	// Its params change: the text follows.
	p := tplButtons()
	p["footer"] = "Bye"
	got, err = update(app.UpdateTemplateCmd{ID: plain.ID, Params: p})
	require.NoError(t, err)
	require.Equal(t, "Pick one\nBye", got.Text)
	require.Equal(t, "Bye", got.Params["footer"])
	require.NotEqual(t, menu.Params, got.Params)
	// What a read shows, sent back: the same template.
	prev := got
	got, err = update(app.UpdateTemplateCmd{ID: plain.ID, Type: typ(domain.TemplateTypeInteractive), Params: prev.Params, Text: tplStr(prev.Text), Name: tplStr("menu")})
	require.NoError(t, err)
	prev.Name = "menu"
	require.Equal(t, prev, got)
	// The text alone changes nothing: it is derived.
	got, err = update(app.UpdateTemplateCmd{ID: plain.ID, Text: tplStr("Anything")})
	require.NoError(t, err)
	require.Equal(t, prev, got)
	require.Equal(t, prev, repo.rows[plain.ID])
	refused(app.UpdateTemplateCmd{ID: plain.ID, FileURL: tplStr("https://cdn.example.com/a.png")}, tplLoc("value_error", "file_url"))
	refused(app.UpdateTemplateCmd{ID: plain.ID, Params: map[string]any{}},
		tplLoc("missing", "params", "type"), tplLoc("missing", "params", "body"), tplLoc("missing", "params", "action"))
	// Back to a text: params {} and a text in the same request.
	refused(app.UpdateTemplateCmd{ID: plain.ID, Type: typ(domain.TemplateTypeText), Text: tplStr("plain")}, tplLoc("value_error", "params"))
	refused(app.UpdateTemplateCmd{ID: plain.ID, Type: typ(domain.TemplateTypeText), Params: map[string]any{}}, tplLoc("missing", "text"))
	got, err = update(app.UpdateTemplateCmd{ID: plain.ID, Type: typ(domain.TemplateTypeText), Params: map[string]any{}, FileURL: tplStr(tplFileLink(tplPDF))})
	require.NoError(t, err)
	require.Equal(t, domain.Template{ID: plain.ID, CompanyID: tplCompany, Type: domain.TemplateTypeDocument, Name: "menu",
		FileURL: tplStr(tplFileLink(tplPDF)), Params: map[string]any{}}, got)

	// Another company's template, or none: 404 15005, untouched.
	before := repo.rows[plain.ID]
	_, err = update(app.UpdateTemplateCmd{CompanyID: tplOther, ID: plain.ID, Name: tplStr("theirs")})
	tplRequireAPIError(t, err, apierr.MessagingTemplateNotFound)
	_, err = update(app.UpdateTemplateCmd{ID: 999, Name: tplStr("none")})
	tplRequireAPIError(t, err, apierr.MessagingTemplateNotFound)
	require.Equal(t, before, repo.rows[plain.ID])
}

func tplRequireAPIError(t *testing.T, err error, def apierr.Def) {
	t.Helper()
	require.Error(t, err)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	require.Equal(t, def.Code, e.Code, e.Error())
	require.Equal(t, def.Status, e.Status)
}

// TestTemplatesListAndDelete: newest first, per company; a delete of
// another company's template or an unknown one is 404 15005.
func TestTemplatesListAndDelete(t *testing.T) {
	ctx := context.Background()
	s, _ := newTemplates(t)
	var ids []int64
	for _, company := range []int64{tplCompany, tplOther, tplCompany} {
		out, err := s.CreateTemplate(ctx, app.CreateTemplateCmd{CompanyID: company, Type: domain.TemplateTypeText, Name: "n", Text: tplStr("t")})
		require.NoError(t, err)
		ids = append(ids, out.ID)
	}
	idsOf := func(company int64) []int64 {
		list, err := s.Templates(ctx, company)
		require.NoError(t, err)
		var out []int64
		for _, t := range list {
			out = append(out, t.ID)
		}
		return out
	}
	require.Equal(t, []int64{ids[2], ids[0]}, idsOf(tplCompany))
	tplRequireAPIError(t, s.DeleteTemplate(ctx, tplCompany, ids[1]), apierr.MessagingTemplateNotFound)
	require.Equal(t, []int64{ids[1]}, idsOf(tplOther))
	require.NoError(t, s.DeleteTemplate(ctx, tplCompany, ids[0]))
	tplRequireAPIError(t, s.DeleteTemplate(ctx, tplCompany, ids[0]), apierr.MessagingTemplateNotFound)
	require.Equal(t, []int64{ids[2]}, idsOf(tplCompany))
}
