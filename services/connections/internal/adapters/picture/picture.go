// Package picture checks a WABA profile picture address the way the
// business platform will when it fetches it: a public http(s) address
// answering 200 with a JPEG or PNG of at most 5 MB.
//
// The address comes from a client, so fetching it is a request the
// platform makes on the client's behalf into whatever network the address
// names. Unless private targets are allowed (local development and tests),
// every connection, redirects included, is refused when the resolved
// address is loopback, private, link-local or otherwise not public. The
// check runs on the dialled address itself, not on an earlier lookup, so a
// name that resolves differently the second time gains nothing.
package picture

import (
	"context"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"time"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/netguard"
	"switchboard.dev/services/connections/internal/app"
)

const (
	// MaxBytes is the largest picture accepted (spec 8: 5 MB).
	MaxBytes = 5 << 20
	// Timeout bounds the whole fetch, redirects and body included.
	Timeout = 10 * time.Second
	// MaxRedirects is how many redirects are followed.
	MaxRedirects = 3
)

// Fetcher implements app.PictureFetcher.
type Fetcher struct {
	client       *http.Client
	allowPrivate bool
}

var _ app.PictureFetcher = (*Fetcher)(nil)

// New makes a fetcher; allowPrivate lets it reach private and loopback
// addresses (development and tests only).
func New(allowPrivate bool) *Fetcher {
	f := &Fetcher{allowPrivate: allowPrivate}
	dialer := &net.Dialer{Timeout: Timeout, Control: netguard.DialControl(allowPrivate)}
	f.client = &http.Client{
		Timeout: Timeout,
		Transport: &http.Transport{
			// No proxy: a proxy would dial the target itself, past the
			// address check.
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   Timeout,
			ResponseHeaderTimeout: Timeout,
			MaxIdleConns:          10,
			IdleConnTimeout:       30 * time.Second,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > MaxRedirects {
				return notAllowed("the profile picture url redirects more than %d times", MaxRedirects)
			}
			return checkURL(req.URL)
		},
	}
	return f
}

func notAllowed(format string, args ...any) *apierr.Error {
	return apierr.WabaProfilePictureURLNotAllowed.Msg(format, args...)
}

func tooLarge() *apierr.Error {
	return apierr.WabaProfilePictureTooLarge.Msg("the profile picture is larger than %d MB", MaxBytes>>20)
}

// checkURL accepts absolute http(s) addresses.
func checkURL(u *url.URL) error {
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Hostname() == "" {
		return notAllowed("the profile picture url must be an absolute https address")
	}
	return nil
}

// CheckPicture implements app.PictureFetcher.
func (f *Fetcher) CheckPicture(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return notAllowed("the profile picture url is not a url")
	}
	if err := checkURL(u); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return notAllowed("the profile picture url is not a url")
	}
	req.Header.Set("Accept", "image/jpeg, image/png")
	resp, err := f.client.Do(req)
	if err != nil {
		return fetchError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return notAllowed("the profile picture url answered %d, not 200", resp.StatusCode)
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || (mt != "image/jpeg" && mt != "image/png") {
		return notAllowed("the profile picture must be a JPEG or PNG image, not %q", resp.Header.Get("Content-Type"))
	}
	if resp.ContentLength > MaxBytes {
		return tooLarge()
	}
	// The length header may be absent or wrong: count what arrives, and
	// stop one byte past the limit.
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, MaxBytes+1))
	if n > MaxBytes {
		return tooLarge()
	}
	if err != nil {
		return fetchError(err)
	}
	return nil
}

// fetchError is the 29005 of a fetch that failed: a refused address, a
// refused redirect, or an address that did not answer.
func fetchError(err error) error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	if errors.Is(err, netguard.ErrNotPublic) {
		return notAllowed("the profile picture url must point at a public address")
	}
	return notAllowed("the profile picture url could not be fetched")
}
