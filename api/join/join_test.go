package join_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/join"
	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// TestJoinThenRenew joins a node with a token over real TLS, uses the
// certificate as the node, and renews it.
func TestJoinThenRenew(t *testing.T) {
	s := apiservertest.StartSecure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tok, err := v1.NewAuthClient(s.Client.Conn()).CreateToken(ctx, &v1.CreateTokenRequest{Type: "join", TtlSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	cfg := join.Config{Server: s.Addr(), CAFile: filepath.Join(s.PKIDir, "ca.crt"), Token: tok.Token, NodeName: "n9", Dir: t.TempDir()}
	if err := join.EnsureCertificate(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	// Second call: the certificate exists; the spent token is not needed.
	cfg2 := cfg
	cfg2.Token = ""
	if err := join.EnsureCertificate(ctx, cfg2); err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := join.TLSConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := client.New(client.Config{Server: s.Addr(), TLS: tlsCfg})
	defer c.Close()
	who, err := v1.NewAuthClient(c.Conn()).WhoAmI(ctx, &v1.WhoAmIRequest{})
	if err != nil || who.Name != "system:node:n9" {
		t.Fatalf("whoami: %v %v", err, who)
	}
	// The node may register itself.
	if _, err := client.For[*v1.Node](c).Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: "n9"}}); err != nil {
		t.Fatal(err)
	}
	// Renewal: with RenewWhenLeft 1 the certificate is always due.
	certFile, _ := cfg.Paths()
	before, _ := pki.ParseCertPEM(mustRead(t, certFile))
	rctx, rcancel := context.WithCancel(ctx)
	cfg.RenewWhenLeft = 1
	done := make(chan struct{})
	go func() { _ = join.RunRenewal(rctx, c, cfg, nil); close(done) }()
	var after *x509.Certificate
	wait.Eventually(t, 20*time.Second, "the certificate renewed", func() error {
		var err error
		if after, err = pki.ParseCertPEM(mustRead(t, certFile)); err != nil {
			return err
		}
		if after.SerialNumber.Cmp(before.SerialNumber) == 0 {
			return fmt.Errorf("still serial %s", before.SerialNumber)
		}
		return nil
	})
	if after.Subject.CommonName != "system:node:n9" {
		t.Fatalf("renewed for %s", after.Subject.CommonName)
	}
	rcancel()
	<-done
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
