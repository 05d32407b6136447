package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Paths the Server answers.
const (
	PathMetrics = "/metrics"
	PathHealthz = "/healthz"
	PathReadyz  = "/readyz"
)

// NewRegistry returns an empty registry holding only the Go runtime and
// process collectors. Each node has its own (tests run several nodes in one
// process), so nothing registers on the global default registry.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// ReadyFunc reports whether the node is ready for traffic: nil when it is,
// otherwise an error whose text says what it still waits for. It is called
// on every /readyz request, from HTTP goroutines, so it must be safe for
// concurrent use and quick.
type ReadyFunc func() error

// Server is the HTTP listener of /metrics, /healthz and /readyz. Its
// goroutine is owned by the Server and ends in Close.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
	log  *slog.Logger
}

// Listen binds addr (host:port; port 0 picks a free one) and serves on it
// with Serve.
func Listen(addr string, g prometheus.Gatherer, ready ReadyFunc, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener %s: %w", addr, err)
	}
	return Serve(ln, g, ready, log), nil
}

// Serve serves the endpoints on ln, which the Server owns from then on:
// /metrics gathers g, /readyz asks ready (nil ready: always ready).
func Serve(ln net.Listener, g prometheus.Gatherer, ready ReadyFunc, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{ln: ln, done: make(chan struct{}), log: log}
	mux := http.NewServeMux()
	mux.Handle(PathMetrics, promhttp.HandlerFor(g, promhttp.HandlerOpts{
		// A collector that fails reports its error in the scrape's log
		// line and the rest of the metrics are still served.
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      slogPrinter{log},
	}))
	mux.HandleFunc(PathHealthz, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc(PathReadyz, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ready != nil {
			if err := ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = fmt.Fprintf(w, "not ready: %v\n", err)
				return
			}
		}
		_, _ = fmt.Fprintln(w, "ready")
	})
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// A scrape of a large node may take a while to encode, but a
		// client that never reads must not pin a goroutine forever.
		WriteTimeout: time.Minute,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics listener stopped", "addr", ln.Addr().String(), "error", err)
		}
	}()
	log.Info("metrics listener started", "addr", ln.Addr().String(),
		"paths", []string{PathMetrics, PathHealthz, PathReadyz})
	return s
}

// Addr returns the bound address (the real port when 0 was asked).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops accepting, lets requests in flight finish until ctx ends,
// then closes what is left; it returns once the serving goroutine has
// ended.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	<-s.done
	return err
}

// slogPrinter adapts promhttp's error log to slog.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) {
	p.log.Warn("metrics scrape", "error", fmt.Sprint(v...))
}
