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
