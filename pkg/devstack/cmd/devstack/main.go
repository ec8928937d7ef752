// Command devstack is the body of `make run`: it starts the platform on the
// local PostgreSQL and Redis that deploy/local/run.sh started, makes sure a
// demo company exists, prints how to call the API and runs until Ctrl-C.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/devstack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "devstack:", err)
		os.Exit(1)
	}
}

// demo is what is kept between runs: a key is shown only once, so the demo
// company's key is remembered here instead of creating a company every run.
type demo struct {
	CompanyID int64  `json:"company_id"`
	APIKey    string `json:"api_key"`
	// A telegram connection made through the sandbox login, so the demo
	// company has something to look at.
	ConnectionID int64 `json:"connection_id"`
}

func run(ctx context.Context) error {
	var o devstack.Options
	var dir string
	flag.StringVar(&o.BinDir, "bin", ".bin", "folder of the built binaries")
	flag.StringVar(&o.AdminDSN, "pg", "", "PostgreSQL superuser DSN")
	flag.StringVar(&o.RedisAddr, "redis", "", "Redis address")
	flag.StringVar(&o.HTTPAddr, "http", "127.0.0.1:8080", "gateway address")
	flag.StringVar(&dir, "dir", ".run", "folder for logs and the demo key")
	flag.StringVar(&o.AdminToken, "admin-token", "dev-operator-token", "operator API token")
	flag.StringVar(&o.InternalToken, "internal-token", "dev-internal-token", "service-to-service token")
	flag.StringVar(&o.DBPrefix, "db-prefix", "switchboard", "names the databases: <prefix>_<service>")
	flag.Parse()
	// Local development: webhook targets and profile pictures may live on
	// this machine.
	o.Env = append(o.Env, "SWITCHBOARD_ALLOW_PRIVATE_TARGETS=1")
	o.LogDir = filepath.Join(dir, "logs")
	// Test mode is on unless the environment says SWITCHBOARD_SANDBOX=0;
	// SWITCHBOARD_TELEGRAM_API_URL and the like pass through to the services.
	o.NoSandbox = os.Getenv("SWITCHBOARD_SANDBOX") == "0"

	// A taken address would only show as the gateway failing to start, in
	// its log: say it at once, and what to do.
	if l, err := net.Listen("tcp", o.HTTPAddr); err != nil {
		return fmt.Errorf("the API's address %s is taken by another program (%v): choose another, e.g. make run SWITCHBOARD_HTTP_ADDR=127.0.0.1:8081", o.HTTPAddr, err)
	} else {
		l.Close()
	}
	st, err := devstack.Start(ctx, o)
	if err != nil {
		return err
	}
	defer st.Stop()

	statePath := filepath.Join(dir, "demo.json")
	d, notice, err := ensureDemo(st.BaseURL, o.AdminToken, statePath)
	if err != nil {
		return err
	}
	if notice != "" {
		fmt.Printf("\n%s\n", notice)
	}
	if o.NoSandbox {
		fmt.Printf(`
Switchboard is running with test mode off (SWITCHBOARD_SANDBOX=0): no sandbox
routes, no demo connection. telegram_bot connections talk to the Bot API at
SWITCHBOARD_TELEGRAM_API_URL (default https://api.telegram.org); other
messengers answer 503 until their adapters exist.

  Base URL:        %[1]s
  Operator token:  %[2]s
  Demo company:    %[3]d
  Demo API key:    %[4]s
  Logs:            %[5]s

Connect a bot (a token from @BotFather):

  curl -s -X POST %[1]s/v2/companies/%[3]d/connections/ -H 'X-Api-Key: %[4]s' \
    -d '{"name": "My bot", "type": "telegram_bot", "params": {"bot_token": "<token>"}}'

Ctrl-C stops everything.
`, st.BaseURL, o.AdminToken, d.CompanyID, d.APIKey, o.LogDir)
		printPprof(st)
		<-ctx.Done()
		fmt.Println("\nstopping...")
		return nil
	}
	if err := ensureDemoConnection(st.BaseURL, o.AdminToken, &d, statePath); err != nil {
		return err
	}
	chat, err := demoInbound(st.BaseURL, o.AdminToken, d)
	if err != nil {
		return err
	}
	fmt.Printf(`
Switchboard is running.

  Base URL:        %[1]s
  Operator token:  %[2]s
  Demo company:    %[3]d
  Demo API key:    %[4]s
  Demo connection: %[6]d (telegram, authorised in test mode)
  Logs:            %[5]s

Try it:

  curl -s %[1]s/v2/companies/%[3]d -H 'X-Api-Key: %[4]s'
  curl -s %[1]s/v2/companies/%[3]d/connections/ -H 'X-Api-Key: %[4]s'

A person has written to the demo connection (chat %[7]d); read and answer:

  curl -s '%[1]s/v2/companies/%[3]d/messaging/messages/?chat_id=%[7]d' -H 'X-Api-Key: %[4]s'
  curl -s -X POST %[1]s/v2/companies/%[3]d/messaging/messages/ -H 'X-Api-Key: %[4]s' \
    -d '{"chat_id": %[7]d, "message_type": "text", "text": {"text": "Hello, Bob"}}'

README.md ("Walk-through") goes on from here: connections and logins,
messages, webhooks, contacts, files and templates.

Ctrl-C stops everything.
`, st.BaseURL, o.AdminToken, d.CompanyID, d.APIKey, o.LogDir, d.ConnectionID, chat)
	printPprof(st)
	<-ctx.Done()
	fmt.Println("\nstopping...")
	return nil
}

