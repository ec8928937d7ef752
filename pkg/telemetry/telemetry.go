// Package telemetry configures OpenTelemetry tracing from the standard OTEL_*
// environment variables. Without an exporter configured, spans are still
// created and propagated (W3C traceparent), so trace ids reach every log
// line and every downstream service.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// Setup installs the global tracer provider and propagator. The returned
// function flushes and stops the provider, waiting at most five seconds.
func Setup(ctx context.Context, service string) (func(), error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err != nil {
		res = resource.Default()
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if Exporting() {
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, fmt.Errorf("trace exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	} else {
		// Nothing would read the spans: make them non-recording. They
		// still carry trace and span ids (logs and traceparent keep
		// them), without the attributes and events a recording span
		// collects on every request.
		opts = append(opts, sdktrace.WithSampler(sdktrace.NeverSample()))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	otel.SetTracerProvider(tp)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = errors.Join(tp.ForceFlush(ctx), tp.Shutdown(ctx))
	}, nil
}

// Exporting: only when the deployment asked for an exporter, so local runs
// and tests do not try to reach a collector that is not there.
func Exporting() bool {
	if v := os.Getenv("OTEL_TRACES_EXPORTER"); v != "" {
		return v != "none"
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}
