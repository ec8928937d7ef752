package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/stretchr/testify/require"

	"switchboard.dev/proto/openapi"
)

// Every answer an e2e test receives is checked against the API reference
// (proto/openapi, generated from the protos): its status must be one the
// operation documents and its body must match the documented schema, so a
// field the code sends that the document lacks, or the other way round,
// fails the test that saw it. Answers of paths the documents do not have
// (unknown addresses the tests ask on purpose, the file routes the gateway
// serves itself) are not checked, and are listed after the run; any such
// answer but a 404 fails.

var reference struct {
	once             sync.Once
	public, operator checker
	err              error

	mu           sync.Mutex
	undocumented map[string]int
}

// checker is one document's validator, and its paths whose variables
// span segments (x-multi-segment-variables on their operations), which
// OpenAPI cannot match.
type checker struct {
	validator.Validator
	multi []multiSegment
}

// multiSegment rewrites a path a {path=**} route serves into one its
// one-segment OpenAPI form matches: the spanned segments become one.
type multiSegment struct {
	prefix *regexp.Regexp
}

func multiSegments(spec []byte) ([]multiSegment, error) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(spec, &doc); err != nil {
		return nil, err
	}
	var out []multiSegment
	for path, item := range doc.Paths {
		// Every operation of the path marks the same variables; one
		// rewrite per variable serves them all.
		vars := map[string]bool{}
		for _, raw := range item {
			var op struct {
				Vars []string `json:"x-multi-segment-variables"`
			}
			if json.Unmarshal(raw, &op) != nil {
				continue // not an operation
			}
			for _, v := range op.Vars {
				vars[v] = true
			}
		}
		for v := range vars {
			before, _, _ := strings.Cut(path, "{"+v+"}")
			re := regexp.MustCompile(`\\\{[^}]*\\\}`).ReplaceAllString(regexp.QuoteMeta(before), "[^/]+")
			out = append(out, multiSegment{prefix: regexp.MustCompile("^(" + re + ")[^/]+/.+$")})
		}
	}
	return out, nil
}

func loadReference() error {
	reference.once.Do(func() {
		build := func(spec []byte) (checker, error) {
			doc, err := libopenapi.NewDocument(spec)
			if err != nil {
				return checker{}, err
			}
			v, errs := validator.NewValidator(doc)
			if len(errs) > 0 {
				return checker{}, errs[0]
			}
			if ok, verrs := v.ValidateDocument(); !ok {
				var msgs []string
				for _, e := range verrs {
					msgs = append(msgs, e.Error())
				}
				return checker{}, fmt.Errorf("the document is not valid OpenAPI: %s", strings.Join(msgs, "; "))
			}
			multi, err := multiSegments(spec)
			if err != nil {
				return checker{}, err
			}
			return checker{Validator: v, multi: multi}, nil
		}
		if reference.public, reference.err = build(openapi.Public()); reference.err != nil {
			reference.err = fmt.Errorf("public.json: %w", reference.err)
			return
		}
		if reference.operator, reference.err = build(openapi.Operator()); reference.err != nil {
			reference.err = fmt.Errorf("operator.json: %w", reference.err)
		}
		reference.undocumented = map[string]int{}
	})
	return reference.err
}

// conformance checks one exchange against the reference; it answers what
// does not match.
func conformance(req *http.Request, status int, header http.Header, body []byte) []string {
	if err := loadReference(); err != nil {
		return []string{err.Error()}
	}
	v := reference.public
	if strings.HasPrefix(req.URL.Path, "/admin/") || strings.HasPrefix(req.URL.Path, "/sandbox/") {
		v = reference.operator
	}
	// The gateway serves every path with or without one trailing slash;
	// the reference writes them without.
	checked := req.Clone(req.Context())
	if p := checked.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
		checked.URL.Path = strings.TrimSuffix(p, "/")
		checked.URL.RawPath = ""
	}
	res := &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(bytes.NewReader(body)), Request: checked}
	ok, errs := v.ValidateHttpResponse(checked, res)
	if ok {
		return nil
	}
	if unrouted(errs) {
		for _, m := range v.multi {
			if m.prefix.MatchString(checked.URL.Path) {
				one := checked.Clone(checked.Context())
				one.URL.Path = m.prefix.ReplaceAllString(checked.URL.Path, "${1}segments")
				res.Request, res.Body = one, io.NopCloser(bytes.NewReader(body))
				if ok, errs = v.ValidateHttpResponse(one, res); ok {
					return nil
				}
				break
			}
		}
	}
	if unrouted(errs) {
		reference.mu.Lock()
		reference.undocumented[req.Method+" "+checked.URL.Path]++
		reference.mu.Unlock()
		// An address the reference lacks must be one the gateway does not
		// serve either (its 404), or one of its own pages.
		if status == http.StatusNotFound || outsideReference(checked.URL.Path) {
			return nil
		}
		return []string{fmt.Sprintf("the gateway serves %s %s, which the reference lacks", req.Method, checked.URL.Path)}
	}
	var out []string
	for _, e := range errs {
		msg := e.Message
		if e.Reason != "" {
			msg += ": " + e.Reason
		}
		for _, se := range e.SchemaValidationErrors {
			msg += fmt.Sprintf(" [%s: %s]", se.FieldPath, se.Reason)
		}
		out = append(out, msg)
	}
	return out
}

// unrouted reports errors that only say the reference has no such path or
// method.
func unrouted(errs []*verrors.ValidationError) bool {
	for _, e := range errs {
		if !e.IsPathMissingError() && !e.IsOperationMissingError() {
			return false
		}
	}
	return len(errs) > 0
}

// outsideReference are the gateway's own routes that are not API
// operations: health checks and the reference itself.
func outsideReference(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/v2/openapi.json", "/admin/v1/openapi.json":
		return true
	}
	return strings.HasPrefix(path, "/v2/docs") || strings.HasPrefix(path, "/admin/v1/docs")
}

// TestReferenceIsValid: both documents are valid OpenAPI 3.1, and every
// operation has an id without spaces (spec part 9).
func TestReferenceIsValid(t *testing.T) {
	require.NoError(t, loadReference())
	// The blocked user-account catch-all spans segments: its operations
	// say so, and a deeper path is matched through its one-segment form.
	require.Len(t, reference.public.multi, 1)
	require.True(t, reference.public.multi[0].prefix.MatchString("/v2/users/me/settings/notifications"))
	for _, spec := range [][]byte{openapi.Public(), openapi.Operator()} {
		doc, err := libopenapi.NewDocument(spec)
		require.NoError(t, err)
		model, err := doc.BuildV3Model()
		require.NoError(t, err)
		require.Equal(t, "3.1.0", model.Model.Version)
		seen := map[string]bool{}
		for pair := model.Model.Paths.PathItems.First(); pair != nil; pair = pair.Next() {
			for op := pair.Value().GetOperations().First(); op != nil; op = op.Next() {
				id := op.Value().OperationId
				require.NotEmpty(t, id, "%s %s", op.Key(), pair.Key())
				require.NotContains(t, id, " ")
				require.False(t, seen[id], "operation id %s twice", id)
				seen[id] = true
			}
		}
	}
}

// undocumentedPaths are the paths the tests asked that the reference does
// not have, with how many answers each gave.
func undocumentedPaths() []string {
	reference.mu.Lock()
	defer reference.mu.Unlock()
	var out []string
	for k, n := range reference.undocumented {
		out = append(out, fmt.Sprintf("%s (%d)", k, n))
	}
	sort.Strings(out)
	return out
}
