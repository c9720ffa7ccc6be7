package apiserver

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/apiserver/auth"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// Certificates: the apiserver records every node certificate it signs
// (storage.RecordIssued) and keeps the revocation list in etcd; each
// apiserver holds the list in memory (revocations), loaded before it
// serves and followed by a watch, and the authenticator refuses a revoked
// serial on every request. Revoking also closes the tunnel of a revoked
// node certificate; a watch stream opened with a certificate revoked
// later ends at its next bookmark (Watch).

// revocations is the in-memory revocation list.
type revocations struct {
	mu sync.RWMutex
	m  map[string]storage.CertRecord
}

func (r *revocations) lookup(serial string) (string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rec, ok := r.m[serial]
	if !ok {
		return "", false
	}
	why := "revoked at " + rec.RevokedAt.UTC().Format(time.RFC3339)
	if rec.RevokedBy != "" {
		why += " by " + rec.RevokedBy
	}
	if rec.Reason != "" {
		why += " (" + rec.Reason + ")"
	}
	return why, true
}

func (r *revocations) set(serial string, rec *storage.CertRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec == nil {
		delete(r.m, serial)
	} else {
		r.m[serial] = *rec
	}
}

// load replaces the list with what etcd holds and returns its revision.
func (r *revocations) load(ctx context.Context, store *storage.Store) (int64, error) {
	recs, rev, err := store.Revoked(ctx)
	if err != nil {
		return 0, err
	}
	m := make(map[string]storage.CertRecord, len(recs))
	for _, rec := range recs {
		m[rec.Serial] = rec
	}
	r.mu.Lock()
	r.m = m
	r.mu.Unlock()
	return rev, nil
}

// followRevocations loads the revocation list, then keeps it current from
// etcd (revocations made through other apiservers) until ctx ends.
func (s *Server) followRevocations(ctx context.Context) error {
	rev, err := s.revoked.load(ctx, s.store)
	if err != nil {
		return err
	}
	go func() {
		for ctx.Err() == nil {
			err := s.store.WatchRevoked(ctx, rev, s.revoked.set)
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("revocation list watch ended; reloading", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			if r, err := s.revoked.load(ctx, s.store); err == nil {
				rev = r
			}
		}
	}()
	return nil
}

// stillValid reports why a caller's credentials stopped being valid since
// it authenticated (a revoked certificate), for long-lived streams.
func (s *Server) stillValid(u *auth.User) error {
	if u == nil || u.Serial == "" || s.revoked == nil {
		return nil
	}
	if why, revoked := s.revoked.lookup(u.Serial); revoked {
		return apierrors.New(apierrors.ErrUnauthenticated, "client certificate %q (serial %s) is revoked: %s", u.Name, u.Serial, why)
	}
	return nil
}

func serialHex(n *big.Int) string { return n.Text(16) }

// recordIssued remembers a node certificate signed for node.
func (s *Server) recordIssued(ctx context.Context, node string, certPEM []byte) error {
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return err
	}
	return s.store.RecordIssued(ctx, storage.CertRecord{
		Serial: serialHex(cert.SerialNumber), Subject: cert.Subject.CommonName, Node: node,
		NotAfter: cert.NotAfter, IssuedAt: time.Now().UTC(),
	})
}

func parseCertPEM(data []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("no PEM certificate")
	}
	return x509.ParseCertificate(b.Bytes)
}

// liveCertificate returns an unexpired, unrevoked certificate the apiserver
// issued to node, if any.
func (s *Server) liveCertificate(ctx context.Context, node string) (*storage.CertRecord, error) {
	recs, err := s.store.Issued(ctx, node)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		if _, revoked := s.revoked.lookup(recs[i].Serial); !revoked && time.Now().Before(recs[i].NotAfter) {
			return &recs[i], nil
		}
	}
	return nil, nil
}

// revokeNode revokes every unexpired certificate issued to node and closes
// its tunnel; it returns what it revoked.
func (s *Server) revokeNode(ctx context.Context, node, by, reason string) ([]storage.CertRecord, error) {
	recs, err := s.store.Issued(ctx, node)
	if err != nil {
		return nil, err
	}
	return s.revoke(ctx, recs, by, reason)
}

func (s *Server) revoke(ctx context.Context, recs []storage.CertRecord, by, reason string) ([]storage.CertRecord, error) {
	now := time.Now().UTC()
	var issued map[string]storage.CertRecord
	for i := range recs {
		if recs[i].Subject == "" {
			// Named by serial only: what the apiserver issued says whose.
			if issued == nil {
				all, err := s.store.Issued(ctx, "")
				if err != nil {
					return nil, err
				}
				issued = make(map[string]storage.CertRecord, len(all))
				for _, r := range all {
					issued[r.Serial] = r
				}
			}
			if r, ok := issued[recs[i].Serial]; ok {
				recs[i] = r
			}
		}
		recs[i].RevokedAt, recs[i].RevokedBy, recs[i].Reason = now, by, reason
	}
	if err := s.store.Revoke(ctx, recs...); err != nil {
		return nil, err
	}
	nodes := map[string]bool{}
	for i := range recs {
		s.revoked.set(recs[i].Serial, &recs[i])
		if n, ok := strings.CutPrefix(recs[i].Subject, auth.NodePrefix); ok {
			nodes[n] = true
		}
	}
	for n := range nodes {
		s.tunnels.Disconnect(n, "its certificate was revoked")
	}
	return recs, nil
}

