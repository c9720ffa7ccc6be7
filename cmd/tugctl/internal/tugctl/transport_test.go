package tugctl

import (
	"path/filepath"
	"testing"
)

// TestTokensNeverInTheClear: tugctl refuses to send a bearer token over
// plaintext unless told to, and then only to loopback; a plaintext client
// of a TLS apiserver (and the reverse) is told what the server speaks and
// how to configure the CA.
func TestTokensNeverInTheClear(t *testing.T) {
	e := newSecureEnv(t)
	token := e.userContext("pat")
	tokenFile := filepath.Join(t.TempDir(), "pat.token")
	writeFile(t, filepath.Dir(tokenFile), "pat.token", token+"\n")
	// A context with the token but no CA.
	mustOK(t, e.run("config", "set-cluster", "noca", "--server", e.srv.Addr()))
	mustOK(t, e.run("config", "set-context", "plain", "--cluster", "noca", "--user", "pat"))
	mustOK(t, e.run("config", "set-context", "anon", "--cluster", "noca"))

	mustFail(t, e.run("--context", "plain", "get", "pods"), "refusing to send a bearer token over plaintext to "+e.srv.Addr()+": give the cluster's CA")
	// Consent on loopback: sent, but this server speaks TLS, and says so.
	mustFail(t, e.run("--context", "plain", "--insecure-plaintext-token", "get", "pods"), "the apiserver at "+e.srv.Addr()+" speaks TLS and this client plaintext: give it the cluster's CA (--ca-file ca.crt")
	// No credentials at all: the same explanation, not "server preface: EOF".
	r := e.run("--context", "anon", "get", "pods")
	mustFail(t, r, "speaks TLS and this client plaintext")
	// Consent does not reach beyond loopback: refused before dialling
	// (0.0.0.0 is not loopback; were it dialled, this machine would answer).
	mustFail(t, e.run("--context", "plain", "--server", "0.0.0.0:1", "--insecure-plaintext-token", "get", "pods"),
		"--insecure-plaintext-token allows it only to a loopback address")
	// With the CA, the token works.
	mustOK(t, e.run("--context", "pat", "auth", "whoami"))

	// A development apiserver (plaintext, loopback): with consent the token goes.
	dev := newEnv(t)
	mustFail(t, dev.run("--token-file", tokenFile, "get", "pods"), "refusing to send a bearer token over plaintext")
	mustOK(t, dev.run("--token-file", tokenFile, "--insecure-plaintext-token", "get", "pods"))
	// A TLS client of it is told it does not speak TLS.
	mustFail(t, dev.run("--ca-file", filepath.Join(e.srv.PKIDir, "ca.crt"), "get", "pods"), "does not speak TLS (was it started with --insecure?)")
}
