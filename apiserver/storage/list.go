package storage

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// ListOptions selects and pages a list.
type ListOptions struct {
	Namespace string
	// Filter keeps an object when it returns true; nil keeps all.
	Filter func(v1.Object) bool
	// Limit caps the items returned; 0 means all.
	Limit int64
	// Continue resumes a paged list from the token a previous page returned.
	Continue string
}

// ListResult is one page.
type ListResult struct {
	Items []v1.Object
	// Revision is the etcd revision the whole list (all pages) is read at.
	Revision int64
	// Continue is set when more items remain.
	Continue string
}

type continueToken struct {
	Rev int64  `json:"rev"`
	Key string `json:"key"`
}

const listChunk = 500

// List reads objects of a kind at one revision, filtered and paged. Every
// page of a paged list is read at the first page's revision, so a paged list
// is a consistent snapshot.
func (s *Store) List(ctx context.Context, k *kinds.Kind, opts ListOptions) (*ListResult, error) {
	prefix := KindPrefix(k, opts.Namespace)
	end := clientv3.GetPrefixRangeEnd(prefix)
	start := prefix
	var rev int64
	if opts.Continue != "" {
		raw, err := base64.RawURLEncoding.DecodeString(opts.Continue)
		var tok continueToken
		if err == nil {
			err = json.Unmarshal(raw, &tok)
		}
		if err != nil || tok.Key < prefix || tok.Key >= end || tok.Rev <= 0 {
			return nil, apierrors.Invalid("continue", "token is not valid for this list (pass the continue value a previous page returned, unchanged)")
		}
		start, rev = tok.Key, tok.Rev
	}
	defer s.observe("list", time.Now())
	res := &ListResult{}
	for {
		ops := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(listChunk)}
		if rev != 0 {
			ops = append(ops, clientv3.WithRev(rev))
		}
		resp, err := s.cli.Get(ctx, start, ops...)
		if err != nil {
			if isCompacted(err) {
				return nil, apierrors.New(apierrors.ErrExpired, "continue token expired: the list's revision %d has been compacted; start the list again", rev)
			}
			if errors.Is(err, rpctypes.ErrFutureRev) {
				return nil, apierrors.Invalid("continue", "token is not valid for this list: its revision %d is newer than the store's", rev)
			}
			return nil, unavailable(err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for i, kv := range resp.Kvs {
			obj, err := s.Decode(k, kv.Key, kv.Value, kv.ModRevision)
			if err != nil {
				return nil, err
			}
			if opts.Filter != nil && !opts.Filter(obj) {
				continue
			}
			res.Items = append(res.Items, obj)
			if opts.Limit > 0 && int64(len(res.Items)) == opts.Limit {
				more := i < len(resp.Kvs)-1 || resp.More
				if more {
					next := string(kv.Key) + "\x00"
					b, _ := json.Marshal(continueToken{Rev: rev, Key: next})
					res.Continue = base64.RawURLEncoding.EncodeToString(b)
				}
				res.Revision = rev
				return res, nil
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	res.Revision = rev
	return res, nil
}

func isCompacted(err error) bool {
	return errors.Is(err, rpctypes.ErrCompacted)
}
