package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The API reference the gateway serves: the OpenAPI documents, and their
// Redoc pages opened in headless Chromium (Debian's chromium; `make test`
// installs it through deploy/local/infra.sh browser and names it in
// SWITCHBOARD_CHROMIUM). Chromium is driven by its command line (one run
// dumps the rendered DOM, takes a screenshot and writes a NetLog of every
// request) rather than DevTools, so the test needs no Go dependency. The
// documents are fetched with net/http, not call: their own routes are not
// operations of the documents.

// fetch makes one request of the stack, with no body.
func fetch(t *testing.T, method, path string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, stack.BaseURL+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, body
}

// openAPIDocument is the part of a document the tests look at.
type openAPIDocument struct {
	OpenAPI string `json:"openapi"`
	Info    struct {
		Title string `json:"title"`
	} `json:"info"`
	// Tags are the reference's groups (the API's sections), under the
	// menu headings of x-tagGroups.
	Tags []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tags"`
	TagGroups []struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	} `json:"x-tagGroups"`
	// Paths hold operations by method, and x- extensions.
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"schemas"`
	} `json:"components"`
}

type openAPIOperation struct {
	OperationID string `json:"operationId"`
	Summary     string `json:"summary"`
	Responses   map[string]struct {
		Content map[string]struct {
			Schema struct {
				Ref string `json:"$ref"`
			} `json:"schema"`
		} `json:"content"`
	} `json:"responses"`
}

// document fetches one of the served documents and checks how it is served.
func document(t *testing.T, path string) openAPIDocument {
	t.Helper()
	res, body := fetch(t, http.MethodGet, path)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	require.Equal(t, "application/json", res.Header.Get("Content-Type"))
	require.Equal(t, "no-cache", res.Header.Get("Cache-Control"))
	var doc openAPIDocument
	require.NoError(t, json.Unmarshal(body, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	etag := res.Header.Get("ETag")
	require.NotEmpty(t, etag)
	again, rest := fetch(t, http.MethodGet, path, "If-None-Match", etag)
	require.Equal(t, http.StatusNotModified, again.StatusCode)
	require.Empty(t, rest)
	return doc
}

func TestDocsOpenAPIDocuments(t *testing.T) {
	public, operator := document(t, "/v2/openapi.json"), document(t, "/admin/v1/openapi.json")
	require.NotEqual(t, public.Info.Title, operator.Info.Title)
	// Any other method is the gateway's 404, as on every route.
	res, body := fetch(t, http.MethodPost, "/v2/openapi.json")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.JSONEq(t, `{"error_code":404,"error_name":"NOT_FOUND","message":"not found","detail":{}}`, string(body))
}

// page is what Chromium made of a page.
type page struct {
	dom      string   // the DOM after rendering, serialised
	requests []string // the URLs the page itself asked for
	log      string   // where Chromium's log is, with the page's console messages
}

// TestDocsPageRendersInChromium opens each reference page and checks that
// Redoc rendered a known operation with its parameters and response schema,
// from the embedded bundle, with no request leaving the gateway; that its
// menu lists the API's sections under their headings; and that the
// operation's answer sample shows the API's own values (issue 26), not
// Redoc's placeholders.
func TestDocsPageRendersInChromium(t *testing.T) {
	chromium := chromiumPath(t)
	for _, tc := range []struct {
		name, prefix, method, path string
		// summary is the operation's heading: its proto comment's first
		// sentence.
		summary string
		// text is a proto comment the operation's rendered schema shows.
		text string
		// tag is the operation's group, sample a value its answer
		// sample shows; timestamp whether that answer has one.
		tag, sample string
		timestamp   bool
	}{
		{"public", "/v2", "get", "/v2/companies/{company_id}/connections",
			"The company's connections of every type, each with its last status and subscription.",
			"Connections of the company (all types, before paging).", "Connections", `"Sales WhatsApp"`, true},
		{"operator", "/admin/v1", "post", "/admin/v1/companies",
			"Creates a company with its owner (an ADMINISTRATOR member) and an API key holding every scope.", "",
			"Operator: companies and keys", `"sb_`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := document(t, tc.prefix+"/openapi.json")
			raw, ok := doc.Paths[tc.path][tc.method]
			require.True(t, ok, "the document has no %s %s", tc.method, tc.path)
			var op openAPIOperation
			require.NoError(t, json.Unmarshal(raw, &op))
			require.NotEmpty(t, op.OperationID)
			require.Equal(t, tc.summary, op.Summary)

			pg := render(t, chromium, tc.prefix+"/docs")
			require.Contains(t, pg.dom, "<h1", "Redoc rendered nothing; see Chromium's log %s", pg.log)
			require.Contains(t, text(pg.dom), doc.Info.Title)

			section := operationSection(pg.dom, op.OperationID)
			require.NotEmpty(t, section, "no rendered section for operation %s; see Chromium's log %s", op.OperationID, pg.log)
			sectionText := text(section)
			require.Contains(t, sectionText, op.Summary)
			require.Contains(t, sectionText, tc.path)
			// The successful response's schema is rendered expanded: every
			// property is a row of its table.
			props := responseProperties(t, doc, op)
			for _, name := range props {
				require.Contains(t, section, `class="property-name">`+name+`<`, "property %s of %s", name, op.OperationID)
			}
			if tc.text != "" {
				require.Contains(t, sectionText, tc.text)
			}

			// The menu: the headings of x-tagGroups, each followed by its
			// groups (the API's sections), in the document's order.
			var want []string
			for _, g := range doc.TagGroups {
				want = append(want, g.Name)
				want = append(want, g.Tags...)
			}
			require.Len(t, want, len(doc.TagGroups)+len(doc.Tags), "every tag under one heading")
			menu := menuEntries(pg.dom)
			require.Equal(t, want, menu, "the menu's headings and groups; see %s", pg.log)
			require.Contains(t, menu, tc.tag)
			for _, entry := range menu {
				require.NotRegexp(t, `Service$`, entry, "a group named after the service behind it")
			}
			require.Equal(t, tc.tag, operationTag(t, raw))
			require.Contains(t, pg.dom, `data-section-id="tag/`+strings.ReplaceAll(tc.tag, " ", "-")+`/operation/`+op.OperationID+`"`,
				"the operation sits in its group")

			// The answer sample: the API's timestamps (UTC, microseconds)
			// and values, not Redoc's placeholders.
			if tc.timestamp {
				require.Regexp(t, `"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"`, sectionText, "a real-looking timestamp in the sample")
			}
			require.NotContains(t, pg.dom, "2019-08-24", "Redoc's placeholder timestamp")
			require.Contains(t, sectionText, tc.sample)

			// Everything the page loaded came from the gateway (and no
			// request could have gone elsewhere: Chromium resolved no other
			// host), and Redoc came from the embedded bundle.
			origin := strings.TrimSuffix(stack.BaseURL, "/")
			for _, u := range pg.requests {
				require.True(t, strings.HasPrefix(u, origin+"/"), "the page asked for %s", u)
			}
			require.Contains(t, pg.requests, origin+tc.prefix+"/openapi.json")
			require.True(t, containsPrefix(pg.requests, origin+tc.prefix+"/docs/redoc.standalone.js?v="), "requests: %q", pg.requests)
		})
	}
}

