package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
)

// auth guards the console. Every request must name this console as its
// Host (so a page of another site cannot reach a loopback console through
// a DNS name pointing at 127.0.0.1), and a state-changing request must
// come from the console's own page (Origin). With a token, every request
// but the page's files and the login needs the session cookie that
// POST /api/login sets for the right token.
type auth struct {
	token    string
	loopback bool
	// session is the cookie value: a hash of the token, so the token
	// itself is not stored in the browser.
	session string
}

const sessionCookie = "tugboat-console"

func newAuth(token string, loopback bool) *auth {
	a := &auth{token: token, loopback: loopback}
	if token != "" {
		sum := sha256.Sum256([]byte("tugboat-console-session:" + token))
		a.session = hex.EncodeToString(sum[:])
	}
	return a
}

// hostAllowed: on a loopback listener only loopback names are accepted
// as Host (DNS rebinding); elsewhere the token protects the console.
func (a *auth) hostAllowed(host string) bool {
	if !a.loopback {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	return host == "localhost" || loopback(net.JoinHostPort(host, "0"))
}

func (a *auth) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.hostAllowed(r.Host) {
			http.Error(w, "console: Host "+r.Host+" is not this console's address", http.StatusMisdirectedRequest)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
				http.Error(w, "console: cross-origin request refused", http.StatusForbidden)
				return
			}
		}
		if a.token != "" && strings.HasPrefix(r.URL.Path, "/api/") && r.URL.Path != "/api/login" && !a.authorized(r) {
			http.Error(w, "console: this console needs its token (the page asks for it)", http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'")
		next.ServeHTTP(w, r)
	})
}

func (a *auth) authorized(r *http.Request) bool {
	c, err := r.Cookie(sessionCookie)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(a.session)) == 1
}

// login checks the token the page sends (form field "token") and sets
// the session cookie.
func (a *auth) login(w http.ResponseWriter, r *http.Request) {
	if a.token == "" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.FormValue("token")), []byte(a.token)) != 1 {
		http.Error(w, "console: wrong token", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: a.session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
}
