// Command webhook-receiver is a webhook receiver for Switchboard, standard
// library only: it checks each request's Standard Webhooks signature with
// the subscription's secret, answers 200, and prints every event it
// accepts, once, as one line:
//
//	<webhook-id> <webhook-timestamp> <webhook-signature> <body>
//
// A request that fails the check is answered 401 (a 4xx is never retried)
// and reported on stderr. A GET answers {"accepted":<events so far>}, to
// see that it listens.
//
//	go build -o .bin/webhook-receiver docs/examples/webhook-receiver.go
//	.bin/webhook-receiver -listen 127.0.0.1:9000 -secret whsec_...
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// verify checks a delivery the Standard Webhooks way: the signature is
// "v1," + base64(HMAC-SHA256(key, id + "." + timestamp + "." + body)), key
// being the base64 part of the secret after "whsec_". The header may list
// several signatures, space-separated (while a secret is being rotated);
// one match is enough. A timestamp more than 5 minutes off is refused, so
// a captured request cannot be replayed later.
func verify(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return fmt.Errorf("the secret is not whsec_<base64>: %w", err)
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || err != nil {
		return errors.New("no webhook-id or webhook-timestamp")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("timestamp %s is too far from now", ts)
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.", id, ts)
	mac.Write(body)
	want := []byte("v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return errors.New("no valid signature")
}

func main() {
	listen := flag.String("listen", "127.0.0.1:9000", "address to listen on")
	secret := flag.String("secret", os.Getenv("WEBHOOK_SECRET"), "the subscription's secret, whsec_... (default $WEBHOOK_SECRET)")
	flag.Parse()
	if *secret == "" {
		log.Fatal("webhook-receiver: -secret is required")
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method != http.MethodPost {
			fmt.Fprintf(w, "{\"accepted\":%d}\n", len(seen))
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := verify(*secret, r.Header, body, time.Now()); err != nil {
			log.Printf("refused %s: %v", r.Header.Get("webhook-id"), err)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		// Delivery is at least once: an event may come again, with the
		// same webhook-id. Act on it once.
		if id := r.Header.Get("webhook-id"); !seen[id] {
			seen[id] = true
			fmt.Printf("%s %s %s %s\n", id, r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), body)
		}
		w.WriteHeader(http.StatusOK)
	})
	log.Printf("webhook-receiver: listening on %s", *listen)
	log.Fatal(http.ListenAndServe(*listen, nil))
}
