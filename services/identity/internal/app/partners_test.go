package app_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/identity/internal/adapters/postgres"
	"switchboard.dev/services/identity/internal/app"
	"switchboard.dev/services/identity/internal/domain"
	"switchboard.dev/services/identity/migrations"
)

// clock is a settable app.Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// newPartnerService is a service that can mail, on its own database
// (answered for reading rows directly).
func newPartnerService(t *testing.T, cfg app.Config, opts ...postgres.Option) (*app.Service, *pgxpool.Pool) {
	t.Helper()
	db := pgtest.New(t, migrations.FS)
	return app.New(postgres.New(db, opts...), &revoked{}, cfg), db
}

var codeRE = regexp.MustCompile(`^[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]{8}$`)

func count(t *testing.T, db *pgxpool.Pool, table string) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n))
	return n
}

// rowCounts are the rows of every table a creation writes.
func rowCounts(t *testing.T, db *pgxpool.Pool) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"users", "companies", "roles", "members", "integrations", "promo_codes", "partner_clients", "mail_outbox"} {
		out[table] = count(t, db, table)
	}
	return out
}

func requireField422(t *testing.T, err error, field, message string) {
	t.Helper()
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	require.Equal(t, 422, e.Status, "%v", err)
	require.Equal(t, map[string]any{"errors": []apierr.FieldError{{
		Location: []any{"body", field}, Message: message, Type: "value_error",
	}}}, e.Detail)
}

func newPartner(t *testing.T, s *app.Service, name string) domain.Partner {
	t.Helper()
	ctx := context.Background()
	c, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: name, IsPartner: true})
	require.NoError(t, err)
	p, err := s.Partner(ctx, c.Company.ID)
	require.NoError(t, err)
	return p
}

// TestPartnerPromoCodes: every partner company gets two codes of 8
// symbols of the alphabet, distinct among all companies' codes; other
// companies get none and are no partner to GetPartner.
func TestPartnerPromoCodes(t *testing.T) {
	ctx := context.Background()
	s, db := newPartnerService(t, app.Config{})
	const partners = 150
	seen := map[string]int64{}
	for i := range partners {
		c, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: fmt.Sprintf("Partner %d", i), IsPartner: true})
		require.NoError(t, err)
		p, err := s.Partner(ctx, c.Company.ID)
		require.NoError(t, err)
		require.Equal(t, domain.Partner{CompanyID: c.Company.ID, Name: c.Company.Name, PromoCode: p.PromoCode, ReferralPromoCode: p.ReferralPromoCode}, p)
		for _, code := range []string{p.PromoCode, p.ReferralPromoCode} {
			require.Regexp(t, codeRE, code)
			require.NotContains(t, seen, code, "unique among all codes")
			seen[code] = c.Company.ID
		}
	}
	require.Len(t, seen, 2*partners)

	plain, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "Not a partner"})
	require.NoError(t, err)
	require.Equal(t, 2*partners, count(t, db, "promo_codes"), "none for a company that is no partner")
	for _, id := range []int64{plain.Company.ID, plain.Company.ID + 1000, 0} {
		_, err = s.Partner(ctx, id)
		require.EqualValues(t, 8000, apiCode(t, err), "company %d", id)
	}

}

// TestPromoCodeClashDrawsAgain: a drawn code another company has is drawn
// again, in the same transaction; a generator that never finds a free
// code fails the creation, which then writes nothing.
func TestPromoCodeClashDrawsAgain(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	queue := []string{"AAAAAAAA", "BBBBBBBB", "AAAAAAAA", "BBBBBBBB", "CCCCCCCC", "BBBBBBBB", "DDDDDDDD"}
	gen := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(queue) == 0 {
			return "AAAAAAAA"
		}
		c := queue[0]
		queue = queue[1:]
		return c
	}
	s, db := newPartnerService(t, app.Config{}, postgres.WithPromoCodes(gen))
	a := newPartner(t, s, "A")
	require.Equal(t, "AAAAAAAA", a.PromoCode)
	require.Equal(t, "BBBBBBBB", a.ReferralPromoCode)
	b := newPartner(t, s, "B")
	require.Equal(t, "CCCCCCCC", b.PromoCode)
	require.Equal(t, "DDDDDDDD", b.ReferralPromoCode)

	before := rowCounts(t, db)
	_, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "C", IsPartner: true})
	require.ErrorContains(t, err, "no free promo code")
	require.Equal(t, before, rowCounts(t, db), "all or nothing")
}

