package mail_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/mail"
	"switchboard.dev/pkg/mail/mailtest"
)

func TestNewSMTPParsesTheURL(t *testing.T) {
	for url, want := range map[string]string{
		"smtp://mail.example.com":                  "mail.example.com:587 tls=starttls user= pass=",
		"smtps://mail.example.com":                 "mail.example.com:465 tls=implicit user= pass=",
		"smtp://u:p@mail.example.com:25":           "mail.example.com:25 tls=starttls user=u pass=p",
		"smtps://u%40x:p%3Aw%2F@mail.example.com/": "mail.example.com:465 tls=implicit user=u@x pass=p:w/",
		"smtp://only-user@127.0.0.1:2525":          "127.0.0.1:2525 tls=starttls user=only-user pass=",
	} {
		s, err := mail.NewSMTP(url, "noreply@example.com")
		require.NoError(t, err, url)
		require.Equal(t, want, s.Target(), url)
	}
}

func TestNewSMTPValidates(t *testing.T) {
	for _, url := range []string{
		"",
		"mail.example.com:587",
		"http://mail.example.com",
		"smtp://",
		"smtp://user:secret@:25",
		"smtp:mail.example.com",
		"smtp://user:secret@mail.example.com:0",
		"smtp://user:secret@mail.example.com:70000",
		"smtp://user:secret@mail.example.com:port",
		"smtp://user:secret@mail.example.com/path",
		"smtp://user:secret@mail.example.com?tls=off",
		"smtp://user:secret@[::1]:25",
		"smtp://user:secret%zz@mail.example.com",
	} {
		_, err := mail.NewSMTP(url, "noreply@example.com")
		require.Error(t, err, url)
		require.NotContains(t, err.Error(), "secret", "the password stays out of errors")
	}
	for _, from := range []string{"", "noreply", "a@b@c", "Name <>"} {
		_, err := mail.NewSMTP("smtp://mail.example.com", from)
		require.Error(t, err, from)
	}
	_, err := mail.NewSMTP("smtp://mail.example.com", `"Switchboard" <noreply@example.com>`)
	require.NoError(t, err)
}

func TestSMTPSend(t *testing.T) {
	srv := mailtest.Start(t)
	s, err := mail.NewSMTP(srv.URL(), "Fallback <fallback@example.com>")
	require.NoError(t, err)
	require.NoError(t, s.Send(context.Background(), mail.Mail{To: []string{"ann@example.com"},
		Subject: "Line\r\nBcc: eve@example.com", Text: "Hi"}))
	msgs := srv.Messages()
	require.Len(t, msgs, 1)
	require.Equal(t, "fallback@example.com", msgs[0].From, "the transport's address for a mail without one")
	require.Equal(t, []string{"ann@example.com"}, msgs[0].To)
	require.Equal(t, "Line  Bcc: eve@example.com", msgs[0].Subject, "a line break in a subject starts no header")
	require.Empty(t, msgs[0].Header.Get("Bcc"))
	require.Equal(t, "Hi", msgs[0].Text)

	require.Error(t, s.Send(context.Background(), mail.Mail{Subject: "no one"}))
	require.Error(t, s.Send(context.Background(), mail.Mail{To: []string{"not an address"}}))
	require.Len(t, srv.Messages(), 1)
}

func TestSMTPRefusal(t *testing.T) {
	srv := mailtest.Start(t)
	s, err := mail.NewSMTP(srv.URL(), "noreply@example.com")
	require.NoError(t, err)
	srv.FailNext(1, 451)
	err = s.Send(context.Background(), mail.Mail{To: []string{"ann@example.com"}, Subject: "a", Text: "a"})
	require.ErrorContains(t, err, "451")
	require.NoError(t, s.Send(context.Background(), mail.Mail{To: []string{"ann@example.com"}, Subject: "b", Text: "b"}))
	require.Len(t, srv.Messages(), 1)
	require.Equal(t, "b", srv.Messages()[0].Subject)
	require.Equal(t, 1, srv.Refused())
}

