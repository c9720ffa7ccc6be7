package token

import (
	"testing"
	"time"

	"github.com/tugboat/tugboat/apiserver/auth"
)

func TestRandomToken(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		id, err := randomToken(tokenIDLength)
		if err != nil {
			t.Fatal(err)
		}
		secret, _ := randomToken(tokenSecretLen)
		if _, _, ok := auth.SplitToken(id + "." + secret); !ok {
			t.Fatalf("%s.%s is not a valid token", id, secret)
		}
		if seen[secret] {
			t.Fatalf("secret %s drawn twice", secret)
		}
		seen[secret] = true
	}
}

func TestTokenExpiry(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for exp, want := range map[string]string{
		"":                     "never",
		"2026-11-30T13:00:00Z": "2026-11-30T13:00:00Z (in 60m)",
		"2026-11-30T11:00:00Z": "2026-11-30T11:00:00Z (expired)",
		"tomorrow":             "tomorrow (invalid)",
	} {
		if got := tokenExpiry(exp, now); got != want {
			t.Errorf("tokenExpiry(%q) = %q, want %q", exp, got, want)
		}
	}
}