// TestResolvePromoCode: a code is found in any case, with its partner and
// the type of client it makes; an unknown one is 404.
func TestResolvePromoCode(t *testing.T) {
	ctx := context.Background()
	s, _ := newPartnerService(t, app.Config{})
	p := newPartner(t, s, "Partner")
	newPartner(t, s, "Another partner")

	for _, given := range []string{p.PromoCode, strings.ToLower(p.PromoCode), strings.ToLower(p.PromoCode[:4]) + p.PromoCode[4:]} {
		pc, err := s.ResolvePromoCode(ctx, given)
		require.NoError(t, err, given)
		require.Equal(t, domain.PromoCode{Code: p.PromoCode, PartnerCompanyID: p.CompanyID, ClientType: domain.ClientPartner}, pc, given)
	}
	pc, err := s.ResolvePromoCode(ctx, strings.ToLower(p.ReferralPromoCode))
	require.NoError(t, err)
	require.Equal(t, domain.PromoCode{Code: p.ReferralPromoCode, PartnerCompanyID: p.CompanyID, ClientType: domain.ClientReferral}, pc)

	for _, unknown := range []string{"ZZZZZZZZ", p.PromoCode + "X", p.PromoCode[:7], " " + p.PromoCode, "%", "_"} {
		_, err = s.ResolvePromoCode(ctx, unknown)
		e, ok := apierr.FromError(err)
		require.True(t, ok, "%q: %v", unknown, err)
		require.Equal(t, apierr.NotFound.Code, e.Code, unknown)
		require.Equal(t, 404, e.Status)
	}
}

