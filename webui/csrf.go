package webui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
)

// csrfCookie holds the double-submit token; forms repeat it in csrfField.
const (
	csrfCookie = "skein_csrf"
	csrfField  = "csrf"
)

// csrfToken returns the request's CSRF token, setting a new one in a
// cookie when the request has none.
func (s *server) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && validToken(c.Value) {
		return c.Value
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	tok := hex.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return tok
}

func validToken(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// checkCSRF says why a POST is refused, or "" when it may go on: the form's
// token must equal the cookie's, and the request must come from a page of
// this host (its Origin, or its Referer when a browser sends no Origin).
func checkCSRF(r *http.Request) string {
	c, err := r.Cookie(csrfCookie)
	if err != nil || !validToken(c.Value) {
		return "the request has no CSRF cookie: load the page again and resend the form"
	}
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue(csrfField)), []byte(c.Value)) != 1 {
		return "the form's CSRF token does not match the cookie's: load the page again and resend the form"
	}
	from := r.Header.Get("Origin")
	if from == "" || from == "null" {
		from = r.Header.Get("Referer")
	}
	if from == "" {
		return "the request says neither its Origin nor its Referer: actions are taken only from the dashboard's own pages"
	}
	u, err := url.Parse(from)
	if err != nil || u.Host == "" || u.Host != r.Host {
		return "the request comes from another site (" + from + "), not from this dashboard"
	}
	return ""
}
