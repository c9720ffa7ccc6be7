package token

import (
	"testing"
	"time"
)

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
