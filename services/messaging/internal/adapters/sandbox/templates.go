package sandbox

import (
	"context"

	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

var _ app.TemplateProvider = (*Messenger)(nil)

// SubmitTemplate implements app.TemplateProvider: the sandbox provider
// takes every template the platform has validated into moderation; its
// verdict comes later, through POST /sandbox/v1/waba/{connection_id}/
// templates/{name}/status (design/test-mode.md).
func (*Messenger) SubmitTemplate(context.Context, app.Connection, domain.BusinessTemplate) error {
	return nil
}

// DeleteTemplate implements app.TemplateProvider: the sandbox provider
// forgets the template.
func (*Messenger) DeleteTemplate(context.Context, app.Connection, string) error { return nil }
