// Package unavailable is the provider side outside test mode until real
// messenger and payment adapters exist: every call that needs the outside
// world answers 503, so nothing pretends to have reached a messenger.
//
// Files: verify.go belongs to the connections core, messenger.go to logins.
package unavailable

// Provider implements app.Verifier and app.Messenger.
type Provider struct{}
