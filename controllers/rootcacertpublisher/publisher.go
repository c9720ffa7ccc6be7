// Package rootcacertpublisher is Kubernetes' root CA certificate
// publisher: every namespace has a ConfigMap "kube-root-ca.crt" whose key
// "ca.crt" is the CA bundle that verifies the apiserver (the
// controller-manager's --root-ca-file, by default its --ca-file), so pods
// can trust the API (the kube-api-access projected volume mounts it at
// /var/run/secrets/kubernetes.io/serviceaccount/ca.crt).
//
// Loop (controller skeleton): Namespace adds and updates enqueue the
// namespace; changes to and deletions of a ConfigMap named
// kube-root-ca.crt enqueue its namespace. sync(namespace) creates the
// ConfigMap if it is missing and puts back its data and description
// annotation if they differ (whatever else a user added to it stays, as
// in Kubernetes); a namespace that is gone or terminating is skipped.
// Without a root CA the controller does not run (it logs why), as
// Kubernetes' controller-manager skips it.
package rootcacertpublisher

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"maps"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// Name and key of the published ConfigMap, and its description (the
// annotation Kubernetes sets).
const (
	ConfigMapName      = "kube-root-ca.crt"
	Key                = "ca.crt"
	DescriptionKey     = "kubernetes.io/description"
	Description        = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
	DefaultWorkerCount = 1
)

// Config configures the publisher.
type Config struct {
	// RootCA is the PEM bundle to publish (--root-ca-file; empty: the
	// controller does not run).
	RootCA []byte
	// Workers is how many namespaces are synced in parallel (default 1).
	Workers int
}

// Validate checks that RootCA, if set, holds PEM certificates.
func (c *Config) Validate() error {
	if len(c.RootCA) == 0 {
		return nil
	}
	rest := c.RootCA
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			n++
		}
	}
	if n == 0 {
		return errors.New("root CA: no PEM certificates found")
	}
	return nil
}

// Controller is the publisher.
type Controller struct {
	ca    string
	nss   controller.Source[*v1.Namespace]
	cms   controller.Source[*v1.ConfigMap]
	cmAPI *client.Typed[*v1.ConfigMap]
	loop  *controller.Controller
	log   *slog.Logger
}

// New builds the controller on the shared informers.
func New(d controller.Deps, cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{ca: string(cfg.RootCA), log: log.With("controller", "root-ca-cert-publisher")}
	if c.ca == "" {
		return c, nil
	}
	c.nss, c.cms = controller.For[*v1.Namespace](d.Informers), controller.For[*v1.ConfigMap](d.Informers)
	c.cmAPI = client.For[*v1.ConfigMap](d.Client)
	c.loop = controller.New(controller.Config{
		Name: "root-ca-cert-publisher", Workers: max(cfg.Workers, DefaultWorkerCount), Sync: c.sync, Metrics: d.Metrics, Logger: log,
		Synced: []func() bool{c.nss.HasSynced, c.cms.HasSynced},
	})
	ns := func(n *v1.Namespace) { c.loop.Enqueue(n.GetMetadata().GetName()) }
	c.nss.AddHandler(informer.Handler[*v1.Namespace]{OnAdd: ns, OnUpdate: func(_, n *v1.Namespace) { ns(n) }})
	cm := func(m *v1.ConfigMap) {
		if m.GetMetadata().GetName() == ConfigMapName {
			c.loop.Enqueue(m.GetMetadata().GetNamespace())
		}
	}
	c.cms.AddHandler(informer.Handler[*v1.ConfigMap]{OnUpdate: func(_, m *v1.ConfigMap) { cm(m) }, OnDelete: cm})
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	if c.loop == nil {
		c.log.Warn("no root CA (--root-ca-file, or --ca-file): not publishing " + ConfigMapName)
		<-ctx.Done()
		return nil
	}
	return c.loop.Run(ctx)
}

func (c *Controller) sync(ctx context.Context, ns string) error {
	n, ok := c.nss.Get(ns)
	if !ok || n.GetMetadata().GetDeletionTimestamp() != nil || n.GetStatus().GetPhase() == "Terminating" {
		return nil
	}
	want := map[string]string{Key: c.ca}
	cur, ok := c.cms.Get(ns + "/" + ConfigMapName)
	if !ok {
		_, err := c.cmAPI.Create(ctx, &v1.ConfigMap{
			Metadata: &v1.ObjectMeta{Namespace: ns, Name: ConfigMapName, Annotations: map[string]string{DescriptionKey: Description}},
			Data:     want,
		})
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
			return nil // an existing one is checked when the cache sees it
		case errors.Is(err, apierrors.ErrForbidden) || apierrors.IsNotFound(err):
			return nil // the namespace is going away
		}
		return fmt.Errorf("creating %s/%s: %w", ns, ConfigMapName, err)
	}
	if maps.Equal(cur.Data, want) && len(cur.BinaryData) == 0 && cur.GetMetadata().GetAnnotations()[DescriptionKey] == Description {
		return nil
	}
	fresh := informer.Copy(cur)
	fresh.Data, fresh.BinaryData = want, nil
	if fresh.Metadata.Annotations == nil {
		fresh.Metadata.Annotations = map[string]string{}
	}
	fresh.Metadata.Annotations[DescriptionKey] = Description
	if _, err := c.cmAPI.Update(ctx, fresh); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating %s/%s: %w", ns, ConfigMapName, err)
	}
	return nil
}
