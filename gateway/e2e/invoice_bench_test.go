package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"switchboard.dev/pkg/auth"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
)

// Issue 27: invoice previews under load (readBenchClients workers back to
// back), through the gateway and over direct gRPC to billing, beside
// pgbench's select-only run on the same PostgreSQL before and after, as
// BenchmarkReads does. A preview is the invoice's whole computation: the
// subscriptions read, the membership asked of connections, the company's
// settings asked of identity, the prices, and the answer, all of it done
// again by each request; nothing is stored. The item is a STANDARD
// subscription of size 2 in a paid period (top-up and upgrade) and 20
// business dialogs. Run with `make bench BENCH=InvoicePreview`.
func BenchmarkInvoicePreview(b *testing.B) {
	duration := 5 * time.Second
	c := newCompany(b, nil)
	wa := mustCreate(b, c, "whatsapp", nil)
	sub := wa["subscription_id"]
	paid := time.Now().Add(20 * 24 * time.Hour).UTC().Format(time.RFC3339)
	r := api(b, "PATCH", p("/admin/v1/companies/%d/subscriptions/%v", c.ID, sub),
		map[string]any{"paid_until": paid, "clear_test_until": true}, operator()...)
	require.Equal(b, 200, r.Status, "%s", r.Body)
	body, err := json.Marshal(map[string]any{
		"items": []any{
			map[string]any{"type": "SUBSCRIPTION", "id": sub, "new_subscription_plan": "STANDARD", "new_size": 2},
			map[string]any{"type": "WABA_DIALOGS", "count": 20},
		},
		"payment_method": "CARD_RU", "period_months": 3,
	})
	require.NoError(b, err)
	subID := int64(sub.(float64))
	grpcReq := &billingv1.CreateInvoiceRequest{
		CompanyId: c.ID,
		Items: []*billingv1.InvoiceItemRequest{
			{Type: billingv1.InvoiceItemType_INVOICE_ITEM_TYPE_SUBSCRIPTION, Id: &subID,
				NewSubscriptionPlan: billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_STANDARD.Enum(), NewSize: ptrTo(int32(2))},
			{Type: billingv1.InvoiceItemType_INVOICE_ITEM_TYPE_WABA_DIALOGS, Count: ptrTo(int32(20))},
		},
		PaymentMethod: billingv1.PaymentMethod_PAYMENT_METHOD_CARD_RU.Enum(),
		PeriodMonths:  ptrTo(int32(3)),
	}
	pgbenchDSN := pgbenchInit(b)

	httpClient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: readBenchClients, MaxConnsPerHost: readBenchClients,
	}}
	url := stack.BaseURL + cpath(c, "/subscriptions/invoices/")
	preview := func() error {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("X-Api-Key", c.Key)
		res, err := httpClient.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("preview: %d %s", res.StatusCode, out)
		}
		return nil
	}
	var conns []*grpc.ClientConn
	for range readBenchClients {
		conn, err := grpc.NewClient(stack.Addrs["billing"], grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(b, err)
		b.Cleanup(func() { conn.Close() })
		conns = append(conns, conn)
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), auth.HeaderAPIKey, c.Key)
	procs := stackProcsOf(b, "billing")
	httpRun := func(d time.Duration) readRun {
		return withStackCPU(b, procs, func() readRun { return loadRun(b, d, func(int, int) error { return preview() }) })
	}
	grpcRun := func(d time.Duration) readRun {
		return withStackCPU(b, procs, func() readRun {
			return loadRun(b, d, func(w, _ int) error {
				_, err := billingv1.NewBillingServiceClient(conns[w]).CreateInvoice(ctx, grpcReq)
				return err
			})
		})
	}

	waitAutovacuum(b)
	httpRun(time.Second) // warm up: connections, keys, plans
	grpcRun(time.Second)
	var tps []float64
	runs := map[string][]readRun{}
	ratios := map[string][]float64{}
	tpsWarm, _ := pgbenchSelect(b, pgbenchDSN, duration)
	tps = append(tps, tpsWarm)
	for round := range readBenchRounds {
		h, g := httpRun(duration), grpcRun(duration)
		tpsWarm, _ := pgbenchSelect(b, pgbenchDSN, duration)
		tps = append(tps, tpsWarm)
		ref := (tps[round] + tps[round+1]) / 2
		for name, r := range map[string]readRun{"preview_http": h, "preview_grpc": g} {
			runs[name] = append(runs[name], r)
			ratios[name] = append(ratios[name], r.rate/ref)
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "invoice previews, %d clients, %v per run, %d rounds; pgbench -S on the same PostgreSQL: %s tps (mean %.0f)\n",
		readBenchClients, duration, readBenchRounds, joinFloats(tps), mean(tps))
	fmt.Fprintf(&out, "%-14s %10s %8s %8s %8s %8s  %s\n", "call", "req/s", "p50 ms", "p95 ms", "p99 ms", "ratio",
		"CPU µs per request: "+strings.Join(cpuParts[:], " / "))
	for _, name := range []string{"preview_http", "preview_grpc"} {
		var lat []time.Duration
		var rates []float64
		var cpu [4]float64
		for _, r := range runs[name] {
			lat = append(lat, r.lat...)
			rates = append(rates, r.rate)
			for i, d := range r.cpu {
				cpu[i] += float64(d.Microseconds()) / float64(len(runs[name]))
			}
		}
		slices.Sort(lat)
		ratio := mean(ratios[name])
		fmt.Fprintf(&out, "%-14s %10.0f %8.2f %8.2f %8.2f %8.4f  %.0f / %.0f / %.0f / %.0f\n", name, mean(rates),
			ms(percentile(lat, 50)), ms(percentile(lat, 95)), ms(percentile(lat, 99)), ratio, cpu[0], cpu[1], cpu[2], cpu[3])
		b.ReportMetric(ratio, name+"_ratio")
		b.ReportMetric(mean(rates), name+"_req/s")
		b.ReportMetric(ms(percentile(lat, 50)), name+"_p50_ms")
		b.ReportMetric(ms(percentile(lat, 99)), name+"_p99_ms")
	}
	b.ReportMetric(mean(tps), "pgbench_tps")
	fmt.Print("\n" + out.String())
}

func ptrTo[T any](v T) *T { return &v }
