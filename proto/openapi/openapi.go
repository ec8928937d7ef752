// Package openapi holds the API reference documents that `make generate`
// writes from the protos (pkg/openapi, through the protoc plugin
// protoc-gen-switchboard-openapi): public.json, every route of the public
// API, and operator.json, the operator and test-mode (sandbox) routes.
// The gateway serves them; `make check-generate` fails when they are stale.
package openapi

import _ "embed"

//go:embed public.json
var public []byte

//go:embed operator.json
var operator []byte

// Public is the OpenAPI 3.1 document of the public API (/v2).
func Public() []byte { return public }

// Operator is the OpenAPI 3.1 document of the operator (/admin/v1) and
// test-mode (/sandbox/v1) APIs.
func Operator() []byte { return operator }