// TestCreateCompanyWithPromoCode: the operator's promo_code (case
// ignored) makes the new company a partner-type client, the
// referral_promo_code a referral, in the creation's transaction; an
// unknown code, or any code for a partner company, is 422 and creates
// nothing.
func TestCreateCompanyWithPromoCode(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)}
	s, db := newPartnerService(t, app.Config{Now: clk.Now})
	p := newPartner(t, s, "Partner")
	other := newPartner(t, s, "Other partner")

	viaPromo, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "Client", PromoCode: strings.ToLower(p.PromoCode)})
	require.NoError(t, err)
	require.False(t, viaPromo.Company.IsPartner)
	clk.Set(clk.Now().Add(time.Hour))
	viaReferral, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "Referral", PromoCode: p.ReferralPromoCode})
	require.NoError(t, err)
	plain, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "Plain"})
	require.NoError(t, err)
	ofOther, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "Other's", PromoCode: other.PromoCode})
	require.NoError(t, err)

	link, err := s.ClientLink(ctx, viaPromo.Company.ID)
	require.NoError(t, err)
	require.Equal(t, domain.ClientLink{CompanyID: viaPromo.Company.ID, PartnerCompanyID: p.CompanyID, ClientType: domain.ClientPartner}, link)
	link, err = s.ClientLink(ctx, viaReferral.Company.ID)
	require.NoError(t, err)
	require.Equal(t, domain.ClientLink{CompanyID: viaReferral.Company.ID, PartnerCompanyID: p.CompanyID, ClientType: domain.ClientReferral}, link)
	for _, id := range []int64{plain.Company.ID, p.CompanyID, 999999} {
		link, err = s.ClientLink(ctx, id)
		require.NoError(t, err)
		require.Equal(t, domain.ClientLink{CompanyID: id}, link, "nobody's client: partner 0")
	}

	// The partner's views: its clients by id, with what they show.
	locked := true
	_, err = s.UpdateBillingSettings(ctx, app.UpdateBillingSettingsCmd{CompanyID: viaReferral.Company.ID, PaymentsLocked: &locked})
	require.NoError(t, err)
	clients, err := s.PartnerClients(ctx, p.CompanyID)
	require.NoError(t, err)
	require.Len(t, clients, 2)
	require.Equal(t, domain.PartnerClient{
		CompanyID: viaPromo.Company.ID, Name: "Client", ClientType: domain.ClientPartner,
	}, withoutTime(clients[0]))
	require.Equal(t, domain.PartnerClient{
		CompanyID: viaReferral.Company.ID, Name: "Referral", ClientType: domain.ClientReferral, PaymentsLocked: true,
	}, withoutTime(clients[1]))
	require.True(t, clients[0].CreatedAt.Equal(time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)), "%v", clients[0].CreatedAt)
	require.True(t, clients[1].CreatedAt.Equal(time.Date(2026, 5, 10, 13, 0, 0, 0, time.UTC)), "%v", clients[1].CreatedAt)
	clients, err = s.PartnerClients(ctx, other.CompanyID)
	require.NoError(t, err)
	require.Len(t, clients, 1)
	require.Equal(t, ofOther.Company.ID, clients[0].CompanyID)
	clients, err = s.PartnerClients(ctx, plain.Company.ID)
	require.NoError(t, err)
	require.Empty(t, clients)

	// Refusals write nothing.
	before := rowCounts(t, db)
	_, err = s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "X", PromoCode: "nosuchco", OwnerEmail: "x@example.com"})
	requireField422(t, err, "promo_code", `unknown promo code "nosuchco"`)
	_, err = s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "X", IsPartner: true, PromoCode: p.PromoCode})
	requireField422(t, err, "promo_code", fmt.Sprintf("promo code %q cannot be given for a partner company", p.PromoCode))
	_, err = s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "X", IsPartner: true, PromoCode: "nosuchco"})
	requireField422(t, err, "promo_code", `promo code "nosuchco" cannot be given for a partner company`)
	require.Equal(t, before, rowCounts(t, db))
}

func withoutTime(c domain.PartnerClient) domain.PartnerClient {
	c.CreatedAt = time.Time{}
	return c
}

// TestEnsurePromoCodes: partner companies from before promo codes (rows
// written as the old code did) get the codes they lack; codes they have
// stay; a second run has nothing to do.
func TestEnsurePromoCodes(t *testing.T) {
	ctx := context.Background()
	s, db := newPartnerService(t, app.Config{})
	current := newPartner(t, s, "Current")
	var old, half, plain int64
	require.NoError(t, db.QueryRow(ctx, `INSERT INTO companies (name, timezone, is_partner) VALUES ('Old', 'Europe/Moscow', true) RETURNING id`).Scan(&old))
	require.NoError(t, db.QueryRow(ctx, `INSERT INTO companies (name, timezone, is_partner) VALUES ('Half', 'Europe/Moscow', true) RETURNING id`).Scan(&half))
	require.NoError(t, db.QueryRow(ctx, `INSERT INTO companies (name, timezone) VALUES ('Plain', 'Europe/Moscow') RETURNING id`).Scan(&plain))
	_, err := db.Exec(ctx, `INSERT INTO promo_codes (code, company_id, kind) VALUES ('HALFHALF', $1, 'partner')`, half)
	require.NoError(t, err)

	n, err := s.EnsurePromoCodes(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n, "two for Old, the referral code for Half")

	got, err := s.Partner(ctx, old)
	require.NoError(t, err)
	require.Regexp(t, codeRE, got.PromoCode)
	require.Regexp(t, codeRE, got.ReferralPromoCode)
	require.NotEqual(t, got.PromoCode, got.ReferralPromoCode)
	got, err = s.Partner(ctx, half)
	require.NoError(t, err)
	require.Equal(t, "HALFHALF", got.PromoCode, "kept")
	require.Regexp(t, codeRE, got.ReferralPromoCode)
	got, err = s.Partner(ctx, current.CompanyID)
	require.NoError(t, err)
	require.Equal(t, current, got, "unchanged")
	_, err = s.Partner(ctx, plain)
	require.EqualValues(t, 8000, apiCode(t, err))

	n, err = s.EnsurePromoCodes(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, 6, count(t, db, "promo_codes"))

	// Replicas starting at once skip each other's codes.
	_, err = db.Exec(ctx, `INSERT INTO companies (name, timezone, is_partner) SELECT 'Old ' || i, 'Europe/Moscow', true FROM generate_series(1, 20) i`)
	require.NoError(t, err)
	var wg sync.WaitGroup
	made := make(chan int, 4)
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			n, err := s.EnsurePromoCodes(ctx)
			made <- n
			errs <- err
		})
	}
	wg.Wait()
	close(made)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	total := 0
	for n := range made {
		total += n
	}
	require.Equal(t, 40, total)
	require.Equal(t, 46, count(t, db, "promo_codes"))
}

