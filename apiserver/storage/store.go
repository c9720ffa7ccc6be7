// Package storage keeps API objects in etcd. It is the only code in Tugboat
// that reads or writes etcd: objects (this file, list.go), their expiry
// (ttl.go, leases), the claims behind ClusterIP and node port allocation
// (claims.go), the per-kind watch that feeds the watch cache (watch.go),
// the current revision and compaction. Besides it, only the apiserver's
// start-up holds an etcd client: etcd.go starts the embedded etcd and dials
// it (or --etcd-servers), server.go hands the client to New and closes it
// at shutdown; the compactor compacts through Store.Compact. Package
// watchcache reads through the narrow watchcache.Store interface and never
// sees the client. (Tests may look at values at rest through
// apiservertest.Server.Etcd.)
//
// Layout: one key per object, /registry/<plural>/<namespace>/<name> (or
// /registry/<plural>/<name> for cluster-scoped kinds), holding the object's
// protobuf encoding with resource_version cleared; on every read the
// resource_version is set to the key's etcd mod revision, and a value
// stored in an older shape of its kind is read into the current one
// (upgrade.go).
//
// Contract: Create fails with apierrors.ErrAlreadyExists if the key exists;
// Update and Delete are compare-and-swap on the mod revision (an etcd Txn)
// and fail with apierrors.ErrConflict when the stored version moved; reads of
// a missing key fail with apierrors.ErrNotFound. Nothing is ever overwritten
// silently.
package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Prefix is the root of every key.
const Prefix = "/registry/"

// Store reads and writes objects of every kind.
type Store struct {
	cli     *clientv3.Client
	metrics *Metrics
	enc     *Encryption
	ttls    *TTLs
}

// SetTTLs makes the kinds named in t expire (call before use).
func (s *Store) SetTTLs(t *TTLs) { s.ttls = t }

// New returns a store over an etcd client. metrics and enc may be nil (no
// encryption at rest).
func New(cli *clientv3.Client, metrics *Metrics, enc *Encryption) *Store {
	return &Store{cli: cli, metrics: metrics, enc: enc}
}

// KindPrefix is the key prefix of all objects of a kind in namespace ns
// ("" for every namespace).
func KindPrefix(k *kinds.Kind, ns string) string {
	if k.Namespaced && ns != "" {
		return Prefix + k.Plural + "/" + ns + "/"
	}
	return Prefix + k.Plural + "/"
}

// Key is the etcd key of one object.
func Key(k *kinds.Kind, ns, name string) string {
	if k.Namespaced {
		return Prefix + k.Plural + "/" + ns + "/" + name
	}
	return Prefix + k.Plural + "/" + name
}

// Decode turns the value stored at key into an object with
// resource_version set to rev. The key is part of the encryption's
// authenticated data: a value read at another key than it was written for
// fails to decode.
func (s *Store) Decode(k *kinds.Kind, key, value []byte, rev int64) (v1.Object, error) {
	plain, _, err := s.enc.decrypt(k.Plural, key, value)
	if err != nil {
		return nil, fmt.Errorf("decoding %s at revision %d: %w", k.Plural, rev, err)
	}
	obj := k.New()
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(plain, obj); err != nil {
		return nil, fmt.Errorf("decoding %s at revision %d: %w", k.Plural, rev, err)
	}
	if err := upgrade(k.Plural, plain, obj); err != nil {
		return nil, fmt.Errorf("decoding %s at revision %d: %w", k.Plural, rev, err)
	}
	v1.Meta(obj).ResourceVersion = rev
	return obj, nil
}

// encode is the value of obj stored at key.
func (s *Store) encode(k *kinds.Kind, key string, obj v1.Object) ([]byte, error) {
	m := v1.Meta(obj)
	rv := m.ResourceVersion
	m.ResourceVersion = 0
	b, err := proto.Marshal(obj)
	m.ResourceVersion = rv
	if err != nil {
		return nil, err
	}
	val, err := s.enc.encrypt(k.Plural, []byte(key), b)
	if err != nil {
		return nil, err
	}
	if n := len(key) + len(val); n > MaxStoredBytes {
		return nil, apierrors.New(apierrors.ErrInvalid, "%s %q is too large to store: %d bytes encoded, the limit is %d", k.Plural, m.Name, n, MaxStoredBytes)
	}
	return val, nil
}

// MaxStoredBytes caps a key and its encoded value together: under etcd's
// default request limit (--max-request-bytes, 1.5 MiB), with room for the
// transaction around them, so etcd never refuses a write as too large.
const MaxStoredBytes = 1536*1024 - 16*1024

func (s *Store) observe(op string, start time.Time) {
	if s.metrics != nil {
		s.metrics.EtcdLatency.WithLabelValues(op).Observe(time.Since(start).Seconds())
	}
}

