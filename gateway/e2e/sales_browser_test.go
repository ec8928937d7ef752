package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The storefront page in headless Chromium, driven over the DevTools
// protocol on a pipe (--remote-debugging-pipe: JSON messages ended by NUL
// on file descriptors 3 and 4), so that the test can tap buttons as a
// buyer does without a Go dependency.

// cdp is one Chromium and its protocol pipe.
type cdp struct {
	t       *testing.T
	in      *os.File // Chromium reads our messages here (its fd 3)
	mu      sync.Mutex
	nextID  int
	waiting map[int]chan json.RawMessage
	session string
	// exited is closed when Chromium has ended.
	exited chan struct{}
}

// close asks Chromium to quit and waits for it, so that its NetLog is
// whole.
func (c *cdp) close() {
	c.t.Helper()
	raw, _ := json.Marshal(map[string]any{"id": 1 << 30, "method": "Browser.close"})
	_, _ = c.in.Write(append(raw, 0))
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		c.t.Fatal("chromium did not quit")
	}
}

func (c *cdp) read(out *os.File) {
	r := bufio.NewReader(out)
	for {
		msg, err := r.ReadBytes(0)
		if err != nil {
			return
		}
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(bytes.TrimSuffix(msg, []byte{0}), &m) != nil || m.ID == 0 {
			continue // an event
		}
		c.mu.Lock()
		ch := c.waiting[m.ID]
		delete(c.waiting, m.ID)
		c.mu.Unlock()
		if ch != nil {
			if m.Error != nil {
				ch <- append([]byte(`{"cdp_error":`), append(m.Error, '}')...)
			} else {
				ch <- m.Result
			}
		}
	}
}

// send calls one method (on the attached page once there is one) and
// decodes its result into out.
func (c *cdp) send(method string, params map[string]any, out any) {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan json.RawMessage, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if c.session != "" && !strings.HasPrefix(method, "Target.") {
		msg["sessionId"] = c.session
	}
	raw, err := json.Marshal(msg)
	require.NoError(c.t, err)
	_, err = c.in.Write(append(raw, 0))
	require.NoError(c.t, err)
	select {
	case res := <-ch:
		require.NotContains(c.t, string(res), `"cdp_error"`, "%s: %s", method, res)
		if out != nil {
			require.NoError(c.t, json.Unmarshal(res, out), "%s: %s", method, res)
		}
	case <-time.After(30 * time.Second):
		c.t.Fatalf("chromium did not answer %s", method)
	}
}

// eval runs a script in the page and answers its value.
func (c *cdp) eval(expr string) any {
	c.t.Helper()
	var res struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails any `json:"exceptionDetails"`
	}
	c.send("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res)
	require.Nil(c.t, res.ExceptionDetails, "%s", expr)
	return res.Result.Value
}

// until polls expr until it is true.
func (c *cdp) until(expr, what string) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if v, _ := c.eval(expr).(bool); v {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("the page never showed %s; its text: %v", what, c.eval("document.body.innerText"))
}

