package tugctl

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestCertificateRevokeAndList(t *testing.T) {
	e := newSecureEnv(t)
	if r := mustOK(t, e.run("certificate", "list")); r.err != "No certificates found\n" {
		t.Errorf("empty list: %v", r)
	}
	// A join records the node's certificate; revoke it by node.
	tok := strings.TrimSpace(mustOK(t, e.run("token", "create")).out)
	joinAs(t, e, tok, "n8")
	r := mustOK(t, e.run("certificate", "list"))
	if h := strings.Join(fieldsOf(r.out)[0], " "); h != "SERIAL SUBJECT NODE STATUS NOT-AFTER REASON" {
		t.Errorf("header %q", h)
	}
	issued := fieldsOf(r.out)[1]
	if issued[1] != "system:node:n8" || issued[2] != "n8" || issued[3] != "Issued" {
		t.Errorf("issued row %v", issued)
	}
	r = mustOK(t, e.run("certificate", "revoke", "--node", "n8", "--reason", "stolen"))
	if r.out != "certificate "+issued[0]+" (system:node:n8) revoked\n" {
		t.Errorf("revoke --node printed %v", r)
	}
	r = mustOK(t, e.run("certificate", "revoke", "-f", filepath.Join(e.srv.PKIDir, "proxy.crt")))
	if !strings.Contains(r.out, "(system:kube-proxy) revoked") {
		t.Errorf("revoke -f printed %v", r)
	}
	r = mustOK(t, e.run("certificate", "list"))
	if got := row(t, r.out, issued[0]); got[3] != "Revoked" || got[5] != "stolen" {
		t.Errorf("revoked row %v\n%s", got, r.out)
	}
	mustFail(t, e.run("certificate", "revoke"), "name the certificates to revoke")
	mustFail(t, e.run("certificate", "revoke", "zz"), "is not a hexadecimal serial number")
	mustFail(t, e.run("certificate", "revoke", "--node", "nobody"), `issued no unexpired certificate to node "nobody"`)
}

// joinAs spends a join token on a certificate for node, as a kubelet does.
func joinAs(t *testing.T, e *env, token, node string) {
	t.Helper()
	key, err := pki.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := pki.NewCSR(key, pki.Subject{User: "system:node:" + node, Groups: []string{"system:nodes"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v1.NewAuthClient(e.srv.ClientAs("").Conn()).JoinNode(ctxT(t), &v1.JoinNodeRequest{Token: token, NodeName: node, Csr: csr}); err != nil {
		t.Fatalf("JoinNode: %v", err)
	}
}