func newClientCmd(partner int64, email string, maxPerDay int) app.CreatePartnerClientCmd {
	return app.CreatePartnerClientCmd{
		PartnerCompanyID: partner, Name: "Ivan O'Brien", Email: email,
		CompanyName: "Client of " + email, Phone: "+79161234567", MaxPerDay: maxPerDay,
	}
}

type outboxRow struct {
	From    string
	To      []string
	Subject string
	Body    string
}

func outbox(t *testing.T, db *pgxpool.Pool) []outboxRow {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT from_addr, to_addrs, subject, body FROM mail_outbox ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		require.NoError(t, rows.Scan(&r.From, &r.To, &r.Subject, &r.Body))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestCreatePartnerClient: the user, its company, its membership, the
// link and the mail are all stored as the contract says, and the answer
// is the company card.
func TestCreatePartnerClient(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 5, 10, 8, 30, 0, 0, time.UTC)}
	s, db := newPartnerService(t, app.Config{MailDeliverable: true, Now: clk.Now})
	p := newPartner(t, s, "Partner")
	before := rowCounts(t, db)

	c, err := s.CreatePartnerClient(ctx, app.CreatePartnerClientCmd{
		PartnerCompanyID: p.CompanyID, Name: "Ivan O'Brien", Email: "Ivan.Client@Example.com",
		CompanyName: "Ivan & Co", Phone: "+79161234567", MaxPerDay: 20,
	})
	require.NoError(t, err)
	card, err := s.Company(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, card, c, "the answer is the company card")
	require.Equal(t, domain.Company{
		ID: c.ID, Name: "Ivan & Co", OwnerID: c.OwnerID, Timezone: "Europe/Moscow", PaymentCurrency: "RUB",
	}, c)

	// The user: login (= email) as given, name, phone, a hashed password.
	var email, name, phone, hash string
	require.NoError(t, db.QueryRow(ctx, `SELECT email, display_name, phone, password_hash FROM users WHERE id = $1`, c.OwnerID).
		Scan(&email, &name, &phone, &hash))
	require.Equal(t, "Ivan.Client@Example.com", email)
	require.Equal(t, "Ivan O'Brien", name)
	require.Equal(t, "+79161234567", phone)
	u, err := s.Me(ctx, c.OwnerID)
	require.NoError(t, err)
	require.Equal(t, "+79161234567", *u.Phone)

	// Its only member, as ADMINISTRATOR; the company's roles are a
	// non-partner's.
	members, err := s.Members(ctx, c.ID)
	require.NoError(t, err)
	require.Len(t, members, 1)
	require.Equal(t, c.OwnerID, members[0].UserID)
	roles, err := s.Roles(ctx, c.ID)
	require.NoError(t, err)
	require.Len(t, roles, 2)
	require.Equal(t, domain.RoleAdministrator, roles[0].SystemType)
	require.Equal(t, roles[0].ID, members[0].RoleID)
	require.NotContains(t, roles[0].Permissions, domain.PermPartnersEdit)

	// A partner-type client of the partner, since the clock's now.
	link, err := s.ClientLink(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, domain.ClientLink{CompanyID: c.ID, PartnerCompanyID: p.CompanyID, ClientType: domain.ClientPartner}, link)
	clients, err := s.PartnerClients(ctx, p.CompanyID)
	require.NoError(t, err)
	require.Len(t, clients, 1)
	require.Equal(t, domain.PartnerClient{CompanyID: c.ID, Name: "Ivan & Co", ClientType: domain.ClientPartner}, withoutTime(clients[0]))
	require.True(t, clients[0].CreatedAt.Equal(clk.Now()))

	// The mail, with the password whose hash is stored.
	mails := outbox(t, db)
	require.Len(t, mails, 1)
	require.Equal(t, "", mails[0].From, "the Sender's default")
	require.Equal(t, []string{"Ivan.Client@Example.com"}, mails[0].To)
	require.Equal(t, "Your Switchboard account", mails[0].Subject)
	m := regexp.MustCompile(`^Login: Ivan\.Client@Example\.com\nPassword: ([A-Za-z0-9]{12})\n$`).FindStringSubmatch(mails[0].Body)
	require.NotNil(t, m, "%q", mails[0].Body)
	require.Equal(t, fmt.Sprintf("Login: Ivan.Client@Example.com\nPassword: %s\n", m[1]), mails[0].Body)
	require.True(t, domain.CheckPassword(hash, m[1]), "the mailed password is the stored one")
	require.NotContains(t, hash, m[1])

	// Exactly one of each, no API key, nothing else.
	after := rowCounts(t, db)
	for table, n := range map[string]int{"users": 1, "companies": 1, "roles": 2, "members": 1, "integrations": 0, "promo_codes": 0, "partner_clients": 1, "mail_outbox": 1} {
		require.Equal(t, before[table]+n, after[table], table)
	}

	// Another client has another password.
	c2, err := s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "second@example.com", 20))
	require.NoError(t, err)
	mails = outbox(t, db)
	require.Len(t, mails, 2)
	require.NotEqual(t, mails[0].Body[strings.Index(mails[0].Body, "Password"):], mails[1].Body[strings.Index(mails[1].Body, "Password"):])
	require.NotEqual(t, c.OwnerID, c2.OwnerID)
}

