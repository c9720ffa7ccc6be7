package storage

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tugboat/tugboat/api/apierrors"
)

// Certificate records: what the apiserver signed for nodes (JoinNode,
// RenewCertificate), so a join can tell a name held by a node with a live
// certificate and a replacement can revoke what the old machine holds; and
// the revocation list, which every apiserver sharing the etcd follows.
//
//	/registry/certificates/issued/<node>/<serial>
//	/registry/certificates/revoked/<serial>
//
// Each holds a CertRecord as JSON, with an etcd lease that ends it once the
// certificate has expired (a revoked certificate past its expiry is refused
// anyway), so neither list grows without bound.

// CertRecord is one issued or revoked certificate.
type CertRecord struct {
	Serial    string    `json:"serial"` // hexadecimal, lower case
	Subject   string    `json:"subject,omitempty"`
	Node      string    `json:"node,omitempty"`
	NotAfter  time.Time `json:"notAfter,omitzero"`
	IssuedAt  time.Time `json:"issuedAt,omitzero"`
	RevokedAt time.Time `json:"revokedAt,omitzero"`
	RevokedBy string    `json:"revokedBy,omitempty"`
	Reason    string    `json:"reason,omitempty"`
}

const (
	issuedPrefix = Prefix + "certificates/issued/"
	// RevokedPrefix holds the revocation list.
	RevokedPrefix = Prefix + "certificates/revoked/"
)

// RecordIssued remembers a certificate signed for rec.Node.
func (s *Store) RecordIssued(ctx context.Context, rec CertRecord) error {
	return s.putRecord(ctx, issuedPrefix+rec.Node+"/"+rec.Serial, rec)
}

// Issued lists the unexpired certificates issued to node ("" for every node).
func (s *Store) Issued(ctx context.Context, node string) ([]CertRecord, error) {
	prefix := issuedPrefix
	if node != "" {
		prefix += node + "/"
	}
	recs, _, err := s.records(ctx, prefix)
	return recs, err
}

// Revoke puts certificates on the revocation list.
func (s *Store) Revoke(ctx context.Context, recs ...CertRecord) error {
	for _, r := range recs {
		if err := s.putRecord(ctx, RevokedPrefix+r.Serial, r); err != nil {
			return err
		}
	}
	return nil
}

// Revoked is the revocation list and the revision it was read at.
func (s *Store) Revoked(ctx context.Context) ([]CertRecord, int64, error) {
	return s.records(ctx, RevokedPrefix)
}

// WatchRevoked calls fn for each revocation after revision rev (deleted
// when its record expired) until ctx ends or the watch fails (compaction:
// the caller lists again).
func (s *Store) WatchRevoked(ctx context.Context, rev int64, fn func(serial string, rec *CertRecord)) error {
	for resp := range s.cli.Watch(clientv3.WithRequireLeader(ctx), RevokedPrefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if err := resp.Err(); err != nil {
			return unavailable(err)
		}
		for _, ev := range resp.Events {
			serial := strings.TrimPrefix(string(ev.Kv.Key), RevokedPrefix)
			if ev.Type == clientv3.EventTypeDelete {
				fn(serial, nil)
				continue
			}
			var r CertRecord
			if json.Unmarshal(ev.Kv.Value, &r) == nil {
				fn(serial, &r)
			}
		}
	}
	return ctx.Err()
}

func (s *Store) putRecord(ctx context.Context, key string, rec CertRecord) error {
	val, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	defer s.observe("certificates", time.Now())
	var opts []clientv3.OpOption
	if !rec.NotAfter.IsZero() {
		ttl := int64(time.Until(rec.NotAfter)/time.Second) + 3600
		if ttl < 60 {
			ttl = 60
		}
		lease, err := s.cli.Grant(ctx, ttl)
		if err != nil {
			return unavailable(err)
		}
		opts = append(opts, clientv3.WithLease(lease.ID))
	}
	if _, err := s.cli.Put(ctx, key, string(val), opts...); err != nil {
		return unavailable(err)
	}
	return nil
}

func (s *Store) records(ctx context.Context, prefix string) ([]CertRecord, int64, error) {
	defer s.observe("certificates", time.Now())
	resp, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, unavailable(err)
	}
	out := make([]CertRecord, 0, len(resp.Kvs))
	now := time.Now()
	for _, kv := range resp.Kvs {
		var r CertRecord
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			return nil, 0, apierrors.New(apierrors.ErrUnavailable, "certificate record %s: %v", kv.Key, err)
		}
		if !r.NotAfter.IsZero() && r.NotAfter.Before(now) && strings.HasPrefix(prefix, issuedPrefix) {
			continue // expired, its lease not yet ended
		}
		out = append(out, r)
	}
	return out, resp.Header.Revision, nil
}