func TestSMTPWrongPassword(t *testing.T) {
	srv := mailtest.Start(t)
	url := strings.Replace(srv.URL(), "mailer:", "mailer:wrong", 1)
	s, err := mail.NewSMTP(url, "noreply@example.com")
	require.NoError(t, err)
	err = s.Send(context.Background(), mail.Mail{To: []string{"ann@example.com"}, Subject: "a", Text: "a"})
	require.ErrorContains(t, err, "535")
	require.Empty(t, srv.Messages())
}

func TestSMTPWithoutCredentials(t *testing.T) {
	srv := mailtest.Start(t, mailtest.Anonymous())
	require.NotContains(t, srv.URL(), "@")
	s, err := mail.NewSMTP(srv.URL(), "noreply@example.com")
	require.NoError(t, err)
	require.NoError(t, s.Send(context.Background(), mail.Mail{To: []string{"ann@example.com"}, Subject: "a", Text: "a"}))
	require.Len(t, srv.Messages(), 1)

	// A server that wants a login refuses a client without one.
	authed := mailtest.Start(t)
	s, err = mail.NewSMTP("smtp://"+authed.Addr(), "noreply@example.com")
	require.NoError(t, err)
	require.Error(t, s.Send(context.Background(), mail.Mail{To: []string{"ann@example.com"}, Subject: "a", Text: "a"}))
	require.Empty(t, authed.Messages())
}

// TestSMTPStartTLS: an smtp:// server offering STARTTLS is talked to
// encrypted; one whose certificate does not verify is not talked to in
// clear instead.
func TestSMTPStartTLS(t *testing.T) {
	srv := mailtest.Start(t, mailtest.STARTTLS())
	require.True(t, strings.HasPrefix(srv.URL(), "smtp://"))
	s, err := mail.NewSMTP(srv.URL(), "noreply@example.com")
	require.NoError(t, err)
	m := mail.Mail{To: []string{"ann@example.com"}, Subject: "a", Text: "a"}
	require.Error(t, s.Send(context.Background(), m), "an unknown certificate")
	require.Empty(t, srv.Messages())

	s.Trust(srv.RootCAs())
	require.NoError(t, s.Send(context.Background(), m))
	require.Len(t, srv.Messages(), 1)
	require.True(t, srv.Messages()[0].TLS)
}

func TestSMTPImplicitTLS(t *testing.T) {
	srv := mailtest.Start(t, mailtest.ImplicitTLS())
	require.True(t, strings.HasPrefix(srv.URL(), "smtps://"))
	s, err := mail.NewSMTP(srv.URL(), "noreply@example.com")
	require.NoError(t, err)
	s.Trust(srv.RootCAs())
	require.NoError(t, s.Send(context.Background(), mail.Mail{To: []string{"ann@example.com"}, Subject: "a", Text: "a"}))
	require.Len(t, srv.Messages(), 1)
	require.True(t, srv.Messages()[0].TLS)
}

// TestSMTPSendHonoursTheContext: a server that accepts the connection
// and says nothing fails the send when its context ends, not after
// SMTPTimeout.
func TestSMTPSendHonoursTheContext(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		select {
		case c := <-accepted:
			_ = c.Close()
		default:
		}
	})
	s, err := mail.NewSMTP("smtp://"+l.Addr().String(), "noreply@example.com")
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Send(ctx, mail.Mail{To: []string{"ann@example.com"}, Subject: "a", Text: "a"}) }()
	var conn net.Conn
	select {
	case conn = <-accepted:
		accepted <- conn // for the cleanup
	case <-time.After(waitFor):
		t.Fatal("no connection")
	}
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(mail.SMTPTimeout / 2):
		t.Fatal("Send did not return when its context ended")
	}

	// Ended before it began: nothing is sent.
	srv := mailtest.Start(t)
	s, err = mail.NewSMTP(srv.URL(), "noreply@example.com")
	require.NoError(t, err)
	require.Error(t, s.Send(ctx, mail.Mail{To: []string{"ann@example.com"}, Subject: "a", Text: "a"}))
	require.Empty(t, srv.Messages())
}
