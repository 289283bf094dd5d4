// Package console is hearth's web console at /console: what runs now, the stored
// responses, chains as people read them, and usage per key and model. Pages are
// html/template (escaped everywhere: items hold user and model text); the only script is
// console.js (which also draws the usage charts, on canvases), served from the binary
// under a Content-Security-Policy that allows nothing else.
package console

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"hearth"
)

//go:embed assets templates
var files embed.FS

// Prefix is where the console is mounted.
const Prefix = "/console"

// CookieName is the session cookie.
const CookieName = "hearth_console"

// DefaultSessionTTL is how long a login lasts: a working day.
const DefaultSessionTTL = 12 * time.Hour

// maxSessions bounds the sessions kept in memory; the oldest goes first.
const maxSessions = 1024

// Key is what Config.CheckKey knows of a key.
type Key struct {
	Name  string
	Admin bool
	// Hash is storage.OwnerOf of a database key, re-checked on every request of a
	// session so that a revoked key's session ends; empty for configured keys.
	Hash string
}

// ErrBadKey is CheckKey's answer for a key that is unknown or revoked.
var ErrBadKey = errors.New("console: incorrect or revoked key")

// Config wires the console to hearth.
type Config struct {
	DB Store
	// KeysRequired reports whether the server requires keys (configured ones, or any
	// in the database). Without keys the console is as open as the API: loopback only,
	// which the server's boundary checks enforce.
	KeysRequired func(context.Context) (bool, error)
	// CheckKey looks up a key a person typed in (ErrBadKey when it is not valid).
	CheckKey func(ctx context.Context, key string) (Key, error)
	// StillValid re-checks a database key by hash (nil error: still active).
	StillValid func(ctx context.Context, hash string) error
	// KeyNames maps owners (storage.OwnerOf of a key) to key names, for display and
	// for the key filter.
	KeyNames func(context.Context) (map[string]string, error)
	// Live returns the runtime's and admission's state for the live view.
	Live func(context.Context) Live
	// HostedView shows the items of hosted tool kinds (MCP's); ok false, or nil,
	// leaves an item to the console's own views (an unknown type shows its JSON).
	HostedView func(hearth.Item) (v HostedItem, ok bool)
	// SessionTTL is how long a login lasts; zero means DefaultSessionTTL.
	SessionTTL time.Duration
	// Now is the clock (tests move it); nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// HostedItem is an item of a hosted tool kind as a chain view shows it: Kind is the
// kind's tool type ("mcp"); Args and Text are pretty-printed when they are JSON.
type HostedItem struct {
	Kind, Name, Args, Text string
}

// Live is the state the live view shows.
type Live struct {
	Runtimes []Runtime
	// Slots is how many generations of one model run at once; MaxQueue how many wait.
	Slots, MaxQueue int
	Lanes           []Lane
	Speeds          []ModelSpeed
}

// Runtime is one runtime and the models it has loaded.
type Runtime struct {
	Name     string
	Embedded bool
	Up       bool
	Error    string
	Models   []LoadedModel
}

// LoadedModel is a model in a runtime's memory (Ollama's /api/ps).
type LoadedModel struct {
	Name          string
	Size, VRAM    int64
	ContextLength int
	ExpiresAt     time.Time
}

// Lane is one model's slots in use and queue.
type Lane struct {
	Model            string
	Running, Waiting int
}

// Console serves /console.
type Console struct {
	cfg   Config
	log   *slog.Logger
	pages map[string]*template.Template
	mux   *http.ServeMux

	mu       sync.Mutex
	sessions map[string]session
}

type session struct {
	key     Key
	expires time.Time
	created time.Time
}

// New builds a Console.
func New(cfg Config) *Console {
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Console{cfg: cfg, log: cfg.Logger, sessions: map[string]session{}, pages: parsePages()}
	m := http.NewServeMux()
	assets, _ := fs.Sub(files, "assets")
	m.Handle("GET "+Prefix+"/assets/", http.StripPrefix(Prefix+"/assets/", cacheAssets(http.FileServerFS(assets))))
	m.HandleFunc("GET "+Prefix+"/login", c.loginForm)
	m.HandleFunc("POST "+Prefix+"/login", c.login)
	m.HandleFunc("POST "+Prefix+"/logout", c.logout)
	m.HandleFunc("GET "+Prefix+"/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
	})
	m.Handle("GET "+Prefix, c.private(c.live))
	m.Handle("GET "+Prefix+"/live/fragment", c.private(c.liveFragment))
	m.Handle("GET "+Prefix+"/responses", c.private(c.stored(c.responses)))
	m.Handle("GET "+Prefix+"/chain/{id}", c.private(c.stored(c.chain)))
	m.Handle("GET "+Prefix+"/response/{id}", c.private(c.stored(c.response)))
	m.Handle("GET "+Prefix+"/files", c.private(c.stored(c.files)))
	m.Handle("GET "+Prefix+"/file/{id}", c.private(c.stored(c.file)))
	m.Handle("GET "+Prefix+"/vector-stores", c.private(c.stored(c.vectorStores)))
	m.Handle("GET "+Prefix+"/vector-store/{id}", c.private(c.stored(c.vectorStore)))
	m.Handle("GET "+Prefix+"/usage", c.private(c.stored(c.usage)))
	m.Handle("GET "+Prefix+"/usage.json", c.private(c.stored(c.usageJSON)))
	c.mux = m
	return c
}

