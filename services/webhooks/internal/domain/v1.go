package domain

// CompanyConnection names a connection with its company.
type CompanyConnection struct {
	CompanyID, ConnectionID int64
}

// IntegrationTarget is a v1 webhook integration that events of one
// connection go to: every kind, signed with its secret.
type IntegrationTarget struct {
	CompanyID, ConnectionID, IntegrationID int64
	URL, Secret                            string
}

// IntegrationEventTypes are the kinds a v1 webhook integration gets: spec
// 6's five, every one (waba_templates.status_changed is v2's only).
var IntegrationEventTypes = EventTypes[:5]
