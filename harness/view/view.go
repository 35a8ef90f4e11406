// Package view serves run and matrix directories to a browser: a local,
// read-only viewer behind `harness view`. It reads the same files as
// `harness inspect`, through the same readers, and writes nothing. Pages
// and assets are embedded, so the viewer needs no network and no build
// step; each page loads only what it shows, and results computed from
// metrics are kept until the files under them change.
package view

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

//go:embed assets
var assets embed.FS

// Server answers the viewer's pages for the run and matrix directories
// under one root.
type Server struct {
	root  string // absolute, symlinks resolved
	pages map[string]*template.Template
	cache *cache
}

// New returns a Server for root: a directory of runs and matrices
// (data/experiments), or one run or matrix directory.
func New(root string) (*Server, error) {
	abs, err := filepath.Abs(root)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s does not exist: pass a directory of runs (data/experiments) or one run or matrix directory", root)
		}
		return nil, fmt.Errorf("open %s: %w", root, err)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	return &Server{root: abs, pages: pages, cache: newCache(64)}, nil
}

// Handler routes every page. URLs name directories by their path under
// the root, so a link stays valid as long as the directory does.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", handle(s.index))
	mux.HandleFunc("GET /matrix/{dir...}", handle(s.matrix))
	mux.HandleFunc("GET /run/{dir...}", handle(s.run))
	mux.HandleFunc("GET /tasks/{dir...}", handle(s.tasks))
	mux.HandleFunc("GET /curves/{dir...}", handle(s.curves))
	mux.HandleFunc("GET /iteration/{dir...}", handle(s.iteration))
	mux.HandleFunc("GET /trial/{dir...}", handle(s.trial))
	mux.HandleFunc("GET /skill/{dir...}", handle(s.skill))
	mux.HandleFunc("GET /calls/{dir...}", handle(s.calls))
	return mux
}

// Listen opens the viewer's socket on 127.0.0.1 (never another
// interface: the pages show prompts and transcripts). Port 0 picks a free
// port.
func Listen(port int) (net.Listener, error) {
	if port < 0 || port > 65535 {
		return nil, fmt.Errorf("port %d is out of range: use 1 to 65535, or 0 for any free port", port)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listen on 127.0.0.1:%d: %w (is another viewer running? try --port 0)", port, err)
	}
	return ln, nil
}

// Serve answers on ln until ctx is done, then shuts down, giving pages in
// flight a moment to finish. Meanwhile it reads the newest directories'
// views ahead (see warm).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	go s.warm(ctx)
	select {
	case err := <-done:
		return fmt.Errorf("serve the viewer: %w", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		return fmt.Errorf("stop the viewer: %w", err)
	}
	<-done
	return nil
}

// URL is the address a browser opens for ln.
func URL(ln net.Listener) string { return "http://" + ln.Addr().String() + "/" }