var pageNames = []string{"live", "responses", "chain", "response", "files", "file", "vectorstores", "vectorstore", "usage", "login", "error"}

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"ms":     func(d time.Duration) string { return formatMillis(d) },
		"when":   func(t time.Time) string { return formatTime(t) },
		"until":  formatExpiry,
		"bytes":  formatBytes,
		"size":   formatSize,
		"short":  shortID,
		"f1":     func(f float64) string { return formatFloat(f) },
		"inc":    func(i int) int { return i + 1 },
		"filter": filterURL,
	}
	pages := map[string]*template.Template{}
	for _, p := range pageNames {
		pages[p] = template.Must(template.New("").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/items.html", "templates/"+p+".html"))
	}
	// The live fragment is the live page's "live" block alone, for polling.
	return pages
}

func cacheAssets(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// ServeHTTP serves the console's routes; the server mounts it at Prefix behind its
// Host and Origin checks.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Scripts and styles only from hearth itself; no framing (clickjacking of the
	// logout and login forms), no referrer to other sites (response ids in URLs stay
	// here). Not no-referrer: with it browsers send "Origin: null" on the console's own
	// form posts, which the Origin checks must refuse.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	if r.Method == http.MethodPost && !sameOrigin(r) {
		c.fail(w, r, http.StatusForbidden, "origin_not_allowed", "Origin", "Console forms may only be sent from the console itself.")
		return
	}
	c.mux.ServeHTTP(w, r)
}

// sameOrigin reports whether a POST comes from a page of this server. Browsers send
// Origin on every POST; the server's boundary check already refused origins it does not
// allow, but the operator's --allow-origin list is for API clients, not for the
// console's forms. A request without Origin is no browser's, so no forged form.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return r.Header.Get("Sec-Fetch-Site") != "cross-site"
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// authState says who is asking.
type authState int

const (
	authOK authState = iota
	authNone
	authUser
	authBad
)

// who checks the session cookie (or a bearer key, for scripts) when keys are required.
func (c *Console) who(r *http.Request) (authState, error) {
	ctx := r.Context()
	required, err := c.cfg.KeysRequired(ctx)
	if err != nil {
		return authBad, err
	}
	if !required {
		return authOK, nil
	}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, key, _ := strings.Cut(strings.TrimSpace(h), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return authBad, nil
		}
		k, err := c.cfg.CheckKey(ctx, strings.TrimSpace(key))
		switch {
		case errors.Is(err, ErrBadKey):
			return authBad, nil
		case err != nil:
			return authBad, err
		case !k.Admin:
			return authUser, nil
		}
		return authOK, nil
	}
	ck, err := r.Cookie(CookieName)
	if err != nil {
		return authNone, nil
	}
	now := c.cfg.Now()
	c.mu.Lock()
	s, ok := c.sessions[ck.Value]
	if ok && !now.Before(s.expires) {
		delete(c.sessions, ck.Value)
		ok = false
	}
	c.mu.Unlock()
	if !ok {
		return authNone, nil
	}
	if s.key.Hash != "" && c.cfg.StillValid != nil {
		if err := c.cfg.StillValid(ctx, s.key.Hash); err != nil {
			c.mu.Lock()
			delete(c.sessions, ck.Value)
			c.mu.Unlock()
			return authNone, nil
		}
	}
	return authOK, nil
}

// private guards a view: without a session a page shows the login form (401), a user
// key gets 403.
func (c *Console) private(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st, err := c.who(r)
		if err != nil {
			c.serverError(w, r, err)
			return
		}
		switch st {
		case authOK:
			h(w, r)
		case authUser:
			c.fail(w, r, http.StatusForbidden, "permission_denied", "key", "The console needs an admin key; this key is a user key.")
		case authBad:
			c.fail(w, r, http.StatusUnauthorized, "invalid_api_key", "key", "Incorrect API key provided.")
		default:
			if wantsHTML(r) {
				c.render(w, r, http.StatusUnauthorized, "login", pageData{Title: "Log in", Next: r.URL.RequestURI()})
				return
			}
			c.fail(w, r, http.StatusUnauthorized, "invalid_api_key", "key", "Log in to the console first.")
		}
	})
}

