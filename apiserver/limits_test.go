package apiserver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

func wantCode(t *testing.T, what string, err error, code codes.Code, text string) {
	t.Helper()
	// Raw gRPC calls return status errors, typed clients apierrors.
	if apierrors.Code(err) != code || !strings.Contains(status.Convert(apierrors.ToGRPC(err)).Message(), text) {
		t.Errorf("%s: want %v containing %q, got %v", what, code, text, err)
	}
}

func anyOf(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestInputLimits: names, sizes, counts, unknown fields, continue tokens,
// watch versions and Bind targets are checked before anything is stored,
// with InvalidArgument (or OutOfRange) naming the field, never Unavailable.
func TestInputLimits(t *testing.T) {
	// A long bookmark interval: a watch from a version of another kind
	// must not wait for a bookmark to be accepted.
	s := apiservertest.StartSecure(t, func(c *apiserver.Config) { c.BookmarkInterval = time.Minute })
	ctx := ctxT(t)
	objects := s.Client.Objects()
	create := func(m v1.Object) error {
		_, err := objects.Create(ctx, &v1.CreateRequest{Object: anyOf(t, m)})
		return err
	}

	t.Run("name lengths", func(t *testing.T) {
		long := strings.Repeat("a", 5000)
		wantCode(t, "5,000-character ClusterRole", create(&v1.ClusterRole{Metadata: &v1.ObjectMeta{Name: long}}), codes.InvalidArgument, "metadata.name: \"aaaa")
		wantCode(t, "5,000-character ClusterRole", create(&v1.ClusterRole{Metadata: &v1.ObjectMeta{Name: long}}), codes.InvalidArgument, "must be no more than 253 characters")
		wantCode(t, "5,000-character ClusterRoleBinding", create(&v1.ClusterRoleBinding{Metadata: &v1.ObjectMeta{Name: "system:" + long}, RoleRef: &v1.RoleRef{Kind: "ClusterRole", Name: "view"}}), codes.InvalidArgument, "no more than 253")
		wantCode(t, "254-character Role", create(&v1.Role{Metadata: &v1.ObjectMeta{Name: strings.Repeat("r", 254)}}), codes.InvalidArgument, "no more than 253")
		if err := create(&v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: strings.Repeat("c", 253)}}); err != nil {
			t.Errorf("253 characters is a valid name: %v", err)
		}
		wantCode(t, "64-character Namespace", create(&v1.Namespace{Metadata: &v1.ObjectMeta{Name: strings.Repeat("n", 64)}}), codes.InvalidArgument, "no more than 63 characters")
		svc := &v1.Service{Metadata: &v1.ObjectMeta{Name: strings.Repeat("s", 64)}, Spec: &v1.ServiceSpec{Ports: []*v1.ServicePort{{Port: 80}}}}
		wantCode(t, "64-character Service", create(svc), codes.InvalidArgument, "no more than 63 characters")
	})

	t.Run("huge names and objects", func(t *testing.T) {
		huge := strings.Repeat("x", 700_000)
		err := create(&v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: huge}})
		wantCode(t, "700,000-character name", err, codes.InvalidArgument, "(700000 characters) must be no more than 253 characters")
		if len(status.Convert(err).Message()) > 1000 {
			t.Errorf("the refusal echoes the name: %d bytes", len(status.Convert(err).Message()))
		}
		wantCode(t, "700,000-character ClusterRole", create(&v1.ClusterRole{Metadata: &v1.ObjectMeta{Name: huge}}), codes.InvalidArgument, "no more than 253")
		_, err = objects.Get(ctx, &v1.GetRequest{Kind: "ConfigMap", Namespace: "default", Name: huge})
		wantCode(t, "get of a 700,000-character name", err, codes.InvalidArgument, "metadata.name")
		_, err = objects.Delete(ctx, &v1.DeleteRequest{Kind: "ConfigMap", Namespace: huge, Name: "x"})
		wantCode(t, "delete in a 700,000-character namespace", err, codes.InvalidArgument, "metadata.namespace")
		// Over the request limit (Kubernetes' 1.5 MiB).
		big := &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "big"}, Data: map[string]string{"k": strings.Repeat("b", 1600*1024)}}
		wantCode(t, "1.6 MiB ConfigMap", create(big), codes.InvalidArgument, "larger than the limit")
		// Under it, but too large for etcd once encoded with its key.
		big.Data["k"] = strings.Repeat("b", 1_565_000)
		wantCode(t, "ConfigMap etcd would refuse", create(big), codes.InvalidArgument, "too large to store")
		if _, err := objects.Get(ctx, &v1.GetRequest{Kind: "ConfigMap", Namespace: "default", Name: "big"}); status.Code(err) != codes.NotFound {
			t.Errorf("a refused object was stored: %v", err)
		}
	})

	t.Run("counts", func(t *testing.T) {
		p := newPod("many", nil)
		for i := range 10_000 {
			p.Spec.Containers = append(p.Spec.Containers, &v1.Container{Name: fmt.Sprintf("c%d", i), Image: "busybox"})
		}
		wantCode(t, "10,000 containers", create(p), codes.InvalidArgument, "more than the limit of 100 per pod")
		replicas := int32(2_000_000_000)
		d := &v1.Deployment{Metadata: &v1.ObjectMeta{Name: "huge"}, Spec: &v1.DeploymentSpec{Replicas: &replicas,
			Selector: &v1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
			Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"a": "b"}}, Spec: newPod("x", nil).Spec}}}
		wantCode(t, "replicas 2,000,000,000", create(d), codes.InvalidArgument, "spec.replicas: 2000000000 is more than the limit of 10000")
	})

	t.Run("unknown fields", func(t *testing.T) {
		// An "empty" ConfigMap with 95 KB in a field number no version knows.
		cm, _ := proto.Marshal(&v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "empty"}})
		hidden := bytes.Repeat([]byte("hidden!"), 95_000/7)
		cm = protowire.AppendTag(cm, 4999, protowire.BytesType)
		cm = protowire.AppendBytes(cm, hidden)
		a := &anypb.Any{TypeUrl: "type.googleapis.com/tugboat.api.v1.ConfigMap", Value: cm}
		if _, err := objects.Create(ctx, &v1.CreateRequest{Object: a}); err != nil {
			t.Fatal(err)
		}
		raw, err := s.Etcd().Get(ctx, "/registry/configmaps/default/empty")
		if err != nil || len(raw.Kvs) != 1 {
			t.Fatalf("raw get: %v", err)
		}
		if bytes.Contains(raw.Kvs[0].Value, []byte("hidden!")) || len(raw.Kvs[0].Value) > 1000 {
			t.Errorf("unknown field stored: %d bytes at rest", len(raw.Kvs[0].Value))
		}
		got, err := objects.Get(ctx, &v1.GetRequest{Kind: "ConfigMap", Namespace: "default", Name: "empty"})
		if err != nil || bytes.Contains(got.Value, []byte("hidden!")) {
			t.Errorf("unknown field served back: %v, %d bytes", err, len(got.GetValue()))
		}
	})

	t.Run("continue tokens", func(t *testing.T) {
		rev, err := s.Client.Objects().List(ctx, &v1.ListRequest{Kind: "ConfigMap", Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		tok := func(r int64) string {
			return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"rev":%d,"key":"/registry/configmaps/default/a"}`, r))
		}
		for _, c := range []struct {
			what, token string
		}{
			{"future revision", tok(rev.ResourceVersion + 1_000_000)},
			{"negative revision", tok(-5)},
			{"zero revision", tok(0)},
			{"not base64", "%%%"},
			{"another kind's key", base64.RawURLEncoding.EncodeToString([]byte(`{"rev":1,"key":"/registry/secrets/default/a"}`))},
		} {
			_, err := objects.List(ctx, &v1.ListRequest{Kind: "ConfigMap", Limit: 1, Continue: c.token})
			wantCode(t, "continue token with a "+c.what, err, codes.InvalidArgument, "continue: token is not valid for this list")
			if err != nil && strings.Contains(status.Convert(err).Message(), "-5") {
				t.Errorf("the token is echoed back: %v", err)
			}
		}
	})

	t.Run("watch versions", func(t *testing.T) {
		ns, err := client.For[*v1.Namespace](s.Client).Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "watch-from-here"}})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		// From the future: refused, not accepted to deliver nothing.
		w, err := objects.Watch(wctx, &v1.WatchRequest{Kind: "ConfigMap", ResourceVersion: ns.Metadata.ResourceVersion + 1_000_000})
		if err == nil {
			_, err = w.Recv()
		}
		wantCode(t, "watch from a future version", err, codes.OutOfRange, "too large resource version")
		if !errors.Is(apierrors.FromGRPC(err), apierrors.ErrExpired) {
			t.Errorf("clients must read it as expired (re-list): %v", apierrors.FromGRPC(err))
		}
		// From a current version written by another kind: accepted at once
		// (no bookmark needed), and delivers what follows.
		start := time.Now()
		w, err = objects.Watch(wctx, &v1.WatchRequest{Kind: "ConfigMap", ResourceVersion: ns.Metadata.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		if err := create(&v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "after"}}); err != nil {
			t.Fatal(err)
		}
		e, err := w.Recv()
		if err != nil || e.Type != "ADDED" {
			t.Fatalf("watch from another kind's version: %v %v", e, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Logf("note: the watch took %v to accept a current version", d)
		}
	})

	t.Run("bind target", func(t *testing.T) {
		if err := create(newPod("bindme", nil)); err != nil {
			t.Fatal(err)
		}
		for _, node := range []string{"NODE-UPPER", "a/b/../c", strings.Repeat("n", 300), "nöde", "x,O=system:masters", "n1\nn2"} {
			_, err := objects.Bind(ctx, &v1.BindRequest{Namespace: "default", Name: "bindme", NodeName: node})
			wantCode(t, fmt.Sprintf("bind to %q", node), err, codes.InvalidArgument, "nodeName")
		}
	})
}