// TestCreatePartnerClientRefusals: an email a user has (case ignored) is
// 409 26001, a partner that is none 404 8000, and neither writes anything.
func TestCreatePartnerClientRefusals(t *testing.T) {
	ctx := context.Background()
	s, db := newPartnerService(t, app.Config{MailDeliverable: true})
	p := newPartner(t, s, "Partner")
	_, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "Owned", OwnerEmail: "Owner@Example.com"})
	require.NoError(t, err)
	_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "client@example.com", 20))
	require.NoError(t, err)
	plain, err := s.CreateCompany(ctx, app.CreateCompanyCmd{Name: "Plain"})
	require.NoError(t, err)

	before := rowCounts(t, db)
	for _, email := range []string{"owner@example.com", "OWNER@EXAMPLE.COM", "Client@Example.com", "client@example.com"} {
		_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, email, 20))
		e, ok := apierr.FromError(err)
		require.True(t, ok, "%s: %v", email, err)
		require.Equal(t, apierr.UserEmailAlreadyExists.Code, e.Code, email)
		require.Equal(t, 409, e.Status)
	}
	for _, partner := range []int64{plain.Company.ID, 999999, 0} {
		_, err = s.CreatePartnerClient(ctx, newClientCmd(partner, "new@example.com", 20))
		require.EqualValues(t, 8000, apiCode(t, err), "partner %d", partner)
	}
	require.Equal(t, before, rowCounts(t, db))
}