// printPprof lists each process's profiling address, when
// SWITCHBOARD_PPROF_BASE_PORT gave them one.
func printPprof(st *devstack.Stack) {
	if len(st.PprofAddrs) == 0 {
		return
	}
	fmt.Println("Profiling (net/http/pprof):")
	fmt.Println()
	for _, name := range append([]string{"gateway"}, devstackNames()...) {
		fmt.Printf("  %-12s http://%s/debug/pprof/\n", name, st.PprofAddrs[name])
	}
	fmt.Printf("\n  go tool pprof -top 'http://%s/debug/pprof/profile?seconds=10'\n\n", st.PprofAddrs["gateway"])
}

func devstackNames() []string {
	var out []string
	for _, s := range devstack.Services {
		out = append(out, s.Name)
	}
	return out
}

// ensureDemo reuses the saved demo company and key. When the key no longer
// works (it was reset through the API, say) the company stays, so every id
// the README and the last run showed stays true: the operator API issues it
// a new key, and notice says so. Only a company that no longer exists (a
// new database under an old .run/demo.json) is made again.
func ensureDemo(base, token, path string) (d demo, notice string, err error) {
	op := client{base: base, token: token}
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &d) == nil && d.CompanyID != 0 {
		if d.APIKey != "" {
			if _, err := (client{base: base, key: d.APIKey}).do(http.MethodGet, fmt.Sprintf("/v2/companies/%d", d.CompanyID), nil, false); err == nil {
				return d, "", nil
			}
		}
		out, err := op.do(http.MethodPost, fmt.Sprintf("/admin/v1/companies/%d/api_keys", d.CompanyID),
			map[string]any{"name": "Demo key", "scopes": auth.Scopes}, true)
		switch {
		case err == nil:
			key, _ := out["api_key"].(string)
			if key == "" {
				return d, "", errors.New("issue a demo key: no key in the answer")
			}
			d.APIKey = key
			notice := fmt.Sprintf("The saved key of demo company %[1]d no longer works (was it reset?): a new key was issued\n"+
				"for it through the operator API (POST /admin/v1/companies/%[1]d/api_keys). The company and its ids are unchanged.",
				d.CompanyID)
			return d, notice, save(d, path)
		case !strings.Contains(err.Error(), "HTTP 404"):
			return d, "", fmt.Errorf("issue a new key for demo company %d: %w", d.CompanyID, err)
		}
		notice = fmt.Sprintf("Demo company %d of %s no longer exists (a new database?): a new demo company was made.", d.CompanyID, path)
	}
	out, err := op.do(http.MethodPost, "/admin/v1/companies", map[string]any{
		"name": "Demo company", "owner_email": "demo@example.com", "owner_name": "Demo Owner",
	}, true)
	if err != nil {
		return d, "", fmt.Errorf("create demo company: %w", err)
	}
	company, _ := out["company"].(map[string]any)
	id, _ := company["id"].(float64)
	apiKey, _ := out["api_key"].(string)
	if apiKey == "" {
		return d, "", errors.New("create demo company: no key in the answer")
	}
	d = demo{CompanyID: int64(id), APIKey: apiKey}
	return d, notice, save(d, path)
}

