package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/messaging/internal/domain"
	"switchboard.dev/services/messaging/migrations"
)

// TestTemplatesStore: what is stored reads back as it was (a file link or
// null, params {} or a nested structure with nulls), newest first, and
// only within its company.
func TestTemplatesStore(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	const company, other = int64(21), int64(22)

	list, err := r.ListTemplates(ctx, company)
	require.NoError(t, err)
	require.Empty(t, list)

	link := "https://cdn.example.com/cat.png"
	interactive := map[string]any{
		"type":   "button",
		"header": nil,
		"body":   "Pick one",
		"footer": "Ж\n\"quoted\"",
		"action": map[string]any{"buttons": []any{
			map[string]any{"type": "reply", "reply": map[string]any{"id": "a", "title": "Yes"}},
		}, "sections": nil},
	}
	plain, err := r.CreateTemplate(ctx, domain.Template{CompanyID: company, Type: domain.TemplateTypeText, Name: "hello", Text: "Hello!"})
	require.NoError(t, err)
	require.NotZero(t, plain.ID)
	require.False(t, plain.CreatedAt.IsZero())
	require.Equal(t, domain.Template{ID: plain.ID, CompanyID: company, Type: domain.TemplateTypeText, Name: "hello", Text: "Hello!",
		Params: map[string]any{}, CreatedAt: plain.CreatedAt}, plain)
	theirs, err := r.CreateTemplate(ctx, domain.Template{CompanyID: other, Type: domain.TemplateTypeText, Name: "theirs", Text: "x", Params: map[string]any{}})
	require.NoError(t, err)
	file, err := r.CreateTemplate(ctx, domain.Template{CompanyID: company, Type: domain.TemplateTypeImage, Name: "cat", FileURL: &link})
	require.NoError(t, err)
	menu, err := r.CreateTemplate(ctx, domain.Template{CompanyID: company, Type: domain.TemplateTypeInteractive, Name: "menu",
		Text: "Pick one\nЖ", Params: interactive})
	require.NoError(t, err)
	require.Equal(t, interactive, menu.Params)

	list, err = r.ListTemplates(ctx, company)
	require.NoError(t, err)
	require.Equal(t, []domain.Template{menu, file, plain}, list)
	list, err = r.ListTemplates(ctx, other)
	require.NoError(t, err)
	require.Equal(t, []domain.Template{theirs}, list)

	// Another company's id is no template of this one.
	_, err = r.UpdateTemplate(ctx, company, theirs.ID, func(*domain.Template) error {
		t.Fatal("change called for another company's template")
		return nil
	})
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.ErrorIs(t, r.DeleteTemplate(ctx, company, theirs.ID), domain.ErrNotFound)
	require.ErrorIs(t, r.DeleteTemplate(ctx, company, 1<<40), domain.ErrNotFound)
	list, err = r.ListTemplates(ctx, other)
	require.NoError(t, err)
	require.Equal(t, []domain.Template{theirs}, list)

	require.NoError(t, r.DeleteTemplate(ctx, company, file.ID))
	require.ErrorIs(t, r.DeleteTemplate(ctx, company, file.ID), domain.ErrNotFound)
	list, err = r.ListTemplates(ctx, company)
	require.NoError(t, err)
	require.Equal(t, []domain.Template{menu, plain}, list)
}

// TestTemplatesUpdate: change sees the stored template; what it leaves is
// stored (the file removed, params back to {}); its error stores nothing.
func TestTemplatesUpdate(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	const company = int64(23)
	link := "https://cdn.example.com/a.pdf"
	tmpl, err := r.CreateTemplate(ctx, domain.Template{CompanyID: company, Type: domain.TemplateTypeDocument, Name: "doc", Text: "Prices", FileURL: &link})
	require.NoError(t, err)

	refused := errors.New("refused")
	_, err = r.UpdateTemplate(ctx, company, tmpl.ID, func(tp *domain.Template) error {
		tp.Name, tp.FileURL = "changed", nil
		return refused
	})
	require.ErrorIs(t, err, refused)
	list, err := r.ListTemplates(ctx, company)
	require.NoError(t, err)
	require.Equal(t, []domain.Template{tmpl}, list)

	got, err := r.UpdateTemplate(ctx, company, tmpl.ID, func(tp *domain.Template) error {
		require.Equal(t, tmpl, *tp)
		tp.Type, tp.Name, tp.Text, tp.FileURL = domain.TemplateTypeInteractive, "menu", "b", nil
		tp.Params = map[string]any{"body": "b", "list": []any{"x", nil, true}}
		// Not columns a change sets: the row keeps its own.
		tp.ID, tp.CompanyID, tp.CreatedAt = 0, 0, tp.CreatedAt.Add(1)
		return nil
	})
	require.NoError(t, err)
	list, err = r.ListTemplates(ctx, company)
	require.NoError(t, err)
	require.Equal(t, []domain.Template{{ID: tmpl.ID, CompanyID: company, Type: domain.TemplateTypeInteractive, Name: "menu", Text: "b",
		Params: map[string]any{"body": "b", "list": []any{"x", nil, true}}, CreatedAt: tmpl.CreatedAt}}, list)
	require.Equal(t, list[0], got)

	got, err = r.UpdateTemplate(ctx, company, tmpl.ID, func(tp *domain.Template) error {
		tp.Type, tp.Text, tp.Params = domain.TemplateTypeText, "plain", nil
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, domain.Template{ID: tmpl.ID, CompanyID: company, Type: domain.TemplateTypeText, Name: "menu", Text: "plain",
		Params: map[string]any{}, CreatedAt: tmpl.CreatedAt}, got)
	list, err = r.ListTemplates(ctx, company)
	require.NoError(t, err)
	require.Equal(t, []domain.Template{got}, list)
}

// TestTemplatesUpdateSerialised: concurrent changes of one template each
// see the one before (the row lock): none is lost.
func TestTemplatesUpdateSerialised(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	const company, n = int64(24), 12
	tmpl, err := r.CreateTemplate(ctx, domain.Template{CompanyID: company, Type: domain.TemplateTypeText, Name: "n", Text: "0"})
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.UpdateTemplate(ctx, company, tmpl.ID, func(tp *domain.Template) error {
				var count int
				if _, err := fmt.Sscan(tp.Text, &count); err != nil {
					return err
				}
				tp.Text = fmt.Sprint(count + 1)
				return nil
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	list, err := r.ListTemplates(ctx, company)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(n), list[0].Text)
}
