package openapi

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	"switchboard.dev/pkg/apierr"
)

// The file routes are streams: grpc-gateway cannot route them, so the
// gateway serves them with handlers of its own (gateway/internal/files),
// and their protos carry no google.api.http. They are described here,
// next to the RPCs they pipe into; keep the paths in step with
// gateway/internal/files (uploadPattern, downloadPattern).
var streamed = map[protoreflect.FullName]struct{ verb, path string }{
	"switchboard.messaging.v1.FilesService.UploadFile":       {"POST", "/v2/companies/{company_id}/files"},
	"switchboard.messaging.v1.FileLinksService.DownloadFile": {"GET", "/files/{token}"},
}

// streamedOperation describes a file route.
func (g *gen) streamedOperation(rt route) (map[string]any, error) {
	text := comment(rt.method)
	op := map[string]any{
		"operationId": g.uniqueID(string(rt.method.Name())),
		"tags":        []any{sectionTitle(rt.section)},
		"x-rpc":       string(rt.method.FullName()),
		"summary":     operationSummary(rt.method, text),
		"description": text,
		"security":    g.security(rt),
	}
	var errs []apierr.Def
	if rt.method.Name() == "UploadFile" {
		op["parameters"] = []any{map[string]any{"name": "company_id", "in": "path", "required": true,
			"schema": map[string]any{"type": "integer", "format": "int64", "examples": []any{sampleID("company")}}}}
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"multipart/form-data": map[string]any{
			"schema": map[string]any{"type": "object", "required": []any{"file"}, "properties": map[string]any{
				"file": map[string]any{"type": "string", "contentMediaType": "application/octet-stream",
					"description": "The file, up to 100 MiB; its part's filename and Content-Type are kept."}}}}}}
		op["responses"] = map[string]any{"200": map[string]any{"description": "The stored file and its link.",
			"content": map[string]any{"application/json": map[string]any{"schema": g.ref(rt.method.Output(), false)}}}}
		errs = []apierr.Def{apierr.Unauthorized, apierr.Forbidden, apierr.NotFound, apierr.PayloadTooLarge,
			apierr.RequestValidation, apierr.TooManyRequests, apierr.Internal}
	} else {
		op["parameters"] = []any{map[string]any{"name": "token", "in": "path", "required": true,
			"schema":      map[string]any{"type": "string", "examples": []any{sampleFileToken}},
			"description": "The token of the link an upload answered."}}
		op["responses"] = map[string]any{"200": map[string]any{
			"description": "The file's bytes, with its Content-Type and Content-Length.",
			"content":     map[string]any{"*/*": map[string]any{"schema": map[string]any{"type": "string", "contentMediaType": "application/octet-stream"}}}}}
		errs = []apierr.Def{apierr.NotFound, apierr.Internal}
	}
	g.errorResponses(op["responses"].(map[string]any), errs)
	return op, nil
}