// authorizeCertificates checks the caller may verb (revoke, list)
// certificates.
func (s *Server) authorizeCertificates(ctx context.Context, verb string) error {
	return s.authorizeVirtual(ctx, verb, "certificates", "", "")
}

// RevokeCertificate implements Auth.RevokeCertificate.
func (a *authService) RevokeCertificate(ctx context.Context, req *v1.RevokeCertificateRequest) (*v1.RevokeCertificateResponse, error) {
	s := a.s
	if s.authn == nil {
		return nil, apierrors.New(apierrors.ErrUnavailable, "authentication is off: there are no certificates to revoke")
	}
	if err := s.authorizeCertificates(ctx, "revoke"); err != nil {
		return nil, err
	}
	var recs []storage.CertRecord
	for i, sn := range req.Serials {
		n, ok := new(big.Int).SetString(strings.TrimPrefix(strings.ToLower(strings.ReplaceAll(sn, ":", "")), "0x"), 16)
		if !ok || n.Sign() <= 0 {
			return nil, apierrors.Invalid(fmt.Sprintf("serials[%d]", i), "%s is not a hexadecimal serial number", validation.Short(sn))
		}
		recs = append(recs, storage.CertRecord{Serial: serialHex(n)})
	}
	for rest, i := req.Certificates, 0; ; i++ {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			if i == 0 && len(req.Certificates) > 0 {
				return nil, apierrors.Invalid("certificates", "no PEM certificate found")
			}
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, apierrors.Invalid("certificates", "certificate %d: %v", i, err)
		}
		recs = append(recs, storage.CertRecord{Serial: serialHex(cert.SerialNumber), Subject: cert.Subject.CommonName, NotAfter: cert.NotAfter})
	}
	by := ""
	if u := auth.UserFrom(ctx); u != nil {
		by = u.Name
	}
	if req.NodeName != "" {
		if err := validation.NodeName("nodeName", req.NodeName); err != nil {
			return nil, err
		}
		issued, err := s.store.Issued(ctx, req.NodeName)
		if err != nil {
			return nil, err
		}
		if len(issued) == 0 && len(recs) == 0 {
			return nil, apierrors.New(apierrors.ErrNotFound, "the apiserver issued no unexpired certificate to node %q (certificates made by apiserver pki init are revoked with their file: tugctl certificate revoke -f node.crt)", req.NodeName)
		}
		recs = append(recs, issued...)
	}
	if len(recs) == 0 {
		return nil, apierrors.Invalid("serials", "name the certificates to revoke: serials, PEM certificates or a node")
	}
	done, err := s.revoke(ctx, recs, by, req.Reason)
	if err != nil {
		return nil, err
	}
	s.log.Warn("certificates revoked", "by", by, "count", len(done), "reason", req.Reason)
	out := &v1.RevokeCertificateResponse{}
	for _, r := range done {
		out.Revoked = append(out.Revoked, certRecord(r))
	}
	return out, nil
}

// ListCertificates implements Auth.ListCertificates.
func (a *authService) ListCertificates(ctx context.Context, _ *v1.ListCertificatesRequest) (*v1.ListCertificatesResponse, error) {
	if err := a.s.authorizeCertificates(ctx, "list"); err != nil {
		return nil, err
	}
	issued, err := a.s.store.Issued(ctx, "")
	if err != nil {
		return nil, err
	}
	revoked, _, err := a.s.store.Revoked(ctx)
	if err != nil {
		return nil, err
	}
	out := &v1.ListCertificatesResponse{}
	for _, r := range issued {
		if _, rv := a.s.revoked.lookup(r.Serial); !rv {
			out.Issued = append(out.Issued, certRecord(r))
		}
	}
	for _, r := range revoked {
		out.Revoked = append(out.Revoked, certRecord(r))
	}
	return out, nil
}

func certRecord(r storage.CertRecord) *v1.CertificateRecord {
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	return &v1.CertificateRecord{Serial: r.Serial, Subject: r.Subject, NodeName: r.Node, NotAfter: ts(r.NotAfter),
		IssuedAt: ts(r.IssuedAt), RevokedAt: ts(r.RevokedAt), RevokedBy: r.RevokedBy, Reason: r.Reason}
}
