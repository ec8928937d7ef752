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
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

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
	flag.Parse()
	o.DBPrefix = "switchboard"
	o.LogDir = filepath.Join(dir, "logs")

	st, err := devstack.Start(ctx, o)
	if err != nil {
		return err
	}
	defer st.Stop()

	d, err := ensureDemo(st.BaseURL, o.AdminToken, filepath.Join(dir, "demo.json"))
	if err != nil {
		return err
	}
	fmt.Printf(`
Switchboard is running.

  Base URL:        %[1]s
  Operator token:  %[2]s
  Demo company:    %[3]d
  Demo API key:    %[4]s
  Logs:            %[5]s

Try it:

  curl -s %[1]s/v2/companies/%[3]d -H 'X-Api-Key: %[4]s'

Ctrl-C stops everything.
`, st.BaseURL, o.AdminToken, d.CompanyID, d.APIKey, o.LogDir)
	<-ctx.Done()
	fmt.Println("\nstopping...")
	return nil
}

// ensureDemo reuses the saved demo key while it still works, else creates
// the demo company through the operator API.
func ensureDemo(base, token, path string) (demo, error) {
	var d demo
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &d) == nil && d.APIKey != "" {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/v2/companies/%d", base, d.CompanyID), nil)
		req.Header.Set("X-Api-Key", d.APIKey)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return d, nil
			}
		}
	}
	body, _ := json.Marshal(map[string]any{"name": "Demo company", "owner_email": "demo@example.com", "owner_name": "Demo Owner"})
	req, _ := http.NewRequest(http.MethodPost, base+"/admin/v1/companies", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return d, err
	}
	defer res.Body.Close()
	var out struct {
		Company struct {
			ID int64 `json:"id"`
		} `json:"company"`
		APIKey string `json:"api_key"`
	}
	if res.StatusCode != http.StatusOK {
		return d, fmt.Errorf("create demo company: HTTP %d", res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return d, err
	}
	if out.APIKey == "" {
		return d, errors.New("create demo company: no key in the answer")
	}
	d = demo{CompanyID: out.Company.ID, APIKey: out.APIKey}
	b, _ := json.MarshalIndent(d, "", "  ")
	return d, os.WriteFile(path, b, 0o600)
}