// stored guards the views that read the database: a server without one (--no-store)
// has nothing to list.
func (c *Console) stored(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c.cfg.DB == nil {
			c.fail(w, r, http.StatusNotFound, "no_database", "", "This hearth runs without a database, so it keeps no responses to show.")
			return
		}
		h(w, r)
	}
}

func wantsHTML(r *http.Request) bool {
	return !strings.HasSuffix(r.URL.Path, ".json") && !strings.HasSuffix(r.URL.Path, "/fragment")
}

func (c *Console) loginForm(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "login", pageData{Title: "Log in", Next: r.URL.Query().Get("next")})
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "invalid_form", "key", "The login form could not be read: "+err.Error())
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	required, err := c.cfg.KeysRequired(r.Context())
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	if !required {
		// Nothing to log in to: the console is open on loopback.
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	key := strings.TrimSpace(r.PostForm.Get("key"))
	if key == "" {
		c.render(w, r, http.StatusBadRequest, "login", pageData{Title: "Log in", Next: next, Error: "Enter an admin key."})
		return
	}
	k, err := c.cfg.CheckKey(r.Context(), key)
	switch {
	case errors.Is(err, ErrBadKey):
		c.render(w, r, http.StatusUnauthorized, "login", pageData{Title: "Log in", Next: next, Error: "Incorrect or revoked key."})
		return
	case err != nil:
		c.serverError(w, r, err)
		return
	case !k.Admin:
		c.render(w, r, http.StatusForbidden, "login", pageData{Title: "Log in", Next: next, Error: "The console needs an admin key; this key is a user key."})
		return
	}
	id, err := newSessionID()
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	now := c.cfg.Now()
	c.mu.Lock()
	for sid, s := range c.sessions {
		if !now.Before(s.expires) {
			delete(c.sessions, sid)
		}
	}
	if len(c.sessions) >= maxSessions {
		oldest := ""
		for sid, s := range c.sessions {
			if oldest == "" || s.created.Before(c.sessions[oldest].created) {
				oldest = sid
			}
		}
		delete(c.sessions, oldest)
	}
	c.sessions[id] = session{key: k, expires: now.Add(c.cfg.SessionTTL), created: now}
	c.mu.Unlock()
	c.log.Info("console login", "key", k.Name)
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: id, Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: int(c.cfg.SessionTTL.Seconds()),
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// safeNext keeps a redirect after login inside the console. next comes from the
// form, so anyone can write it; http.Redirect cleans the path it is given, so that
// "/console/../api/tags" would land on /api/tags. The path is cleaned here, and what
// is not then /console or under /console/ becomes /console. A scheme-relative
// "//host", a backslash (which browsers read as a slash), an escaped dot, slash or
// backslash (a browser may decode "%2e%2e" into a ".." segment after the check) and
// control characters are refused outright. The query and fragment, which cannot move
// the path, are kept as sent.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, `\`) {
		return Prefix
	}
	for i := 0; i < len(next); i++ {
		if next[i] < ' ' || next[i] == 0x7f {
			return Prefix
		}
	}
	p, rest := next, ""
	if i := strings.IndexAny(next, "?#"); i >= 0 {
		p, rest = next[:i], next[i:]
	}
	lower := strings.ToLower(p)
	for _, enc := range []string{"%2e", "%2f", "%5c"} {
		if strings.Contains(lower, enc) {
			return Prefix
		}
	}
	p = path.Clean(p)
	if p != Prefix && !strings.HasPrefix(p, Prefix+"/") {
		return Prefix
	}
	return p + rest
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(CookieName); err == nil {
		c.mu.Lock()
		delete(c.sessions, ck.Value)
		c.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: Prefix, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}

func newSessionID() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// pageData is what every page template gets.
type pageData struct {
	Title, Nav string
	Next       string
	Error      string
	// Auth is true when the viewer logged in (and so can log out).
	Auth bool
	Data any
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, d pageData) {
	if d.Nav == "" {
		d.Nav = page
	}
	if ck, err := r.Cookie(CookieName); err == nil && ck.Value != "" {
		d.Auth = true
	}
	var b strings.Builder
	if err := c.pages[page].ExecuteTemplate(&b, "layout", d); err != nil {
		c.serverError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail answers a client error: an HTML page for a person, the API's error envelope
// for a script.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, code, param, msg string) {
	if wantsHTML(r) && r.Header.Get("Authorization") == "" {
		c.render(w, r, status, "error", pageData{Title: http.StatusText(status), Error: msg, Data: param})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	typ := "invalid_request_error"
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		typ = "authentication_error"
		if code == "origin_not_allowed" || code == "permission_denied" {
			typ = "invalid_request_error"
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": param, "code": code,
	}})
}

func (c *Console) serverError(w http.ResponseWriter, r *http.Request, err error) {
	c.log.Error("console", "path", r.URL.Path, "error", err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusInternalServerError)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": "The console failed to read hearth's state; the server log has the cause.",
		"type":    "server_error", "param": nil, "code": "server_error",
	}})
}