// TestCreatePartnerClientWithoutMail: no way to deliver mail is 503,
// before anything (even the partner) is looked at or written.
func TestCreatePartnerClientWithoutMail(t *testing.T) {
	ctx := context.Background()
	s, db := newPartnerService(t, app.Config{MailDeliverable: false})
	p := newPartner(t, s, "Partner")
	before := rowCounts(t, db)
	for _, cmd := range []app.CreatePartnerClientCmd{
		newClientCmd(p.CompanyID, "new@example.com", 20),
		newClientCmd(999999, "new@example.com", 20),
		newClientCmd(p.CompanyID, "new@example.com", 0),
	} {
		_, err := s.CreatePartnerClient(ctx, cmd)
		e, ok := apierr.FromError(err)
		require.True(t, ok, "%v", err)
		require.Equal(t, apierr.ServiceUnavailable.Code, e.Code)
		require.Equal(t, 503, e.Status)
		require.Contains(t, e.Message, "mail cannot be sent")
	}
	require.Equal(t, before, rowCounts(t, db))
}

// createMany runs n creations for the partner at once (emails
// <prefix><i>@example.com) and answers how many succeeded and the codes
// of the refusals.
func createMany(t *testing.T, s *app.Service, partner int64, prefix string, n, maxPerDay int) (int, []int32) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := s.CreatePartnerClient(context.Background(), newClientCmd(partner, fmt.Sprintf("%s%d@example.com", prefix, i), maxPerDay))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	ok := 0
	var refused []int32
	for err := range errs {
		if err == nil {
			ok++
			continue
		}
		refused = append(refused, apiCode(t, err))
	}
	return ok, refused
}

// TestPartnerClientsDailyCap: with 3 of 5 slots left, exactly 3 of 10
// parallel creations succeed and 7 get 31008; refusals (of either kind)
// take no slot; the cap comes before the email check; other partners'
// clients and operator-made clients of other partners do not count.
func TestPartnerClientsDailyCap(t *testing.T) {
	ctx := context.Background()
	s, db := newPartnerService(t, app.Config{MailDeliverable: true})
	p := newPartner(t, s, "Partner")
	other := newPartner(t, s, "Other")
	for i := range 2 {
		_, err := s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, fmt.Sprintf("early%d@example.com", i), 5))
		require.NoError(t, err)
	}
	_, err := s.CreatePartnerClient(ctx, newClientCmd(other.CompanyID, "others@example.com", 5))
	require.NoError(t, err)

	ok, refused := createMany(t, s, p.CompanyID, "burst", 10, 5)
	require.Equal(t, 3, ok)
	require.Len(t, refused, 7)
	for _, code := range refused {
		require.Equal(t, apierr.PartnerClientsDailyLimitExceeded.Code, code)
	}
	clients, err := s.PartnerClients(ctx, p.CompanyID)
	require.NoError(t, err)
	require.Len(t, clients, 5)
	require.Len(t, outbox(t, db), 6, "a mail per client, none per refusal")

	// At the cap, a taken email is still 31008: the cap comes first.
	_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "early0@example.com", 5))
	require.EqualValues(t, apierr.PartnerClientsDailyLimitExceeded.Code, apiCode(t, err))

	// The 8 refusals took no slot: one more slot is one more client, and
	// a 26001 refusal takes none either.
	_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "Early0@example.com", 7))
	require.EqualValues(t, apierr.UserEmailAlreadyExists.Code, apiCode(t, err))
	_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "sixth@example.com", 6))
	require.NoError(t, err)
	_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "seventh@example.com", 6))
	require.EqualValues(t, apierr.PartnerClientsDailyLimitExceeded.Code, apiCode(t, err))
	_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "seventh@example.com", 7))
	require.NoError(t, err)

	// A cap of 0 refuses all; the other partner has its own count.
	_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "none@example.com", 0))
	require.EqualValues(t, apierr.PartnerClientsDailyLimitExceeded.Code, apiCode(t, err))
	ok, refused = createMany(t, s, other.CompanyID, "other", 6, 5)
	require.Equal(t, 4, ok, "1 of 5 was taken")
	require.Len(t, refused, 2)
}