// operationTag is the one tag of an operation.
func operationTag(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var op struct {
		Tags []string `json:"tags"`
	}
	require.NoError(t, json.Unmarshal(raw, &op))
	require.Len(t, op.Tags, 1)
	return op.Tags[0]
}

// menuEntry is an entry of Redoc's side menu that is a heading
// (x-tagGroups) or a group (a tag), with the name it shows as its title.
var menuEntry = regexp.MustCompile(`data-item-id="(?:group|tag)/[^"/]*"[^>]*><label[^>]*><span[^>]*title="([^"]*)"`)

// menuEntries lists the headings and groups of the side menu, in order.
func menuEntries(dom string) []string {
	var out []string
	for _, m := range menuEntry.FindAllStringSubmatch(dom, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// chromiumPath is SWITCHBOARD_CHROMIUM, else chromium on PATH. Without it
// the test fails: `make test` installs it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	name := os.Getenv("SWITCHBOARD_CHROMIUM")
	if name == "" {
		name = "chromium"
	}
	p, err := exec.LookPath(name)
	require.NoError(t, err, "Chromium is needed for the API reference page test and was not found: "+
		"`make test` installs it (deploy/local/infra.sh browser, Debian's chromium package), or set SWITCHBOARD_CHROMIUM")
	return p
}

// artifacts is the folder for what tests leave to look at afterwards:
// SWITCHBOARD_TEST_ARTIFACTS, else one under the system's temporary folder.
func artifacts(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("SWITCHBOARD_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "switchboard-test-artifacts")
	}
	dir = filepath.Join(dir, t.Name())
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// render opens path of the stack in headless Chromium with every host but
// the gateway's unresolvable, and saves a screenshot, the rendered DOM and
// Chromium's log as page.png, .html and .log among the test's artifacts.
func render(t *testing.T, chromium, path string) page {
	t.Helper()
	base, err := url.Parse(stack.BaseURL)
	require.NoError(t, err)
	out := artifacts(t)
	shot := filepath.Join(out, "page.png")
	// A screenshot of an earlier run must not pass for this one's.
	if err := os.Remove(shot); err != nil && !errors.Is(err, fs.ErrNotExist) {
		require.NoError(t, err)
	}
	netlog := filepath.Join(t.TempDir(), "netlog.json")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--disable-quic", "--no-proxy-server",
		"--user-data-dir="+t.TempDir(),
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE "+base.Hostname(),
		"--log-net-log="+netlog,
		"--enable-logging=stderr", "--v=0",
		// Virtual time runs only while no fetch is pending and is spent
		// fast when the page is idle: the budget is how long Redoc may
		// take in page time, not how long the test waits.
		"--virtual-time-budget=30000",
		"--window-size=1400,2000", "--screenshot="+shot,
		"--dump-dom", stack.BaseURL+path)
	// Chromium's helper processes go with it on a timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	require.NoError(t, os.WriteFile(filepath.Join(out, "page.html"), stdout.Bytes(), 0o644))
	logPath := filepath.Join(out, "page.log")
	require.NoError(t, os.WriteFile(logPath, stderr.Bytes(), 0o644))
	t.Logf("screenshot, DOM and Chromium's log of %s: %s/page.{png,html,log}", path, out)
	require.NoError(t, runErr, "chromium: %s", stderr.String())
	info, err := os.Stat(shot)
	require.NoError(t, err, "no screenshot: %s", stderr.String())
	require.Positive(t, info.Size())

	return page{dom: stdout.String(), requests: pageRequests(t, netlog, base.Scheme+"://"+base.Host), log: logPath}
}

// pageRequests reads a Chromium NetLog and lists the URLs the page of
// origin asked for: the navigation and the requests it initiated. The
// browser's own background requests (initiator "not an origin") are left
// out; they go nowhere anyway, as no host resolves.
func pageRequests(t *testing.T, path, origin string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var log struct {
		Constants struct {
			LogEventTypes map[string]int `json:"logEventTypes"`
		} `json:"constants"`
		Events []struct {
			Type   int            `json:"type"`
			Params map[string]any `json:"params"`
		} `json:"events"`
	}
	if err := json.Unmarshal(raw, &log); err != nil {
		// A NetLog cut short (Chromium did not close it) lacks its end.
		raw = append(bytes.TrimRight(bytes.TrimSpace(raw), ","), "]}"...)
		require.NoError(t, json.Unmarshal(raw, &log), "NetLog %s", path)
	}
	start, ok := log.Constants.LogEventTypes["URL_REQUEST_START_JOB"]
	require.True(t, ok, "NetLog without URL_REQUEST_START_JOB events")
	var urls []string
	for _, ev := range log.Events {
		if ev.Type != start {
			continue
		}
		u, _ := ev.Params["url"].(string)
		initiator, _ := ev.Params["initiator"].(string)
		reqType, _ := ev.Params["request_type"].(string)
		if initiator == origin || reqType == "main frame" {
			urls = append(urls, u)
		}
	}
	require.NotEmpty(t, urls, "the NetLog shows no request of the page")
	return urls
}

// operationSection is the rendered section of one operation: from its
// anchor to the next section's.
func operationSection(dom, operationID string) string {
	const attr = `data-section-id="`
	i := strings.Index(dom, attr+"operation/"+operationID+`"`)
	if i < 0 {
		return ""
	}
	rest := dom[i+len(attr):]
	if j := strings.Index(rest, attr); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

var (
	tags   = regexp.MustCompile(`<[^>]*>`)
	spaces = regexp.MustCompile(`\s+`)
)

// text is the visible text of serialised HTML, white space collapsed.
func text(s string) string {
	return spaces.ReplaceAllString(html.UnescapeString(tags.ReplaceAllString(s, " ")), " ")
}

// responseProperties lists the properties of the operation's 200 (or 201)
// JSON body, a schema of components.
func responseProperties(t *testing.T, doc openAPIDocument, op openAPIOperation) []string {
	t.Helper()
	for _, code := range []string{"200", "201"} {
		ref := op.Responses[code].Content["application/json"].Schema.Ref
		if ref == "" {
			continue
		}
		name, ok := strings.CutPrefix(ref, "#/components/schemas/")
		require.True(t, ok, "response schema %s", ref)
		var props []string
		for p := range doc.Components.Schemas[name].Properties {
			props = append(props, p)
		}
		require.NotEmpty(t, props, "schema %s has no properties", name)
		return props
	}
	t.Fatalf("%s has no 200 or 201 JSON response schema", op.OperationID)
	return nil
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
