package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// PprofAddrEnv names the variable that turns on a process's profiling
// listener: a host:port such as 127.0.0.1:6061, or 127.0.0.1:0 for any free
// port (the bound address is logged). Empty or unset, nothing listens.
const PprofAddrEnv = "SWITCHBOARD_PPROF_ADDR"

// ServePprof serves the net/http/pprof handlers under /debug/pprof/ on addr
// until stop is called, and answers the bound address; addr "" serves
// nothing and answers "" (stop is then a no-op). The port is bound before it
// returns, so a taken port fails the process at start instead of leaving it
// unprofilable unnoticed; stop has closed the port when it returns.
//
// The handlers sit on their own mux and listener, never on the API's: the
// profiles expose internals (command line, heap contents) and cost CPU, so
// they are reachable only where the operator chose to bind them.
func ServePprof(log *slog.Logger, addr string) (bound string, stop func(), err error) {
	if addr == "" {
		return "", func() {}, nil
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("pprof: listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// No write timeout: a CPU profile or trace answers only after the
	// seconds it was asked to record.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	bound = lis.Addr().String()
	if ip := lis.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		log.Warn("pprof listens beyond loopback: anyone who reaches it can read the process's memory profile", "addr", bound)
	}
	log.Info("pprof serving", "addr", bound)
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("pprof stopped", "error", err.Error())
		}
	}()
	// A profile being recorded is cut short: the process is stopping.
	return bound, func() { _ = srv.Close() }, nil
}