// TestPartnerClientsUTCDay: the cap counts the clients of the current UTC
// day; the next UTC day starts afresh, whatever the clock's zone.
func TestPartnerClientsUTCDay(t *testing.T) {
	ctx := context.Background()
	msk := time.FixedZone("MSK", 3*3600)
	clk := &clock{t: time.Date(2026, 3, 1, 23, 59, 59, 999_000_000, time.UTC)}
	s, _ := newPartnerService(t, app.Config{MailDeliverable: true, Now: clk.Now})
	p := newPartner(t, s, "Partner")

	// Clients of the day before do not count.
	clk.Set(time.Date(2026, 2, 28, 23, 0, 0, 0, time.UTC))
	_, err := s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "feb@example.com", 2))
	require.NoError(t, err)

	clk.Set(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "a@example.com", 2))
	require.NoError(t, err)
	// 02:59:59.999 in Moscow on the 2nd is still the 1st in UTC.
	clk.Set(time.Date(2026, 3, 2, 2, 59, 59, 999_000_000, msk))
	_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "b@example.com", 2))
	require.NoError(t, err)
	_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "c@example.com", 2))
	require.EqualValues(t, apierr.PartnerClientsDailyLimitExceeded.Code, apiCode(t, err))

	// Midnight UTC (03:00 in Moscow): a new day.
	clk.Set(time.Date(2026, 3, 2, 3, 0, 0, 0, msk))
	_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "c@example.com", 2))
	require.NoError(t, err)
	_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "d@example.com", 2))
	require.NoError(t, err)
	_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "e@example.com", 2))
	require.EqualValues(t, apierr.PartnerClientsDailyLimitExceeded.Code, apiCode(t, err))

	// Back in the 1st (a replica's clock behind): the 2nd's clients do
	// not count toward it either.
	clk.Set(time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC))
	_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "e@example.com", 2))
	require.EqualValues(t, apierr.PartnerClientsDailyLimitExceeded.Code, apiCode(t, err))
	_, err = s.CreatePartnerClient(ctx, newClientCmd(p.CompanyID, "e@example.com", 3))
	require.NoError(t, err)
}

// TestPartnerClientsSameEmailAtOnce: parallel creations of one address
// (any case) by two partners: exactly one user is made, the others are
// 26001, and no partial rows stay.
func TestPartnerClientsSameEmailAtOnce(t *testing.T) {
	ctx := context.Background()
	s, db := newPartnerService(t, app.Config{MailDeliverable: true})
	a := newPartner(t, s, "A")
	b := newPartner(t, s, "B")
	before := rowCounts(t, db)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range 10 {
		partner := a.CompanyID
		if i%2 == 1 {
			partner = b.CompanyID
		}
		email := "same@example.com"
		if i%3 == 0 {
			email = "SAME@example.com"
		}
		wg.Go(func() {
			_, err := s.CreatePartnerClient(ctx, newClientCmd(partner, email, 20))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		if err == nil {
			ok++
			continue
		}
		require.EqualValues(t, apierr.UserEmailAlreadyExists.Code, apiCode(t, err))
	}
	require.Equal(t, 1, ok)
	after := rowCounts(t, db)
	require.Equal(t, before["users"]+1, after["users"])
	require.Equal(t, before["companies"]+1, after["companies"])
	require.Equal(t, before["partner_clients"]+1, after["partner_clients"])
	require.Equal(t, before["mail_outbox"]+1, after["mail_outbox"])
}
