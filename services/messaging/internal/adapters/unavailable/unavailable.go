// Package unavailable is the messenger side outside test mode until real
// provider adapters exist: every call is 503, never a made-up answer.
package unavailable

import (
	"context"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// Messenger implements app.Messenger.
type Messenger struct{}

var _ app.Messenger = Messenger{}

// ResolvePerson implements app.Messenger.
func (Messenger) ResolvePerson(context.Context, app.Connection, app.Identifiers) (app.Person, error) {
	return app.Person{}, apierr.ServiceUnavailable.Msg("no messenger provider is configured for this connection")
}

// Send implements app.Messenger: the send fails for good.
func (Messenger) Send(context.Context, app.Connection, domain.Chat, domain.Message) (app.Sent, error) {
	return app.Sent{}, &app.SendError{Type: domain.ErrGeneric, Text: "no messenger provider is configured for this connection"}
}

var _ app.TemplateProvider = Messenger{}

// SubmitTemplate implements app.TemplateProvider: 503, nothing is stored.
func (Messenger) SubmitTemplate(context.Context, app.Connection, domain.BusinessTemplate) error {
	return apierr.ServiceUnavailable.Msg("no business provider is configured for this connection")
}

// DeleteTemplate implements app.TemplateProvider: 503, nothing changes.
func (Messenger) DeleteTemplate(context.Context, app.Connection, string) error {
	return apierr.ServiceUnavailable.Msg("no business provider is configured for this connection")
}
