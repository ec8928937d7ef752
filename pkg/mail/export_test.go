package mail

import (
	"crypto/x509"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// NewMailboxAt is a mailbox under key keeping limit mails: tests put their
// redistest prefix in front of MailboxKey and use a small limit.
func NewMailboxAt(rdb redis.UniversalClient, key string, limit int64) *Mailbox {
	return newMailbox(rdb, key, limit)
}

// Trust makes s accept certificates signed by roots (mailtest's).
func (s *SMTP) Trust(roots *x509.CertPool) { s.tlsConfig.RootCAs = roots }

// Target is where s connects and how: "host:port tls=implicit|starttls user=... pass=...".
func (s *SMTP) Target() string {
	mode := "starttls"
	if s.implicitTLS {
		mode = "implicit"
	}
	return fmt.Sprintf("%s:%d tls=%s user=%s pass=%s", s.host, s.port, mode, s.user, s.pass)
}
