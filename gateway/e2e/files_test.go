package e2e

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	mrand "math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// maxFileBytes is the upload limit (spec 8: 100 MB, taken as MiB).
const maxFileBytes = 100 << 20

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// filePart describes the "file" part of a generated upload.
type filePart struct {
	field, filename string
	// contentType: "-" sends the part without a Content-Type header.
	contentType string
	size        int64
	// head starts the content (then pseudo-random bytes follow).
	head []byte
}

// upload streams a multipart body from an io.Pipe: the content is made
// as it is sent, so neither side of the test holds it. It answers the
// response and the SHA-256 of the file's bytes.
func upload(t testing.TB, companyID int64, apiKey string, fp filePart) (response, []byte) {
	t.Helper()
	return uploadAt(t, stack.BaseURL, companyID, apiKey, fp)
}

// uploadAt is upload to the gateway at base (another stack's).
func uploadAt(t testing.TB, base string, companyID int64, apiKey string, fp filePart) (response, []byte) {
	t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	sum := sha256.New()
	go func() {
		err := writeUpload(mw, fp, sum)
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest("POST", base+p("/v2/companies/%d/files/", companyID), pr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if apiKey != "" {
		req.Header.Set("X-Api-Key", apiKey)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	pr.CloseWithError(io.ErrClosedPipe) // stops the writer if the server answered early
	for _, problem := range conformance(req, res.StatusCode, res.Header, raw) {
		t.Errorf("upload answered %d, which the API reference does not describe: %s\nbody: %s", res.StatusCode, problem, raw)
	}
	return response{Status: res.StatusCode, Header: res.Header, Body: raw}, sum.Sum(nil)
}

func writeUpload(mw *multipart.Writer, fp filePart, sum hash.Hash) error {
	if err := mw.WriteField("caption", "ignored"); err != nil {
		return err
	}
	field := fp.field
	if field == "" {
		field = "file"
	}
	h := textproto.MIMEHeader{}
	// Written as a browser does: the name as is, in quotes.
	h.Set("Content-Disposition", `form-data; name="`+field+`"; filename="`+fp.filename+`"`)
	switch fp.contentType {
	case "-":
	case "":
		h.Set("Content-Type", "application/octet-stream")
	default:
		h.Set("Content-Type", fp.contentType)
	}
	w, err := mw.CreatePart(h)
	if err != nil {
		return err
	}
	out := io.MultiWriter(w, sum)
	head := fp.head
	if int64(len(head)) > fp.size {
		head = head[:fp.size]
	}
	if _, err := out.Write(head); err != nil {
		return err
	}
	rng := mrand.NewChaCha8([32]byte{1, 2, 3})
	buf := make([]byte, 64<<10)
	for left := fp.size - int64(len(head)); left > 0; {
		n := min(int64(len(buf)), left)
		_, _ = rng.Read(buf[:n])
		if _, err := out.Write(buf[:n]); err != nil {
			return err
		}
		left -= n
	}
	return nil
}

// download fetches a file link, hashing the body as it arrives.
func download(t testing.TB, url string) (int, http.Header, []byte, int64) {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	sum := sha256.New()
	n, err := io.Copy(sum, res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header, sum.Sum(nil), n
}

func fileLink(t testing.TB, r response) map[string]any {
	t.Helper()
	return requireJSON(t, r, 200, map[string]any{"url": anyString, "name": anyString, "size": anyPresent, "mime_type": anyString}).(map[string]any)
}

// TestFilesUploadAndDownload: a few MB streamed up, served back
// byte-identical with its type to anyone holding the link; the name is
// sanitised and the type sniffed when the client says nothing useful.
func TestFilesUploadAndDownload(t *testing.T) {
	c := newCompany(t, nil)
	const size = 5<<20 + 123
	r, want := upload(t, c.ID, c.Key, filePart{filename: "holiday photo.png", contentType: "image/png", size: size, head: pngMagic})
	link := fileLink(t, r)
	require.Equal(t, "holiday photo.png", link["name"])
	require.EqualValues(t, size, link["size"])
	require.Equal(t, "image/png", link["mime_type"])
	url := link["url"].(string)
	require.True(t, strings.HasPrefix(url, stack.BaseURL+"/files/"), url)
	token := strings.TrimPrefix(url, stack.BaseURL+"/files/")
	raw, err := base64.RawURLEncoding.DecodeString(token)
	require.NoError(t, err)
	require.Len(t, raw, 32, "256 random bits")

	// No key needed: messengers fetch it.
	status, h, got, n := download(t, url)
	require.Equal(t, 200, status)
	require.EqualValues(t, size, n)
	require.Equal(t, want, got, "byte-identical")
	require.Equal(t, "image/png", h.Get("Content-Type"))
	require.Equal(t, strconv.Itoa(size), h.Get("Content-Length"))
	require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
	head, err := http.Head(url)
	require.NoError(t, err)
	head.Body.Close()
	require.Equal(t, 200, head.StatusCode)
	require.Equal(t, "image/png", head.Header.Get("Content-Type"))

	// Sniffed: no Content-Type, or application/octet-stream (curl's default).
	r, _ = upload(t, c.ID, c.Key, filePart{filename: "x", contentType: "-", size: 2000, head: pngMagic})
	require.Equal(t, "image/png", fileLink(t, r)["mime_type"])
	r, _ = upload(t, c.ID, c.Key, filePart{filename: "notes", size: 11, head: []byte("hello world")})
	l := fileLink(t, r)
	require.Equal(t, "text/plain", l["mime_type"])
	_, h, _, _ = download(t, l["url"].(string))
	require.Equal(t, "text/plain", h.Get("Content-Type"))
	// A path is cut to its last element (either slash), control characters go.
	r, _ = upload(t, c.ID, c.Key, filePart{filename: "../../etc/re\tport.pdf", contentType: "Application/PDF; x=y", size: 10, head: []byte("%PDF-1.4\n..")})
	l = fileLink(t, r)
	require.Equal(t, "report.pdf", l["name"])
	require.Equal(t, "application/pdf", l["mime_type"])
	// Empty files are files.
	r, _ = upload(t, c.ID, c.Key, filePart{filename: "", contentType: "-", size: 0})
	l = fileLink(t, r)
	require.Equal(t, "file", l["name"])
	require.EqualValues(t, 0, l["size"])
}

// TestFilesAccess: scope messaging, the key's own company, a key at all;
// a link that is not one is 404.
func TestFilesAccess(t *testing.T) {
	c := newCompany(t, nil)
	other := newCompany(t, nil)
	fp := filePart{filename: "a.txt", contentType: "text/plain", size: 300 << 10}

	r, _ := upload(t, c.ID, newKey(t, c.ID, "connections"), fp)
	require.Equal(t, 403, r.Status, "%s", r.Body)
	requireBody(t, `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`, r)
	r, _ = upload(t, c.ID, newKey(t, c.ID, "messaging:read"), fp)
	require.Equal(t, 403, r.Status, "an upload is a write: %s", r.Body)
	r, _ = upload(t, c.ID, other.Key, fp)
	require.Equal(t, 403, r.Status, "another company's key: %s", r.Body)
	r, _ = upload(t, c.ID, "", fp)
	require.Equal(t, 401, r.Status, "%s", r.Body)
	r, _ = upload(t, c.ID, newKey(t, c.ID, "messaging"), fp)
	fileLink(t, r)

	for _, bad := range []string{
		"/files/" + base64.RawURLEncoding.EncodeToString(make([]byte, 32)),
		"/files/" + randomToken(t),
		"/files/short", "/files/" + strings.Repeat("A", 200), "/files/", "/files/a%00b",
	} {
		r := call(t, "GET", bad, nil)
		require.Equal(t, 404, r.Status, "%s: %s", bad, r.Body)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	}
}

func randomToken(t testing.TB) string {
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return base64.RawURLEncoding.EncodeToString(b)
}

// TestFilesRefusals: no file field or no multipart body is 422 at
// ["body","file"], and nothing about the body is ever a 5xx.
func TestFilesRefusals(t *testing.T) {
	c := newCompany(t, nil)
	path := cpath(c, "/files/")
	requireLoc(t, api(t, "POST", path, map[string]any{"file": "x"}, key(c.Key)...), "body", "file")
	requireLoc(t, api(t, "POST", path, nil, key(c.Key)...), "body", "file")
	r, _ := upload(t, c.ID, c.Key, filePart{field: "document", filename: "a.txt", size: 10})
	requireLoc(t, r, "body", "file")
	// A path company that is not a number.
	requireLoc(t, api(t, "POST", "/v2/companies/abc/files/", nil, key(c.Key)...), "path", "company_id")
}

// TestFilesBadInput: malformed multipart, NUL and invalid UTF-8 in the
// file name or type, wrong or malformed Content-Type: never a 5xx, and a
// NUL never reaches a stored name.
func TestFilesBadInput(t *testing.T) {
	c := newCompany(t, nil)
	path := cpath(c, "/files/")
	post := func(ct, body string) response {
		return rawPost(t, path, ct, body, c.Key)
	}
	const b = "XyZ"
	cases := map[string][2]string{
		"no boundary":           {"multipart/form-data", "--XyZ\r\n"},
		"malformed type":        {"multipart/form-data; boundary=", "x"},
		"garbage type":          {";;;===", "x"},
		"json type":             {"application/json", `{"file": "x"}`},
		"form type":             {"application/x-www-form-urlencoded", "file=abc"},
		"cut short":             {"multipart/form-data; boundary=" + b, "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc"},
		"no closing":            {"multipart/form-data; boundary=" + b, "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc\r\n"},
		"bad header":            {"multipart/form-data; boundary=" + b, "--XyZ\r\nno colon here\r\n\r\nabc\r\n--XyZ--\r\n"},
		"empty body":            {"multipart/form-data; boundary=" + b, ""},
		"only end":              {"multipart/form-data; boundary=" + b, "--XyZ--\r\n"},
		"NUL in filename":       {"multipart/form-data; boundary=" + b, "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\x00b.txt\"\r\n\r\nabc\r\n--XyZ--\r\n"},
		"invalid UTF-8 name":    {"multipart/form-data; boundary=" + b, "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\xff\xfe.txt\"\r\n\r\nabc\r\n--XyZ--\r\n"},
		"NUL in part type":      {"multipart/form-data; boundary=" + b, "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\nContent-Type: image/\x00png\r\n\r\nabc\r\n--XyZ--\r\n"},
		"garbage part type":     {"multipart/form-data; boundary=" + b, "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\nContent-Type: \xff/\xfe\r\n\r\nabc\r\n--XyZ--\r\n"},
		"encoded filename":      {"multipart/form-data; boundary=" + b, "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename*=UTF-8''%00%2F..%2F%FF\r\n\r\nabc\r\n--XyZ--\r\n"},
		"no disposition":        {"multipart/form-data; boundary=" + b, "--XyZ\r\nContent-Type: text/plain\r\n\r\nabc\r\n--XyZ--\r\n"},
		"quoted-printable part": {"multipart/form-data; boundary=" + b, "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"q\"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n=ZZ=\r\n--XyZ--\r\n"},
	}
	for name, tc := range cases {
		r := post(tc[0], tc[1])
		require.Less(t, r.Status, 500, "%s: %d %s", name, r.Status, r.Body)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"), name)
		if r.Status == 200 {
			got := r.JSON(t)["name"].(string)
			require.NotContains(t, got, "\x00", name)
			require.NotContains(t, got, "/", name)
		}
	}
	// A raw NUL is no valid header (422); an encoded one is dropped from the
	// name, never stored.
	requireLoc(t, post(cases["NUL in filename"][0], cases["NUL in filename"][1]), "body", "file")
	r := post(cases["encoded filename"][0], cases["encoded filename"][1])
	require.Equal(t, "\uFFFD", fileLink(t, r)["name"])
}

func rawPost(t testing.TB, path, ct, body, apiKey string) response {
	t.Helper()
	req, err := http.NewRequest("POST", stack.BaseURL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("X-Api-Key", apiKey)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return response{Status: res.StatusCode, Header: res.Header, Body: raw}
}

// TestFilesTooLarge: 100 MiB + 1 byte, streamed, is 413 with the standard
// body, and leaves nothing stored: no row, no object, no temporary file.
// Exactly 100 MiB is accepted. Both uploads measure the peak memory of the
// gateway and messaging processes (VmHWM, reset first): far below the file.
func TestFilesTooLarge(t *testing.T) {
	c := newCompany(t, nil)
	gw, msg := stackPid(t, "gateway"), stackPid(t, "messaging")
	dir := processEnv(t, msg, "SWITCHBOARD_FILES_DIR")
	before := countFiles(t, dir)

	gwBase, msgBase := statusKB(t, gw, "VmRSS:"), statusKB(t, msg, "VmRSS:")
	t.Logf("at rest: RSS gateway %d kB, messaging %d kB", gwBase, msgBase)
	resetPeak(t, gw, msg)
	start := time.Now()
	r, _ := upload(t, c.ID, c.Key, filePart{filename: "big.bin", size: maxFileBytes + 1})
	t.Logf("100 MiB + 1 refused in %s; peak RSS (VmHWM): gateway %s, messaging %s", time.Since(start).Round(time.Millisecond), peak(t, gw), peak(t, msg))
	require.Equal(t, 413, r.Status, "%s", r.Body)
	requireBody(t, fmt.Sprintf(`{"error_code":413,"error_name":"PAYLOAD_TOO_LARGE","message":"request body is too large","detail":{"max_bytes":%d}}`, maxFileBytes), r)
	var rows int
	require.NoError(t, serviceDB(t, "messaging").QueryRow(t.Context(), `SELECT count(*) FROM files WHERE company_id = $1`, c.ID).Scan(&rows))
	require.Zero(t, rows)
	require.Eventually(t, func() bool { return countFiles(t, dir) == before }, 5*time.Second, 50*time.Millisecond, "nothing half-written stays")

	// Content-Length past the bound: refused before reading.
	req, err := http.NewRequest("POST", stack.BaseURL+cpath(c, "/files/"), strings.NewReader("x"))
	require.NoError(t, err)
	req.ContentLength = maxFileBytes + 2<<20
	req.Header.Set("X-Api-Key", c.Key)
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	res, err := http.DefaultClient.Do(req)
	if err == nil { // the gateway may close before the client finished writing
		res.Body.Close()
		require.Equal(t, 413, res.StatusCode)
	}

	resetPeak(t, gw, msg)
	start = time.Now()
	r, want := upload(t, c.ID, c.Key, filePart{filename: "limit.bin", size: maxFileBytes})
	elapsed := time.Since(start)
	gwPeak, msgPeak := peakKB(t, gw), peakKB(t, msg)
	t.Logf("100 MiB stored in %s (%.0f MB/s); peak RSS (VmHWM): gateway %d kB, messaging %d kB",
		elapsed.Round(time.Millisecond), float64(maxFileBytes)/1e6/elapsed.Seconds(), gwPeak, msgPeak)
	link := fileLink(t, r)
	require.EqualValues(t, maxFileBytes, link["size"])
	// Streamed: neither process ever held the file (100 MiB = 102400 kB);
	// what they gained is chunks in flight and garbage the GC has not yet
	// collected.
	require.Less(t, gwPeak-gwBase, int64(maxFileBytes/1024/2), "gateway peak RSS over its rest")
	require.Less(t, msgPeak-msgBase, int64(maxFileBytes/1024/2), "messaging peak RSS over its rest")
	status, _, got, _ := download(t, link["url"].(string))
	require.Equal(t, 200, status)
	require.Equal(t, want, got)
}

// TestFilesLinkInAMessage: an uploaded file's link is a valid media URL of
// a send, and the messenger receives it.
func TestFilesLinkInAMessage(t *testing.T) {
	c, conn, chat := telegramChat(t)
	r, _ := upload(t, c.ID, c.Key, filePart{filename: "cat.png", contentType: "image/png", size: 4096, head: pngMagic})
	link := fileLink(t, r)
	image := map[string]any{"url": link["url"], "name": link["name"], "size": link["size"], "mime_type": link["mime_type"]}
	msg := requireJSON(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "image", "image": image}), 200, anyPresent).(map[string]any)["message"].(map[string]any)
	done := waitMessage(t, c, chat, msg["message_id"], func(m map[string]any) bool { return m["source_message_id"] != nil })
	out := requireJSON(t, api(t, "GET", p("/sandbox/v1/connections/%d/outbox", conn), nil, operator()...), 200, anyPresent).([]any)
	require.Len(t, out, 1)
	got := out[0].(map[string]any)
	require.Equal(t, done["source_message_id"], got["source_message_id"])
	require.Equal(t, "image", got["message_type"])
	require.Equal(t, link["url"], got["content"].(map[string]any)["url"])
	status, h, _, n := download(t, link["url"].(string))
	require.Equal(t, 200, status)
	require.Equal(t, "image/png", h.Get("Content-Type"))
	require.EqualValues(t, 4096, n)
}

// stackPid finds the process of this stack's service (or "gateway") by its
// binary and the database prefix / HTTP address in its environment.
func stackPid(t testing.TB, name string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	httpAddr := strings.TrimPrefix(stack.BaseURL, "http://")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(p("/proc/%d/exe", pid))
		if err != nil || filepath.Base(exe) != name {
			continue
		}
		env, err := os.ReadFile(p("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		mine := strings.Contains(string(env), "SWITCHBOARD_DATABASE_URL=") && strings.Contains(string(env), dbPrefix+"_"+name)
		if name == "gateway" {
			mine = strings.Contains(string(env), "SWITCHBOARD_HTTP_ADDR="+httpAddr+"\x00")
		}
		if mine {
			return pid
		}
	}
	t.Fatalf("no %s process of this stack", name)
	return 0
}

func processEnv(t testing.TB, pid int, name string) string {
	t.Helper()
	env, err := os.ReadFile(p("/proc/%d/environ", pid))
	require.NoError(t, err)
	val := ""
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			val = v // the last one wins, as in os/exec
		}
	}
	require.NotEmpty(t, val, name)
	return val
}

// countFiles counts the regular files under dir (stored and temporary).
func countFiles(t testing.TB, dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// resetPeak resets the processes' peak RSS (VmHWM), where the kernel
// allows it (writing 5 to clear_refs).
func resetPeak(t testing.TB, pids ...int) {
	for _, pid := range pids {
		if err := os.WriteFile(p("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
			t.Logf("cannot reset the peak RSS of %d: %v (the figure is the process's lifetime peak)", pid, err)
		}
	}
}

func peakKB(t testing.TB, pid int) int64 { return statusKB(t, pid, "VmHWM:") }

func statusKB(t testing.TB, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(p("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no " + field)
	return math.MaxInt64
}

func peak(t testing.TB, pid int) string { return p("%d kB", peakKB(t, pid)) }

// TestFilesAbortedUpload: a client that goes away mid-upload leaves
// nothing: no row, no stored or temporary file.
func TestFilesAbortedUpload(t *testing.T) {
	c := newCompany(t, nil)
	dir := processEnv(t, stackPid(t, "messaging"), "SWITCHBOARD_FILES_DIR")
	before := countFiles(t, dir)

	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	sent := make(chan struct{})
	go func() {
		w, err := mw.CreateFormFile("file", "partial.bin")
		if err == nil {
			_, err = w.Write(make([]byte, 8<<20))
		}
		close(sent)
		// Wait until the service holds a temporary file, then vanish.
		deadline := time.Now().Add(5 * time.Second)
		for countFiles(t, dir) == before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if err == nil {
			err = errors.New("client went away")
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest("POST", stack.BaseURL+cpath(c, "/files/"), pr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-Api-Key", c.Key)
	res, err := http.DefaultClient.Do(req)
	if err == nil {
		res.Body.Close()
	}
	<-sent
	require.Eventually(t, func() bool { return countFiles(t, dir) == before }, 5*time.Second, 20*time.Millisecond, "nothing half-written stays")
	var rows int
	require.NoError(t, serviceDB(t, "messaging").QueryRow(t.Context(), `SELECT count(*) FROM files WHERE company_id = $1`, c.ID).Scan(&rows))
	require.Zero(t, rows)
}

// TestFilesLinkDescribesItself: a send that gives only an uploaded file's
// link shows the file's size, MIME type and name, as the platform stored
// them (they were null); a name the client gives stays; a platform link to
// no uploaded file is refused before anything is stored.
func TestFilesLinkDescribesItself(t *testing.T) {
	c, _, chat := telegramChat(t)
	r, _ := upload(t, c.ID, c.Key, filePart{filename: "cat.png", contentType: "image/png", size: 4096, head: pngMagic})
	url := fileLink(t, r)["url"].(string)

	sent := func(content map[string]any) map[string]any {
		t.Helper()
		m := requireJSON(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "image", "image": content}), 200, anyPresent)
		return m.(map[string]any)["message"].(map[string]any)
	}
	msg := sent(map[string]any{"url": url, "caption": "Our cat"})
	want := map[string]any{"url": url, "caption": "Our cat", "name": "cat.png", "size": float64(4096), "mime_type": "image/png"}
	require.Equal(t, want, msg["image"])
	stored := waitMessage(t, c, chat, msg["message_id"], func(map[string]any) bool { return true })
	require.Equal(t, want, stored["image"], "as stored")

	// The client's name stays; its size and type of an uploaded file give
	// way to the stored ones.
	msg = sent(map[string]any{"url": url, "name": "tom.png", "size": 1, "mime_type": "text/plain"})
	require.Equal(t, map[string]any{"url": url, "caption": nil, "name": "tom.png", "size": float64(4096), "mime_type": "image/png"}, msg["image"])

	// Another link of the platform that names no file.
	bogus := stack.BaseURL + "/files/" + randomToken(t)
	requireError(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "image", "image": map[string]any{"url": bogus}}),
		400, 15011, "MESSAGING_FILE_URL_NOT_SUPPORTED")
}
