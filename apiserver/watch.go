package apiserver

import (
	"context"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/fields"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/auth"
	"github.com/tugboat/tugboat/apiserver/watchcache"
)

// Watch implements Objects.Watch from the kind's watch cache. Selectors are
// applied here: an object that stops matching is a DELETED for this watcher,
// one that starts matching an ADDED.
func (s *Server) Watch(req *v1.WatchRequest, stream v1.Objects_WatchServer) error {
	ctx := stream.Context()
	k, err := lookupKind(req.Kind)
	if err != nil {
		return err
	}
	filter, err := selectors(k, req.LabelSelector, req.FieldSelector)
	if err != nil {
		return err
	}
	if req.ResourceVersion < 0 {
		return apierrors.Invalid("resourceVersion", "must be >= 0")
	}
	ns := ""
	if k.Namespaced {
		ns = req.Namespace
	}
	if err := s.authorize(ctx, "watch", k, "", ns, "", req.FieldSelector); err != nil {
		return err
	}
	match := func(o v1.Object) bool {
		if o == nil {
			return false
		}
		if ns != "" && o.GetMetadata().GetNamespace() != ns {
			return false
		}
		return filter == nil || filter(o)
	}
	release, err := s.watchLimits.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	w, err := watchFor(ctx, s.caches[k], req.ResourceVersion, req.FieldSelector)
	if err != nil {
		return err
	}
	defer w.Stop()
	s.metrics.watchOpen.WithLabelValues(k.Plural).Inc()
	defer s.metrics.watchOpen.WithLabelValues(k.Plural).Dec()
	sent := func(typ string) { s.metrics.watchSent.WithLabelValues(k.Plural, typ).Inc() }
	for {
		e, err := w.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		typ := e.Type
		switch e.Type {
		case watchcache.Bookmark:
			// A long watch outlives its credentials' checks: a revoked
			// certificate ends it here, within a bookmark interval.
			if err := s.stillValid(auth.UserFrom(ctx)); err != nil {
				return err
			}
			if !req.AllowBookmarks {
				continue
			}
			if err := stream.Send(&v1.WatchEvent{Type: typ, ResourceVersion: e.Rev}); err != nil {
				return err
			}
			sent(typ)
			continue
		case watchcache.Added, watchcache.Deleted:
			if !match(e.Obj) {
				continue
			}
		case watchcache.Modified:
			now, before := match(e.Obj), match(e.Prev)
			switch {
			case now && !before:
				typ = watchcache.Added
			case !now && before:
				typ = watchcache.Deleted
			case !now && !before:
				continue
			}
		}
		obj := e.Any()
		if k.Name == "Secret" {
			if r := redactSecret(e.Obj); r != e.Obj {
				if obj, err = pack(r); err != nil {
					return err
				}
			}
		}
		if err := stream.Send(&v1.WatchEvent{Type: typ, Object: obj, ResourceVersion: e.Rev}); err != nil {
			return err
		}
		sent(typ)
	}
}

// watchIndexes are the fields the watch caches index their watchers by
// (Kubernetes' indexed triggers): pods by spec.nodeName, which every
// kubelet's watch pins to its node.
var watchIndexes = map[string]*watchcache.Index{"Pod": watchcache.PodNodeName}

// watchFor registers a watcher with cache: under the cache's index value
// if the field selector pins the indexed field with "=", so the cache
// hands it only the events of objects with that value; otherwise for
// every event. The selectors are applied to what it is handed either way.
func watchFor(ctx context.Context, cache *watchcache.Cache, from int64, fieldSelector string) (*watchcache.Watcher, error) {
	if f := cache.IndexField(); f != "" {
		fs, err := fields.Parse(fieldSelector)
		if err != nil {
			return nil, apierrors.Invalid("fieldSelector", "%v", err)
		}
		if v, ok := fs.Get(f); ok {
			return cache.WatchIndexed(ctx, from, v)
		}
	}
	return cache.Watch(ctx, from)
}