// Create stores a new object and returns it with its resource_version.
func (s *Store) Create(ctx context.Context, k *kinds.Kind, obj v1.Object) (v1.Object, error) {
	m := v1.Meta(obj)
	key := Key(k, m.Namespace, m.Name)
	val, err := s.encode(k, key, obj)
	if err != nil {
		return nil, err
	}
	putOpts, err := s.ttls.opts(ctx, k.Plural)
	if err != nil {
		return nil, err
	}
	defer s.observe("create", time.Now())
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(val), putOpts...)).
		Commit()
	if err != nil {
		return nil, unavailable(err)
	}
	if !resp.Succeeded {
		return nil, apierrors.AlreadyExists(k.GroupResource(), m.Name)
	}
	out := proto.Clone(obj).(v1.Object)
	v1.Meta(out).ResourceVersion = resp.Header.Revision
	return out, nil
}

// Get reads one object.
func (s *Store) Get(ctx context.Context, k *kinds.Kind, ns, name string) (v1.Object, error) {
	defer s.observe("get", time.Now())
	resp, err := s.cli.Get(ctx, Key(k, ns, name))
	if err != nil {
		return nil, unavailable(err)
	}
	if len(resp.Kvs) == 0 {
		return nil, apierrors.NotFound(k.GroupResource(), name)
	}
	kv := resp.Kvs[0]
	return s.Decode(k, kv.Key, kv.Value, kv.ModRevision)
}

// Update writes obj if the stored object is still at version expect.
func (s *Store) Update(ctx context.Context, k *kinds.Kind, obj v1.Object, expect int64) (v1.Object, error) {
	m := v1.Meta(obj)
	key := Key(k, m.Namespace, m.Name)
	val, err := s.encode(k, key, obj)
	if err != nil {
		return nil, err
	}
	putOpts, err := s.ttls.opts(ctx, k.Plural)
	if err != nil {
		return nil, err
	}
	defer s.observe("update", time.Now())
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", expect)).
		Then(clientv3.OpPut(key, string(val), putOpts...)).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return nil, unavailable(err)
	}
	if !resp.Succeeded {
		return nil, s.casFailure(k, m.Name, resp)
	}
	out := proto.Clone(obj).(v1.Object)
	v1.Meta(out).ResourceVersion = resp.Header.Revision
	return out, nil
}

// Delete removes the object if it is still at version expect, returning the
// object as it was last stored with resource_version set to the deletion's
// revision.
func (s *Store) Delete(ctx context.Context, k *kinds.Kind, obj v1.Object, expect int64) (v1.Object, error) {
	m := v1.Meta(obj)
	key := Key(k, m.Namespace, m.Name)
	defer s.observe("delete", time.Now())
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", expect)).
		Then(clientv3.OpDelete(key)).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return nil, unavailable(err)
	}
	if !resp.Succeeded {
		return nil, s.casFailure(k, m.Name, resp)
	}
	out := proto.Clone(obj).(v1.Object)
	v1.Meta(out).ResourceVersion = resp.Header.Revision
	return out, nil
}

func (s *Store) casFailure(k *kinds.Kind, name string, resp *clientv3.TxnResponse) error {
	if len(resp.Responses) == 0 || len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
		return apierrors.NotFound(k.GroupResource(), name)
	}
	return apierrors.Conflict(k.GroupResource(), name)
}

// GuaranteedUpdate reads the object, applies fn to a copy and writes the
// result with compare-and-swap, retrying on conflicts. fn may return the
// object unchanged (no write happens) or an error (returned as is).
func (s *Store) GuaranteedUpdate(ctx context.Context, k *kinds.Kind, ns, name string, fn func(cur v1.Object) (v1.Object, error)) (v1.Object, error) {
	for attempt := 0; ; attempt++ {
		cur, err := s.Get(ctx, k, ns, name)
		if err != nil {
			return nil, err
		}
		rev := cur.GetMetadata().ResourceVersion
		next, err := fn(proto.Clone(cur).(v1.Object))
		if err != nil {
			return nil, err
		}
		if proto.Equal(next, cur) {
			return cur, nil
		}
		out, err := s.Update(ctx, k, next, rev)
		if apierrors.IsConflict(err) && attempt < 100 {
			continue
		}
		return out, err
	}
}

// Revision returns etcd's current revision.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	resp, err := s.cli.Get(ctx, "/registry-revision-probe", clientv3.WithCountOnly())
	if err != nil {
		return 0, unavailable(err)
	}
	return resp.Header.Revision, nil
}

// Compact discards etcd history before rev.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	_, err := s.cli.Compact(ctx, rev)
	if err != nil && !strings.Contains(err.Error(), "compacted") {
		return unavailable(err)
	}
	return nil
}

func unavailable(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if st, ok := status.FromError(err); ok && (st.Code() == codes.Canceled || st.Code() == codes.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, rpctypes.ErrRequestTooLarge) || errors.Is(err, rpctypes.ErrGRPCRequestTooLarge) {
		return apierrors.New(apierrors.ErrInvalid, "etcd: %v: the object is too large to store", err)
	}
	return apierrors.New(apierrors.ErrUnavailable, "etcd: %v", err)
}
