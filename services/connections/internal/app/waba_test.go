package app_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
)

func loginWabaParams() map[string]any {
	return map[string]any{"waba_business_id": "1001", "phone_number_id": "2002", "access_token": "EAAG-secret"}
}

// loginPictures serves a small PNG, a 6 MB one, a 404 and an HTML page.
func loginPictures(t *testing.T) *httptest.Server {
	t.Helper()
	var pic bytes.Buffer
	require.NoError(t, png.Encode(&pic, image.NewRGBA(image.Rect(0, 0, 4, 4))))
	mux := http.NewServeMux()
	mux.HandleFunc("/logo.png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pic.Bytes())
	})
	mux.HandleFunc("/huge.png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(make([]byte, 6<<20))
	})
	mux.HandleFunc("/page", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<html>not a picture</html>"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func (e loginEnv) waba(t *testing.T, company int64) domain.Connection {
	t.Helper()
	c, err := e.svc.CreateConnection(context.Background(), app.CreateConnectionCmd{
		CompanyID: company, Name: "waba", Type: domain.Waba, Params: loginWabaParams(),
	})
	require.NoError(t, err)
	return c
}

func TestWabaProfile(t *testing.T) {
	ctx := context.Background()
	e := newLoginEnv(t)
	srv := loginPictures(t)
	c := e.waba(t, loginCompany)

	in := domain.WabaProfile{
		About:             loginStr("We sell things"),
		Email:             loginStr("shop@example.com"),
		ProfilePictureURL: loginStr(srv.URL + "/logo.png"),
		Vertical:          loginStr("RETAIL"),
		Websites:          []string{"https://example.com"},
		Username:          loginStr("acme.shop"),
	}
	p, check, err := e.svc.UpdateWabaProfile(ctx, app.WabaProfileCmd{CompanyID: loginCompany, ConnectionID: c.ID, Profile: in})
	require.NoError(t, err)
	require.Equal(t, in, p)
	require.Equal(t, domain.UsernameCheck{Eligible: true, Suggestions: []string{}}, check)
	stored, ice, err := e.repo.WabaSettings(ctx, loginCompany, c.ID)
	require.NoError(t, err)
	require.Equal(t, in, stored)
	require.Empty(t, ice)

	// Asking again keeps it eligible: the connection holds it.
	_, check, err = e.svc.UpdateWabaProfile(ctx, app.WabaProfileCmd{CompanyID: loginCompany, ConnectionID: c.ID, Profile: in})
	require.NoError(t, err)
	require.True(t, check.Eligible)

	// Another connection cannot have it, and is offered three others.
	other := e.waba(t, loginCompany)
	_, check, err = e.svc.UpdateWabaProfile(ctx, app.WabaProfileCmd{CompanyID: loginCompany, ConnectionID: other.ID,
		Profile: domain.WabaProfile{Username: loginStr("acme.shop")}})
	require.NoError(t, err)
	require.False(t, check.Eligible)
	require.Equal(t, []string{"acme.shop_official", "acme.shop_biz", "acme.shop.shop"}, check.Suggestions)

	// The body replaces the profile: absent fields become null, and the
	// username released is free for the other connection.
	p, check, err = e.svc.UpdateWabaProfile(ctx, app.WabaProfileCmd{CompanyID: loginCompany, ConnectionID: c.ID,
		Profile: domain.WabaProfile{About: loginStr("Only this")}})
	require.NoError(t, err)
	require.Equal(t, domain.WabaProfile{About: loginStr("Only this"), Websites: []string{}}, p)
	require.Equal(t, domain.UsernameCheck{Suggestions: []string{}}, check, "no username: not eligible, no suggestions")
	stored, _, err = e.repo.WabaSettings(ctx, loginCompany, c.ID)
	require.NoError(t, err)
	require.Equal(t, p, stored)
	_, check, err = e.svc.UpdateWabaProfile(ctx, app.WabaProfileCmd{CompanyID: loginCompany, ConnectionID: other.ID,
		Profile: domain.WabaProfile{Username: loginStr("acme.shop")}})
	require.NoError(t, err)
	require.True(t, check.Eligible)

	// A malformed username is not eligible; suggestions are well formed.
	_, check, err = e.svc.UpdateWabaProfile(ctx, app.WabaProfileCmd{CompanyID: loginCompany, ConnectionID: c.ID,
		Profile: domain.WabaProfile{Username: loginStr("Acme Shop!")}})
	require.NoError(t, err)
	require.False(t, check.Eligible)
	require.Equal(t, []string{"acmeshop_official", "acmeshop_biz", "acmeshop.shop"}, check.Suggestions)

	// Start messages are stored beside the profile.
	got, err := e.svc.UpdateWabaIceBreakers(ctx, loginCompany, c.ID, []string{"Hi", "Prices?"})
	require.NoError(t, err)
	require.Equal(t, []string{"Hi", "Prices?"}, got)
	stored, ice, err = e.repo.WabaSettings(ctx, loginCompany, c.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"Hi", "Prices?"}, ice)
	require.Equal(t, loginStr("Acme Shop!"), stored.Username, "the profile stays")
	got, err = e.svc.UpdateWabaIceBreakers(ctx, loginCompany, c.ID, nil)
	require.NoError(t, err)
	require.Equal(t, []string{}, got)
}

