package diagnose

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// tlsHop: a tls entry's Secret is a kubernetes.io/tls Secret whose
// certificate parses with its key, is in date and covers the entry's
// hosts (the rules' hosts when the entry names none). Otherwise the
// proxies serve their self-signed default certificate for those hosts
// (BadTLSSecret, the proxies' reason), which clients refuse.
func tlsHop(in ingressTrace, t *v1.IngressTLS) Hop {
	hosts := t.GetHosts()
	if len(hosts) == 0 {
		for _, r := range in.ing.GetSpec().GetRules() {
			if r.GetHost() != "" {
				hosts = append(hosts, r.GetHost())
			}
		}
	}
	h := Hop{Hop: "tls", Layer: LayerIngress, Component: "TLS Secret", Status: HopDone}
	name := t.GetSecretName()
	if name == "" {
		h.Title, h.Status, h.Message = "TLS for "+strings.Join(hosts, ","), HopSkipped, "no secretName: SNI passthrough is not served"
		return h
	}
	key := in.ing.GetMetadata().GetNamespace() + "/" + name
	h.Title = fmt.Sprintf("TLS secret %s for %s", name, strings.Join(hosts, ","))
	fail := func(format string, a ...any) Hop {
		h.Status, h.Reason = HopFailed, reasonBadTLSSecret
		h.Message = fmt.Sprintf("Error getting SSL certificate %q: ", key) + fmt.Sprintf(format, a...) +
			". The proxies serve their self-signed default certificate for " + strings.Join(hosts, ",")
		return h
	}
	sr := in.secrets[name]
	switch {
	case sr.err != nil && apierrors.IsNotFound(sr.err):
		return fail("secret %q not found", key)
	case sr.err != nil:
		h.Status, h.Message = HopUnknown, "could not read the Secret: "+apierrors.FromGRPC(sr.err).Error()
		return h
	case sr.s.GetType() != "kubernetes.io/tls":
		return fail("secret is of type %q, not kubernetes.io/tls", sr.s.GetType())
	}
	pair, err := tls.X509KeyPair(sr.s.GetData()["tls.crt"], sr.s.GetData()["tls.key"])
	if err != nil {
		return fail("%v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fail("%v", err)
	}
	switch {
	case in.now.After(leaf.NotAfter):
		return fail("the certificate expired on %s", leaf.NotAfter.UTC().Format("2006-01-02 15:04 MST"))
	case in.now.Before(leaf.NotBefore):
		return fail("the certificate is not valid before %s", leaf.NotBefore.UTC().Format("2006-01-02 15:04 MST"))
	}
	var uncovered []string
	for _, host := range hosts {
		if leaf.VerifyHostname(strings.Replace(host, "*", "x", 1)) != nil {
			uncovered = append(uncovered, host)
		}
	}
	if len(uncovered) > 0 {
		h.Status, h.Reason = HopFailed, "CertificateHostMismatch"
		h.Message = fmt.Sprintf("the certificate in %q (names %s) does not cover %s: clients refuse it for those hosts",
			key, strings.Join(leaf.DNSNames, ","), strings.Join(uncovered, ","))
		return h
	}
	h.Message = fmt.Sprintf("certificate for %s, valid until %s", strings.Join(leaf.DNSNames, ","), leaf.NotAfter.UTC().Format("2006-01-02"))
	return h
}
