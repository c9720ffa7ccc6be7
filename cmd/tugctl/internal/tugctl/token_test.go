package tugctl

import (
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/auth"
)

func TestJoinTokens(t *testing.T) {
	e := newSecureEnv(t)
	r := mustOK(t, e.run("token", "create", "--ttl", "2h", "--description", "rack 4"))
	token := strings.TrimSpace(r.out)
	id, _, ok := auth.SplitToken(token)
	if !ok || r.err != "" {
		t.Fatalf("token create printed %v", r)
	}
	never := strings.TrimSpace(mustOK(t, e.run("token", "create", "--ttl", "0")).out)
	neverID, _, _ := auth.SplitToken(never)

	r = mustOK(t, e.run("token", "list"))
	if h := strings.Join(fieldsOf(r.out)[0], " "); h != "ID TYPE USER GROUPS EXPIRES DESCRIPTION" {
		t.Errorf("token list header %q", h)
	}
	if got := row(t, r.out, id); got[1] != "join" || got[5] != "(in" || got[6] != "119m)" && got[6] != "120m)" || strings.Join(got[7:], " ") != "rack 4" {
		t.Errorf("join token row %v\n%s", got, r.out)
	}
	if got := row(t, r.out, neverID); got[4] != "never" {
		t.Errorf("--ttl 0 row %v", got)
	}

	// The token joins a node once, through the real JoinNode.
	key, err := pki.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := pki.NewCSR(key, pki.Subject{User: "system:node:n9", Groups: []string{"system:nodes"}})
	if err != nil {
		t.Fatal(err)
	}
	anon := v1.NewAuthClient(e.srv.ClientAs("").Conn())
	if _, err := anon.JoinNode(ctxT(t), &v1.JoinNodeRequest{Token: token, NodeName: "n9", Csr: csr}); err != nil {
		t.Fatalf("JoinNode with the created token: %v", err)
	}
	if r := mustOK(t, e.run("token", "list")); strings.Contains(r.out, id) {
		t.Errorf("a spent join token is still listed:\n%s", r.out)
	}

	// Delete by the whole token; a second delete is NotFound.
	if r := mustOK(t, e.run("token", "delete", never)); r.out != `token "`+neverID+`" deleted`+"\n" {
		t.Errorf("token delete printed %v", r)
	}
	mustFail(t, e.run("token", "delete", neverID), `Error from server (NotFound): token "`+neverID+`" not found`)
	if r := mustOK(t, e.run("token", "list")); r.err != "No tokens found\n" {
		t.Errorf("empty token list: %v", r)
	}

	// A user token with --ttl shows when it expires; the apiserver holds
	// it to that (apiserver's TestTokensAreCredentials).
	ut := strings.TrimSpace(mustOK(t, e.run("token", "create", "--user", "x", "--ttl", "1h")).out)
	utID, _, _ := auth.SplitToken(ut)
	if got := row(t, mustOK(t, e.run("token", "list")).out, utID); got[1] != "user" || got[5] != "(in" {
		t.Errorf("user token with --ttl: %v", got)
	}
	mustOK(t, e.run("token", "delete", utID))
	// A replacement join token says so.
	rt := strings.TrimSpace(mustOK(t, e.run("token", "create", "--replace", "n7")).out)
	rtID, _, _ := auth.SplitToken(rt)
	if got := row(t, mustOK(t, e.run("token", "list")).out, rtID); strings.Join(got[7:], " ") != "replaces node n7" {
		t.Errorf("replace token row: %v", got)
	}
	mustOK(t, e.run("token", "delete", rtID))
	mustFail(t, e.run("token", "create", "--user", "x", "--replace", "n7"), "--replace: only for join tokens")
	mustFail(t, e.run("token", "create", "--replace", "N7"), "replaceNode")
	mustFail(t, e.run("token", "create", "--groups", "a"), "--groups: only for user tokens")
	mustFail(t, e.run("token", "create", "--ttl", "-1s"), "--ttl -1s: must be 0")
	mustFail(t, e.run("token", "delete"), "requires at least 1 arg")
}

func TestUserTokenRevocation(t *testing.T) {
	e := newSecureEnv(t)
	token := e.userContext("ci", "deployers", "system:masters")
	id, _, _ := auth.SplitToken(token)
	r := mustOK(t, e.run("token", "list"))
	if got := row(t, r.out, id); strings.Join(got[1:], " ") != "user ci deployers,system:masters never for ci" {
		t.Errorf("user token row %v", got)
	}
	r = mustOK(t, e.run("--context", "ci", "auth", "whoami"))
	if got := row(t, r.out, "Groups"); strings.Join(got[1:], " ") != "[deployers system:masters system:authenticated]" {
		t.Errorf("ci's groups: %v", got)
	}
	// As system:masters the token may itself list tokens.
	mustOK(t, e.run("--context", "ci", "token", "list"))
	mustOK(t, e.run("token", "delete", id))
	mustFail(t, e.run("--context", "ci", "auth", "whoami"), "invalid or revoked bearer token")
}
