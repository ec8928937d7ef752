package app

import "context"

// Companies knows which companies exist: the identity service owns them
// (adapters/identity). Public calls need it not (an API key's company
// exists); operator calls name a company by id and must not write for one
// that does not.
type Companies interface {
	Exists(ctx context.Context, companyID int64) (bool, error)
}