func TestWabaProfilePictures(t *testing.T) {
	ctx := context.Background()
	e := newLoginEnv(t)
	srv := loginPictures(t)
	c := e.waba(t, loginCompany)
	update := func(url string) error {
		_, _, err := e.svc.UpdateWabaProfile(ctx, app.WabaProfileCmd{CompanyID: loginCompany, ConnectionID: c.ID,
			Profile: domain.WabaProfile{About: loginStr("x"), ProfilePictureURL: &url}})
		return err
	}
	require.NoError(t, update(srv.URL+"/logo.png"))
	loginErr(t, update(srv.URL+"/huge.png"), apierr.WabaProfilePictureTooLarge.Code)
	loginErr(t, update(srv.URL+"/missing.png"), apierr.WabaProfilePictureURLNotAllowed.Code)
	loginErr(t, update(srv.URL+"/page"), apierr.WabaProfilePictureURLNotAllowed.Code)
	loginErr(t, update("file:///etc/passwd"), apierr.WabaProfilePictureURLNotAllowed.Code)

	// A refused picture stores nothing.
	stored, _, err := e.repo.WabaSettings(ctx, loginCompany, c.ID)
	require.NoError(t, err)
	require.Equal(t, loginStr(srv.URL+"/logo.png"), stored.ProfilePictureURL)

	// Outside development, private addresses are refused before any fetch.
	strict := newLoginEnv(t, func(c *app.Config) { c.AllowPrivateTargets = false })
	sc := strict.waba(t, loginCompany)
	url := srv.URL + "/logo.png"
	_, _, err = strict.svc.UpdateWabaProfile(ctx, app.WabaProfileCmd{CompanyID: loginCompany, ConnectionID: sc.ID,
		Profile: domain.WabaProfile{ProfilePictureURL: &url}})
	loginErr(t, err, apierr.WabaProfilePictureURLNotAllowed.Code)
	_, _, err = strict.repo.WabaSettings(ctx, loginCompany, sc.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
}

func TestWabaOnlyOnTheCompanysWabaConnections(t *testing.T) {
	ctx := context.Background()
	e := newLoginEnv(t)
	c := e.waba(t, loginCompany)
	wa, err := e.svc.CreateConnection(ctx, app.CreateConnectionCmd{CompanyID: loginCompany, Name: "wa", Type: domain.Whatsapp})
	require.NoError(t, err)

	for _, ref := range []struct{ company, id int64 }{{2, c.ID}, {loginCompany, wa.ID}, {loginCompany, 999999}} {
		_, _, err := e.svc.UpdateWabaProfile(ctx, app.WabaProfileCmd{CompanyID: ref.company, ConnectionID: ref.id,
			Profile: domain.WabaProfile{About: loginStr("x")}})
		loginErr(t, err, apierr.ConnectionNotFound.Code)
		_, err = e.svc.UpdateWabaIceBreakers(ctx, ref.company, ref.id, []string{"Hi"})
		loginErr(t, err, apierr.ConnectionNotFound.Code)
	}
	_, _, err = e.svc.UpdateWabaProfile(ctx, app.WabaProfileCmd{CompanyID: loginCompany, ConnectionID: c.ID,
		Profile: domain.WabaProfile{Websites: []string{"ftp://example.com"}}})
	loginField(t, err, "body", "websites", 0)
}
