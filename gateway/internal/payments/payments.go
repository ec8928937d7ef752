// Package payments serves payment providers' server-to-server
// notifications in each provider's own format, which is not the API's
// JSON: Robokassa posts a form (or sends a GET, as its shop is set) to the
// ResultURL and expects the plain text OK<InvId> once the payment is
// applied; any other answer makes it try again later.
//
// The gateway only carries the fields: billing checks the signature before
// it reads anything from them.
package payments

import (
	"io"
	"net/http"
	"net/url"

	"google.golang.org/grpc"

	"switchboard.dev/gateway/internal/httpapi"
	"switchboard.dev/pkg/apierr"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
)

// RobokassaResultPath is the ResultURL to set in the Robokassa shop:
// {public base URL}/payments/v1/robokassa/result.
const RobokassaResultPath = "/payments/v1/robokassa/result"

// maxFormBytes bounds a notification: a few dozen short fields.
const maxFormBytes = 64 << 10

// Register adds the notification routes to mux, served by billing over
// conn.
func Register(mux httpapi.Routes, conn *grpc.ClientConn) error {
	h := handler{billing: billingv1.NewBillingProviderServiceClient(conn)}
	if err := mux.HandlePath(http.MethodPost, RobokassaResultPath, h.robokassa); err != nil {
		return err
	}
	return mux.HandlePath(http.MethodGet, RobokassaResultPath, h.robokassa)
}

type handler struct {
	billing billingv1.BillingProviderServiceClient
}

func (h handler) robokassa(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	values := r.URL.Query()
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxFormBytes+1))
		if err != nil || len(body) > maxFormBytes {
			httpapi.WriteError(w, apierr.BadRequest.Msg("unreadable notification"))
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			httpapi.WriteError(w, apierr.BadRequest.Msg("malformed form"))
			return
		}
		for k, v := range form {
			values[k] = append(values[k], v...)
		}
	}
	fields := make(map[string]string, len(values))
	for k, v := range values {
		if len(v) != 1 {
			// A field given twice could be read one way when signed and
			// another when applied: refused outright.
			httpapi.WriteError(w, apierr.BadRequest.Msg("field %s is given %d times", k, len(v)))
			return
		}
		fields[k] = v[0]
	}
	resp, err := h.billing.ReceiveRobokassaResult(r.Context(), &billingv1.ReceiveRobokassaResultRequest{Fields: fields})
	if err != nil {
		httpapi.WriteError(w, httpapi.APIError(r.Context(), err))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, resp.GetAnswer())
}
