package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	netmail "net/mail"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// SMTPTimeout bounds one SMTP conversation: connecting, and each command
// after it.
const SMTPTimeout = 30 * time.Second

// SMTP is a Transport sending through an SMTP server (a relay, a mail
// provider's submission port), one connection per mail.
type SMTP struct {
	host        string
	port        int
	implicitTLS bool
	user, pass  string
	from        string
	timeout     time.Duration
	tlsConfig   *tls.Config
}

// NewSMTP makes an SMTP transport from a URL:
//
//   - smtp://[user:pass@]host[:port]: STARTTLS when the server offers it
//     (opportunistic: a server that does not is talked to in plain text;
//     one that offers it with a certificate that does not verify fails),
//     port 587 by default;
//   - smtps://[user:pass@]host[:port]: implicit TLS, port 465 by default.
//
// User and password (URL-escaped) log in with the strongest mechanism the
// server offers among SCRAM-SHA-256/-1, PLAIN and LOGIN (then CRAM-MD5
// and the others). PLAIN and LOGIN are refused on a connection that is
// neither encrypted nor to localhost: a password is never sent in clear
// over the network.
//
// from is the sender's address of a mail without one ("addr@host" or
// "Name <addr@host>").
func NewSMTP(rawURL, from string) (*SMTP, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url's error quotes the URL, password included: keep only why.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("mail: smtp url: %w", err)
	}
	s := &SMTP{timeout: SMTPTimeout}
	switch u.Scheme {
	case "smtp":
		s.port = gomail.DefaultPortTLS
	case "smtps":
		s.port, s.implicitTLS = gomail.DefaultPortSSL, true
	default:
		return nil, fmt.Errorf("mail: smtp url %s: scheme must be smtp or smtps", u.Redacted())
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return nil, fmt.Errorf("mail: smtp url %s: no host", u.Redacted())
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("mail: smtp url %s: only [user:pass@]host[:port] is understood", u.Redacted())
	}
	s.host = u.Hostname()
	if strings.Contains(s.host, ":") {
		// go-mail v0.8.1 joins host and port as "%s:%d", without brackets.
		return nil, fmt.Errorf("mail: smtp url %s: an IPv6 address is not supported, use a host name", u.Redacted())
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("mail: smtp url %s: bad port", u.Redacted())
		}
		s.port = n
	}
	if u.User != nil {
		s.user = u.User.Username()
		s.pass, _ = u.User.Password()
	}
	if _, err := netmail.ParseAddress(from); err != nil {
		return nil, fmt.Errorf("mail: smtp sender address %q: %w", from, err)
	}
	s.from = from
	s.tlsConfig = &tls.Config{ServerName: s.host, MinVersion: tls.VersionTLS12}
	return s, nil
}

// Send implements Transport: m as a text/plain UTF-8 message
// (quoted-printable), from m.From or else the transport's address. The
// message's last line ends with a line break, as SMTP wants, whether or
// not m.Text did.
func (s *SMTP) Send(ctx context.Context, m Mail) error {
	msg := gomail.NewMsg(gomail.WithCharset(gomail.CharsetUTF8), gomail.WithNoDefaultUserAgent())
	from := m.From
	if from == "" {
		from = s.from
	}
	if err := msg.From(from); err != nil {
		return fmt.Errorf("smtp: sender %q: %w", from, err)
	}
	if len(m.To) == 0 {
		return errors.New("smtp: no recipient")
	}
	if err := msg.To(m.To...); err != nil {
		return fmt.Errorf("smtp: recipients: %w", err)
	}
	msg.Subject(oneLine(m.Subject))
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)

	// go-mail heeds ctx only while connecting; past that, each command
	// waits up to its timeout. Closing the connection when ctx ends makes
	// a stopping Sender, or one past its send timeout, give up at once.
	var mu sync.Mutex
	var stops []func() bool
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, stop := range stops {
			stop()
		}
	}()
	dial := func(dctx context.Context, network, addr string) (net.Conn, error) {
		d := &net.Dialer{}
		var conn net.Conn
		var err error
		if s.implicitTLS {
			conn, err = (&tls.Dialer{NetDialer: d, Config: s.tlsConfig}).DialContext(dctx, network, addr)
		} else {
			conn, err = d.DialContext(dctx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		mu.Lock()
		stops = append(stops, context.AfterFunc(ctx, func() { _ = conn.Close() }))
		mu.Unlock()
		return conn, nil
	}

	// A go-mail Client keeps per-conversation state and is not for
	// concurrent use: one per mail.
	c, err := gomail.NewClient(s.host, s.options(dial)...)
	if err != nil {
		return fmt.Errorf("smtp: %w", err)
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		return fmt.Errorf("smtp %s:%d: %w", s.host, s.port, err)
	}
	return nil
}

func (s *SMTP) options(dial gomail.DialContextFunc) []gomail.Option {
	opts := []gomail.Option{gomail.WithPort(s.port), gomail.WithTimeout(s.timeout),
		gomail.WithDialContextFunc(dial), gomail.WithTLSConfig(s.tlsConfig)}
	if s.implicitTLS {
		// dial speaks TLS itself (go-mail does only without a dial
		// function); WithSSL keeps go-mail from trying STARTTLS on top.
		opts = append(opts, gomail.WithSSL())
	} else {
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if s.user != "" || s.pass != "" {
		opts = append(opts,
			gomail.WithUsername(s.user), gomail.WithPassword(s.pass),
			// The first the server offers; if none, go-mail picks the
			// strongest it offers among those safe on this connection.
			gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthSCRAMSHA256PLUS, gomail.SMTPAuthSCRAMSHA256,
				gomail.SMTPAuthSCRAMSHA1PLUS, gomail.SMTPAuthSCRAMSHA1, gomail.SMTPAuthPlain, gomail.SMTPAuthLogin))
	}
	return opts
}

// oneLine folds line breaks and other control characters into spaces: a
// subject is one header line, and a line break in it would start another
// header.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
