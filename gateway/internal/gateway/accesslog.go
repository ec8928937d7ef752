package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"switchboard.dev/gateway/internal/httpapi"
)

// accessLines writes the access log's line itself, byte for byte the line
// the process's logger (logging.New: slog's JSON handler with the trace
// ids) writes for it: slog's generic record, its handler state and the
// duration written through encoding/json were 4 to 7 % of the gateway's
// CPU per read (issue 32's profiles). TestAccessLineAsTheLoggers holds the
// two to the same bytes.
type accessLines struct {
	log *slog.Logger
	w   io.Writer
	// service is the logger's "service" attribute.
	service string
}

var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// write logs one request, unless the logger's level leaves info out.
func (a *accessLines) write(ctx context.Context, t time.Time, r *http.Request, status int, ms float64) {
	if !a.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	bp := lineBuffers.Get().(*[]byte)
	b := appendAccessLine((*bp)[:0], t, a.service, r.Method, r.URL.Path, status, ms, trace.SpanContextFromContext(ctx))
	_, _ = a.w.Write(b)
	*bp = b
	lineBuffers.Put(bp)
}

// appendAccessLine is the line logging.New's handler writes for
// LogAttrs(ctx, Info, "http", method, path, status, duration_ms) with the
// logger's service attribute.
func appendAccessLine(b []byte, t time.Time, service, method, path string, status int, ms float64, sc trace.SpanContext) []byte {
	b = append(b, `{"time":"`...)
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":"http","service":`...)
	b = httpapi.AppendString(b, service)
	b = append(b, `,"method":`...)
	b = httpapi.AppendString(b, method)
	b = append(b, `,"path":`...)
	b = httpapi.AppendString(b, path)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"duration_ms":`...)
	b = httpapi.AppendFloat(b, ms)
	if sc.IsValid() {
		tid, sid := sc.TraceID(), sc.SpanID()
		b = append(b, `,"trace_id":"`...)
		b = appendHex(b, tid[:])
		b = append(b, `","span_id":"`...)
		b = appendHex(b, sid[:])
		b = append(b, '"')
	}
	return append(b, "}\n"...)
}

func appendHex(b, src []byte) []byte {
	const digits = "0123456789abcdef"
	for _, c := range src {
		b = append(b, digits[c>>4], digits[c&0xf])
	}
	return b
}
