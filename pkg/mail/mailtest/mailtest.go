// Package mailtest runs an SMTP server inside a test process
// (github.com/emersion/go-smtp), to test what sends mail through
// mail.NewSMTP: it keeps every message it accepts, decoded for
// assertions, and can be told to refuse messages, to test retries.
//
// The server listens on 127.0.0.1 and requires AUTH PLAIN with the user
// and password of its URL (allowed without TLS, as on localhost the
// client allows it too), unless started Anonymous. It offers no TLS
// unless started with STARTTLS or ImplicitTLS, then with a self-signed
// certificate for 127.0.0.1 that RootCAs trusts.
package mailtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// User and Password are the credentials the server accepts.
const (
	User     = "mailer"
	Password = "s3cret:p@ss"
)

// Message is one message the server accepted.
type Message struct {
	// From and To are the envelope's (MAIL FROM, RCPT TO).
	From string
	To   []string
	// Data is the message as received: headers and encoded body.
	Data []byte
	// Subject is the decoded Subject header.
	Subject string
	// Text is the decoded text/plain body (the first text/plain part of
	// a multipart one), line breaks as "\n", without the final line
	// break every message ends with (so a text sent without one comes
	// back exact; one sent with one comes back without it).
	Text string
	// Header is the message's header, undecoded.
	Header netmail.Header
	// TLS tells whether the message came over an encrypted connection.
	TLS bool
	// DecodeErr is why Subject or Text could not be decoded, if so.
	DecodeErr error
}

// Option shapes a Server.
type Option func(*Server)

// STARTTLS makes the server offer STARTTLS.
func STARTTLS() Option { return func(s *Server) { s.tlsMode = tlsStart } }

// ImplicitTLS makes the server speak TLS from the start (smtps).
func ImplicitTLS() Option { return func(s *Server) { s.tlsMode = tlsImplicit } }

// Anonymous makes the server take mail without AUTH; its URL then has no
// credentials.
func Anonymous() Option { return func(s *Server) { s.anonymous = true } }

type tlsMode int

const (
	tlsNone tlsMode = iota
	tlsStart
	tlsImplicit
)

// Server is a running SMTP server.
type Server struct {
	addr      string
	tlsMode   tlsMode
	anonymous bool
	roots     *x509.CertPool

	mu       sync.Mutex
	msgs     []Message
	failCode int
	failLeft int // messages still to refuse; < 0: all
	refused  int
}

// Start runs a server until the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{}
	for _, o := range opts {
		o(s)
	}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{srv: s, conn: c}, nil
	}))
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	srv.MaxMessageBytes = 10 << 20
	srv.ErrorLog = log.New(io.Discard, "", 0)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mailtest: listen: %v", err)
	}
	if s.tlsMode != tlsNone {
		cert, roots, err := selfSigned()
		if err != nil {
			_ = l.Close()
			t.Fatalf("mailtest: certificate: %v", err)
		}
		s.roots = roots
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if s.tlsMode == tlsImplicit {
			l = tls.NewListener(l, cfg)
		} else {
			srv.TLSConfig = cfg
		}
	}
	s.addr = l.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		// Close misses a listener that Serve has not registered yet.
		_ = l.Close()
		<-done
	})
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// URL is the server's address for mail.NewSMTP:
// smtp://mailer:...@127.0.0.1:port (smtps:// with ImplicitTLS, no
// credentials when Anonymous).
func (s *Server) URL() string {
	u := "smtp://"
	if s.tlsMode == tlsImplicit {
		u = "smtps://"
	}
	if !s.anonymous {
		u += url.UserPassword(User, Password).String() + "@"
	}
	return u + s.addr
}

// RootCAs trusts the server's certificate (nil without TLS).
func (s *Server) RootCAs() *x509.CertPool { return s.roots }

// Messages are the messages accepted so far, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Fail makes the server refuse every message, at the end of DATA, with
// the SMTP reply code (451: try again later; 554: rejected) until
// Recover.
func (s *Server) Fail(code int) { s.FailNext(-1, code) }

// FailNext makes the server refuse the next n messages with code; n < 0
// refuses all of them until Recover.
func (s *Server) FailNext(n, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failCode, s.failLeft = code, n
}

// Recover makes the server accept messages again.
func (s *Server) Recover() { s.FailNext(0, 0) }

// Refused is how many messages the server has refused.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// take records a message, or answers the refusal it was told to give.
func (s *Server) take(m Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failLeft != 0 {
		if s.failLeft > 0 {
			s.failLeft--
		}
		s.refused++
		return &smtp.SMTPError{Code: s.failCode, EnhancedCode: smtp.EnhancedCodeNotSet,
			Message: "mailtest: refused as told"}
	}
	s.msgs = append(s.msgs, m)
	return nil
}

type session struct {
	srv    *Server
	conn   *smtp.Conn
	authed bool
	from   string
	to     []string
}

func (x *session) AuthMechanisms() []string {
	if x.srv.anonymous {
		return nil
	}
	return []string{sasl.Plain}
}

func (x *session) Auth(mech string) (sasl.Server, error) {
	if mech != sasl.Plain || x.srv.anonymous {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if (identity != "" && identity != username) || username != User || password != Password {
			return smtp.ErrAuthFailed
		}
		x.authed = true
		return nil
	}), nil
}

func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	if !x.authed && !x.srv.anonymous {
		return smtp.ErrAuthRequired
	}
	x.from = from
	return nil
}

func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.to = append(x.to, to)
	return nil
}

func (x *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m := Message{From: x.from, To: append([]string(nil), x.to...), Data: data}
	_, m.TLS = x.conn.TLSConnectionState()
	m.Header, m.Subject, m.Text, m.DecodeErr = decode(data)
	return x.srv.take(m)
}

func (x *session) Reset() { x.from, x.to = "", nil }

func (x *session) Logout() error { return nil }

// decode reads the subject and the text of a message.
func decode(data []byte) (h netmail.Header, subject, text string, err error) {
	msg, err := netmail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return nil, "", "", fmt.Errorf("parse: %w", err)
	}
	h = msg.Header
	dec := new(mime.WordDecoder)
	if subject, err = dec.DecodeHeader(h.Get("Subject")); err != nil {
		return h, "", "", fmt.Errorf("subject: %w", err)
	}
	text, err = textPart(h.Get("Content-Type"), h.Get("Content-Transfer-Encoding"), msg.Body)
	return h, subject, text, err
}

func textPart(contentType, encoding string, body io.Reader) (string, error) {
	mediaType, params := "text/plain", map[string]string{}
	if contentType != "" {
		var err error
		if mediaType, params, err = mime.ParseMediaType(contentType); err != nil {
			return "", fmt.Errorf("content type: %w", err)
		}
	}
	if strings.HasPrefix(mediaType, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if errors.Is(err, io.EOF) {
				return "", errors.New("no text/plain part")
			}
			if err != nil {
				return "", fmt.Errorf("multipart: %w", err)
			}
			ct := p.Header.Get("Content-Type")
			if ct == "" || strings.HasPrefix(strings.ToLower(ct), "text/plain") ||
				strings.HasPrefix(strings.ToLower(ct), "multipart/") {
				return textPart(ct, p.Header.Get("Content-Transfer-Encoding"), p)
			}
		}
	}
	if mediaType != "text/plain" {
		return "", fmt.Errorf("content type %s, not text/plain", mediaType)
	}
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, body)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return "", fmt.Errorf("body: %w", err)
	}
	return strings.TrimSuffix(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n"), nil
}

// selfSigned makes a certificate for 127.0.0.1 and localhost and a pool
// trusting it.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mailtest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots, nil
}