// screenshot saves the page as a PNG among the test's artifacts.
func (c *cdp) screenshot(name string) string {
	c.t.Helper()
	var shot struct {
		Data string `json:"data"`
	}
	c.send("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &shot)
	raw, err := base64.StdEncoding.DecodeString(shot.Data)
	require.NoError(c.t, err)
	path := filepath.Join(artifacts(c.t), name)
	require.NoError(c.t, os.WriteFile(path, raw, 0o644))
	_, err = png.Decode(bytes.NewReader(raw))
	require.NoError(c.t, err, "the screenshot is no PNG")
	c.t.Logf("screenshot: %s", path)
	return path
}

// openChromium starts headless Chromium with a phone's screen and opens
// pageURL; every host but the gateway's is unresolvable.
func openChromium(t *testing.T, pageURL, netlog string) *cdp {
	t.Helper()
	base, err := url.Parse(stack.BaseURL)
	require.NoError(t, err)
	ourIn, chromeIn, err := os.Pipe() // chromeIn: what we write
	require.NoError(t, err)
	chromeOut, ourOut, err := os.Pipe()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, chromiumPath(t),
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--disable-quic", "--no-proxy-server",
		"--user-data-dir="+t.TempDir(),
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE "+base.Hostname(),
		"--log-net-log="+netlog,
		"--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{ourIn, ourOut} // fd 3: Chromium reads, fd 4: it writes
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	ourIn.Close()
	ourOut.Close()
	c := &cdp{t: t, in: chromeIn, waiting: map[int]chan json.RawMessage{}, exited: make(chan struct{})}
	go c.read(chromeOut)
	go func() {
		_ = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		chromeIn.Close()
		cancel()
		<-c.exited
		_ = os.WriteFile(filepath.Join(artifacts(t), "chromium.log"), stderr.Bytes(), 0o644)
	})

	var target struct {
		TargetID string `json:"targetId"`
	}
	c.send("Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	c.send("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	c.session = attached.SessionID
	c.send("Page.enable", nil, nil)
	c.send("Runtime.enable", nil, nil)
	// A phone: 390 x 844 CSS pixels at 2x.
	c.send("Emulation.setDeviceMetricsOverride", map[string]any{"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": true}, nil)
	c.send("Page.navigate", map[string]any{"url": pageURL}, nil)
	return c
}

// slPNG is a real PNG: a square of one colour with a lighter circle.
func slPNG(t *testing.T, bg, fg color.RGBA) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 240, 240))
	for y := 0; y < 240; y++ {
		for x := 0; x < 240; x++ {
			dx, dy := x-120, y-120
			if dx*dx+dy*dy < 70*70 {
				img.Set(x, y, fg)
			} else {
				img.Set(x, y, bg)
			}
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

// TestSalesStorefrontInChromium: a buyer opens the shop's page with
// signed launch data in the fragment (as Telegram passes it), sees the
// products with their images and prices, adds two to the cart and places
// the order; the order is the company's service_order message.
func TestSalesStorefrontInChromium(t *testing.T) {
	f := slNewShop(t)
	// A product with an uploaded image (a real PNG), and one with none.
	up := func(name string, data []byte) string {
		r, _ := upload(t, f.c.ID, f.c.Key, filePart{field: "file", filename: name, contentType: "image/png", size: int64(len(data)), head: data})
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return r.JSON(t)["url"].(string)
	}
	beansImg := up("beans.png", slPNG(t, color.RGBA{111, 78, 55, 255}, color.RGBA{196, 164, 132, 255}))
	slOK(t, slCall(t, f.c, "PATCH", p("/products/%d", f.beans), map[string]any{"images": []any{beansImg}}))
	teaImg := up("tea.png", slPNG(t, color.RGBA{46, 125, 50, 255}, color.RGBA{165, 214, 167, 255}))
	tea := slID(slOK(t, slCall(t, f.c, "POST", "/products/", map[string]any{"name": "Green tea", "description": "Sencha, 100 g",
		"category": "Tea", "images": []any{teaImg}, "prices": []any{slPrice("RUB", 390)}})))
	slOK(t, slAdd(t, f.c, f.catalog, tea))

	buyer := int64(6660000 + time.Now().UnixNano()%10000)
	launch := slLaunch(f.token, "AAbrowser", buyer, time.Now())
	theme := `{"bg_color":"#1c1c1d","text_color":"#ffffff","hint_color":"#aaaaaa","secondary_bg_color":"#2c2c2e","button_color":"#e8a33d","button_text_color":"#1c1c1d"}`
	pageURL := p("%s/storefront/v1/shops/%d#tgWebAppData=%s&tgWebAppVersion=8.0&tgWebAppPlatform=ios&tgWebAppThemeParams=%s",
		stack.BaseURL, f.shop, url.QueryEscape(launch), url.QueryEscape(theme))
	netlog := filepath.Join(t.TempDir(), "netlog.json")
	c := openChromium(t, pageURL, netlog)

	c.until(`document.querySelectorAll('#products .product').length === 3`, "three products")
	require.Equal(t, "Coffee corner", c.eval(`document.getElementById('shop-name').textContent`))
	text := c.eval(`document.getElementById('products').innerText`).(string)
	for _, s := range []string{"Espresso beans", "1 kg, medium roast", "Mug", "Green tea", "Sencha, 100 g"} {
		require.Contains(t, text, s)
	}
	require.Contains(t, text, "1,290.50") // RUB, en
	c.until(`Array.from(document.querySelectorAll('#products img')).filter(i => i.complete && i.naturalWidth === 240).length === 2`, "both product images loaded")
	// The messenger's colours (use_device_color_scheme).
	require.Equal(t, "rgb(28, 28, 29)", c.eval(`getComputedStyle(document.body).backgroundColor`))
	// The cart: beans x2 and one tea.
	require.Equal(t, true, c.eval(`document.getElementById('cart').hidden`))
	c.eval(fmt.Sprintf(`document.querySelector('[data-product="%d"]').click()`, f.beans))
	c.eval(fmt.Sprintf(`document.querySelector('.product[data-id="%d"] .plus').click()`, f.beans))
	c.eval(fmt.Sprintf(`document.querySelector('[data-product="%d"]').click()`, tea))
	c.eval(`document.getElementById('comment').value = 'Leave at the door'`)
	c.until(`!document.getElementById('cart').hidden && document.getElementById('order').textContent.includes('2,971.00')`, "the cart's total")
	c.screenshot("storefront.png")

	c.eval(`document.getElementById('order').click()`)
	c.until(`!!document.body.getAttribute('data-order-id')`, "the placed order")
	orderID := c.eval(`document.body.getAttribute('data-order-id')`).(string)
	require.Contains(t, c.eval(`document.getElementById('done-text').textContent`), orderID)
	c.screenshot("ordered.png")

	// The order, through the API: the buyer's service_order message.
	ck := newKey(t, f.c.ID, "messaging")
	rc := api(t, "GET", cpath(f.c, "/messaging/chats/by_source/?connection_id=%d&source_chat_id=%d", f.bot, buyer), nil, key(ck)...)
	chat := requireJSON(t, rc, 200, anyPresent).(map[string]any)
	list := inboundMessages(t, company{ID: f.c.ID, Key: ck}, chat["id"])
	require.Len(t, list, 1)
	requireValue(t, inboundMessageJSON(p("storefront_order_%s", orderID), p("%d", buyer), "service_order", map[string]any{
		"order_id": orderID, "shop_id": f.shop, "catalog_id": f.catalog, "currency": "RUB", "amount": 2971,
		"items": []any{
			map[string]any{"product_id": f.beans, "name": "Espresso beans", "price": 1290.5, "quantity": 2},
			map[string]any{"product_id": tea, "name": "Green tea", "price": 390, "quantity": 1},
		},
		"comment": "Leave at the door",
	}, nil, nil), list[0])

	// The page asked nothing of another origin but the messenger's script
	// (which, with no host resolving, did not load: the page works without).
	c.close()
	base := strings.TrimSuffix(stack.BaseURL, "/")
	for _, u := range pageRequests(t, netlog, base) {
		if !strings.HasPrefix(u, base+"/") && u != "https://telegram.org/js/telegram-web-app.js" {
			t.Errorf("the page asked for %s", u)
		}
	}
}