func save(d demo, path string) error {
	b, _ := json.MarshalIndent(d, "", "  ")
	return os.WriteFile(path, b, 0o600)
}

// ensureDemoConnection keeps one authorised telegram connection in the demo
// company, made the way a client would: a sandbox account, a QR login that
// the account scans, then the connection from the authenticated session.
func ensureDemoConnection(base, token string, d *demo, path string) error {
	c := client{base: base, token: token, key: d.APIKey}
	if d.ConnectionID != 0 {
		if _, err := c.do(http.MethodGet, fmt.Sprintf("/v2/companies/%d/connections/%d", d.CompanyID, d.ConnectionID), nil, false); err == nil {
			return nil
		}
	}
	const phone = "+79990000001"
	if _, err := c.do(http.MethodPost, "/sandbox/v1/accounts", map[string]any{
		"messenger": "telegram", "phone": phone, "username": "switchboard_demo", "name": "Demo Account",
	}, true); err != nil {
		return err
	}
	sess, err := c.do(http.MethodPost, fmt.Sprintf("/v2/companies/%d/telegram/init", d.CompanyID), map[string]any{"auth_type": "qr"}, false)
	if err != nil {
		return err
	}
	sid, _ := sess["session_id"].(string)
	if _, err := c.do(http.MethodPost, "/sandbox/v1/sessions/"+sid+"/scan", map[string]any{"phone": phone}, true); err != nil {
		return err
	}
	if _, err := c.do(http.MethodPost, fmt.Sprintf("/v2/companies/%d/telegram/login", d.CompanyID), map[string]any{"session_id": sid}, false); err != nil {
		return err
	}
	conn, err := c.do(http.MethodPost, fmt.Sprintf("/v2/companies/%d/connections/", d.CompanyID), map[string]any{
		"name": "Demo Telegram", "type": "telegram", "params": map[string]any{"session_id": sid},
	}, false)
	if err != nil {
		return err
	}
	id, _ := conn["id"].(float64)
	d.ConnectionID = int64(id)
	return save(*d, path)
}

// demoInbound has a person write to the demo connection through the
// sandbox (once: the source message id makes a repeat a no-op) and answers
// the chat's id.
func demoInbound(base, token string, d demo) (int64, error) {
	c := client{base: base, token: token, key: d.APIKey}
	if _, err := c.do(http.MethodPost, fmt.Sprintf("/sandbox/v1/connections/%d/inbound", d.ConnectionID), map[string]any{
		"chat":    map[string]any{"user_id": "5550001", "name": "Bob"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "Hi! Is the demo working?"}, "source_message_id": "demo-hello"},
	}, true); err != nil {
		return 0, err
	}
	chat, err := c.do(http.MethodGet, fmt.Sprintf("/v2/companies/%d/messaging/chats/by_source/?connection_id=%d&source_chat_id=5550001",
		d.CompanyID, d.ConnectionID), nil, false)
	if err != nil {
		return 0, err
	}
	id, _ := chat["id"].(float64)
	return int64(id), nil
}

// client calls the running gateway with the demo key, or with the operator
// token for the operator and sandbox APIs.
type client struct{ base, token, key string }

func (c client) do(method, path string, body any, operator bool) (map[string]any, error) {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if operator {
		req.Header.Set("Authorization", "Bearer "+c.token)
	} else {
		req.Header.Set("X-Api-Key", c.key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != http.StatusOK {
		return out, fmt.Errorf("%s %s: HTTP %d %v", method, path, res.StatusCode, out)
	}
	return out, nil
}
