// Package httpapi is the gateway's JSON contract: how proto messages become
// the API's JSON and back, how query strings fill requests, how errors are
// written, and how the grpc-gateway mux is set up to do all of that.
//
// Use NewServeMux to build the mux, register the generated gateway handlers
// on it, and serve Handler(mux). The gateway registers through a Router
// (NewRouter): the same mux, with an index that hands each request to the
// route the mux would pick without trying every pattern in turn.
//
// # JSON
//
// Marshaler walks protoreflect instead of using protojson: proto field names
// (snake_case; an explicit json_name wins), fields in declaration order,
// 64-bit integers as JSON numbers, null for every unset field with presence,
// [] and {} for empty repeated and map fields, enum values as their
// (switchboard.api.v1.json) string (null without one), timestamps as
// 2006-01-02T15:04:05.000000Z, durations as seconds, wrappers as their plain
// value or null, google.protobuf.Struct/Value/ListValue as plain JSON, and
// google.protobuf.Empty as no body at all (a 204, see NoContentForEmpty).
// Reading is the same walk backwards, strict about types and lenient about
// unknown fields.
//
// # Request errors
//
// Every error in reading a request becomes a 422 REQUEST_VALIDATION_ERROR
// whose detail.errors[] items are {location, message, type}, shaped like
// pydantic's:
//
//   - location starts with "path", "query" or "body". Body locations go on
//     with the JSON field names as the client wrote them and list indexes
//     (["body","owner","age"], ["body","co_owners",1,"age"], ["body",2] for
//     an element of a bare-array body, ["body","counters","k"] for a map
//     value). Query locations are ["query", key] with the key as written
//     (dotted for nested fields: ["query","filter.min_count"]), plus the
//     index for a repeated key (["query","kinds",1]). Path locations are
//     ["path", name]. Malformed JSON is ["body"].
//     A malformed query string is ["query"]; a bad grpc-timeout header
//     ["header","grpc-timeout"].
//   - type follows pydantic: the *_type types are for a JSON value of the
//     wrong JSON type, the *_parsing types for a path or query string that
//     does not parse. json_invalid; missing (a path parameter);
//     int_type, int_parsing, int_from_float (a JSON number with a fractional
//     part; 1.0 and 1e2 are integers); float_type, float_parsing (also NaN,
//     Inf, hex); bool_type (only true/false in JSON), bool_parsing (only
//     true/false/1/0, any case, in a query); string_type, string_unicode
//     (a query string that is not UTF-8); string_nul (a string holding
//     U+0000, which PostgreSQL cannot store: refused wherever it is, a body
//     value, a key of a free-form object, a query value; other control
//     characters are stored as sent); bytes_type, base64_decode;
//     list_type; dict_type; enum (message "Input should be 'a', 'b' or
//     'c'", listing the JSON strings); datetime_type, datetime_parsing (RFC
//     3339); less_than_equal and greater_than_equal (a number outside its
//     type's range, e.g. "Input should be less than or equal to
//     2147483647"); value_error (two members of one oneof, a malformed
//     query string).
//   - Only the first error is reported: body fields in declaration order,
//     query keys in sorted order.
//
// The rules the protos declare are checked by the services (pkg/validate),
// in the same words. Whether a field was sent at all is known only here:
// SentEmptyInterceptor tells the service which fields the client sent
// empty, so that a field left out is "Field required" and one sent ""
// breaks its rule (sent.go).
//
// # Bounds and the shape of a body
//
// A body must be UTF-8, with no \u escape of a lone UTF-16 surrogate
// (encoding/json would store U+FFFD instead: else 422 json_invalid at
// ["body"]), and its arrays
// and objects nest at most MaxJSONDepth (32) levels (else 422 value_error at
// ["body"]). A body over MaxBodyBytes (1 MiB) is 413 PAYLOAD_TOO_LARGE with
// detail {"max_bytes":1048576}. When the whole request is the body
// (body: "*"), an empty body or null is no body: every field unset. When
// the body is one field (body: "tag_ids", a bare array), it is that field's
// value and required: empty or null is 422 missing at ["body"], so only []
// clears a list. The Content-Type is not looked at: every body is JSON, and
// no form body is ever parsed.
//
// # Paths
//
// Handler answers 404 NOT_FOUND, before routing, for a path that is not
// UTF-8 or holds a control character, an empty segment ("//") or a "." or
// ".." segment (also when written %2e): such a path is never cleaned and
// redirected, which could land on another resource. Health endpoints are
// routes of the same mux, so no net/http ServeMux cleans paths in front.
//
// grpc-gateway turns a decoder or query parser error into
// status.Errorf(codes.InvalidArgument, "%v", err), so a *DecodeError renders
// itself as a fixed prefix plus JSON (see DecodeError.Error) that
// ErrorHandler parses back. Path parameters are parsed by the generated code
// itself; ErrorHandler recognises its "type mismatch, parameter: %s, error:
// %v" and "missing parameter %s" messages and re-derives the type from the
// request message's field. The generated code parses path integers with
// strconv base 0, so /companies/0x10, /companies/010 (octal: 8) and
// /companies/1_000 are accepted as 16, 8 and 1000; that is grpc-gateway's
// behaviour and is left alone.
//
// # Route precedence in grpc-gateway v2.27.3
//
// runtime.ServeMux keeps, per HTTP method, a plain list of handlers, and
// ServeMux.Handle prepends: the route registered last is tried first, and
// the first pattern that matches wins. There is no ranking of literal
// segments over variables. The generated RegisterXxxHandlerClient registers
// RPCs in proto declaration order (and each RPC's additional_bindings after
// its main binding), so among the routes of one service the one declared
// last in the .proto wins, and among services the one registered last wins.
// A literal route such as GET /v2/companies/{company_id}/integrations/types
// must therefore be declared AFTER the variable route
// /v2/companies/{company_id}/integrations/{integration_id}; otherwise
// "types" is bound to the int64 integration_id and the request fails with a
// 422 path type error instead of reaching the literal route (a matched
// pattern is never abandoned when its parameters do not parse).
//
// The Router keeps this order exactly: its table lists every registration's
// templates latest first, and the request goes to the ServeMux of the first
// registration with a matching template, which orders that registration's
// own routes as above (TestRouterPicksTheMuxRoute in gateway/internal/gateway
// compares its choice with the whole mux's for every route).
//
// A request whose path matches a route of another method only is a 405 for
// grpc-gateway; like an unknown path it is answered 404 here.
//
// Path templates cannot end with "/", so Handler strips one trailing slash
// before routing: /v2/companies/1/members/ is served as
// /v2/companies/1/members, and GET .../connections/ never reaches
// .../connections/{connection_id} with an empty id.
package httpapi
