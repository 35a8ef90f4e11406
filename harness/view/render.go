package view

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"log"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// pageNames are the templates under assets/, each rendered inside
// layout.html; routing.html is a section the run and matrix pages share.
var pageNames = []string{"index", "matrix", "run", "tasks", "curves", "iteration", "trial", "skill", "calls"}

func parsePages() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/routing.html", "assets/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse the %s page: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// page is what the layout needs besides a page's own data.
type page struct {
	Title string
	// Crumbs lead back from the page to the index.
	Crumbs []crumb
	// Refresh reloads a page of a running run every few seconds.
	Refresh bool
	Data    any
}

type crumb struct{ Name, URL string }

// crumbs is the trail from the index to t's page.
func crumbs(t target) []crumb {
	out := []crumb{{"runs", "/"}}
	if t.Rel == "" {
		return out
	}
	parts := strings.Split(t.Rel, "/")
	for i := range parts {
		rel := strings.Join(parts[:i+1], "/")
		out = append(out, crumb{parts[i], dirURL(rel)})
	}
	return out
}

// dirURL is the page of a directory: the matrix page for a matrix, the
// run page for a run (the run page redirects when it is a matrix).
func dirURL(rel string) string { return pageURL("run", rel, nil) }

// pageURL builds /<kind>/<rel>?<query>, escaping each path element.
func pageURL(kind, rel string, q url.Values) string {
	var b strings.Builder
	b.WriteString("/" + kind + "/")
	for i, p := range strings.Split(rel, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(url.PathEscape(p))
	}
	if len(q) > 0 {
		b.WriteString("?" + q.Encode())
	}
	return b.String()
}

func (s *Server) render(w http.ResponseWriter, name string, p page) {
	var buf bytes.Buffer
	if err := s.pages[name].Execute(&buf, p); err != nil {
		log.Printf("view: render %s: %v", name, err)
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

// fail answers an error: 404 for what is not there, 500 for what could not
// be read.
// handle adapts a page handler that returns its error: the error becomes
// the response (404 for errNotFound, 500 otherwise), so no handler writes
// it itself.
func handle(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			fail(w, err)
		}
	}
}

func fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, errNotFound) {
		code = http.StatusNotFound
	}
	http.Error(w, err.Error(), code)
}

var funcs = template.FuncMap{
	"num": func(v *float64) string {
		if v == nil {
			return "–"
		}
		return strconv.FormatFloat(*v, 'f', 3, 64)
	},
	"f3":  func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) },
	"usd": func(v float64) string { return "$" + strconv.FormatFloat(v, 'f', 4, 64) },
	"tokens": func(n int64) string {
		switch {
		case n >= 1_000_000:
			return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
		case n >= 10_000:
			return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
		}
		return strconv.FormatInt(n, 10)
	},
	"ms":   func(n int64) string { return (time.Duration(n) * time.Millisecond).String() },
	"dur":  func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"when": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"short": func(h string) string {
		h = strings.TrimPrefix(h, "sha256:")
		if len(h) > 12 {
			return h[:12]
		}
		return h
	},
	"url": pageURL,
	"q": func(kv ...any) url.Values {
		q := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			q.Set(fmt.Sprint(kv[i]), fmt.Sprint(kv[i+1]))
		}
		return q
	},
	"add":    func(a, b int) int { return a + b },
	"add64":  func(a, b int64) int64 { return a + b },
	"mul100": func(v float64) float64 { return v * 100 },
	"deref":  func(b *bool) bool { return b != nil && *b },
	// count and optms show a nullable metric column, NULL as a dash.
	"count": func(n *int32) string {
		if n == nil {
			return "–"
		}
		return strconv.Itoa(int(*n))
	},
	"optms": func(n *int64) string {
		if n == nil {
			return "–"
		}
		return (time.Duration(*n) * time.Millisecond).String()
	},
}
