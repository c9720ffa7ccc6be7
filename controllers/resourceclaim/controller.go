// Package resourceclaim is Kubernetes' resourceclaim controller, the part
// that holds without DRA drivers: for every pod entry in
// spec.resourceClaims that names a ResourceClaimTemplate it makes the pod
// its own ResourceClaim from the template and records the claim's name in
// the pod's status.resourceClaimStatuses, which is where the scheduler
// (and Kubernetes' kubelet) look for it.
//
// Loop (controller skeleton): pod adds and updates enqueue pods with
// template entries; a claim made for a pod (owned by it) that changes or
// goes enqueues that pod; a template appearing enqueues the pods of its
// namespace that name it. sync(pod) skips pods being deleted or finished;
// for each template entry without a status it reuses a claim already made
// for it (owned by the pod, annotated resource.kubernetes.io/pod-claim-name
// with the entry's name: a create whose status update failed is not
// repeated) or creates one — generateName <pod>-<entry>- (cut to 57
// characters, as Kubernetes), the template's labels and annotations plus
// the pod-claim-name annotation, its spec.spec, a controller reference to
// the pod with blockOwnerDeletion, so the garbage collector deletes the
// claim with the pod — then writes every new name to the pod's status in
// one UpdateStatus. A missing template is an event
// (FailedResourceClaimCreation) and a retry with back-off.
//
// Not done, as no driver ever allocates here: clearing status.reservedFor
// of finished pods and deleting a finished pod's claims before the pod.
package resourceclaim

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// PodClaimNameAnnotation names, on a claim made from a template, the pod's
// spec.resourceClaims entry it was made for (Kubernetes' annotation).
const PodClaimNameAnnotation = "resource.kubernetes.io/pod-claim-name"

// DefaultWorkers is how many pods are synced in parallel.
const DefaultWorkers = 5

// Config configures the controller.
type Config struct {
	// Workers is how many pods are synced in parallel (default 5).
	Workers int
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("workers: must be >= 0, got %d", c.Workers)
	}
	return nil
}

// Controller makes pods' claims from their templates.
type Controller struct {
	pods      controller.Source[*v1.Pod]
	claims    controller.Source[*v1.ResourceClaim]
	templates controller.Source[*v1.ResourceClaimTemplate]
	claimAPI  *client.Typed[*v1.ResourceClaim]
	podAPI    *client.Typed[*v1.Pod]
	events    controller.Recorder
	loop      *controller.Controller
	log       *slog.Logger
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
	c := &Controller{
		pods: controller.For[*v1.Pod](d.Informers), claims: controller.For[*v1.ResourceClaim](d.Informers),
		templates: controller.For[*v1.ResourceClaimTemplate](d.Informers),
		claimAPI:  client.For[*v1.ResourceClaim](d.Client), podAPI: client.For[*v1.Pod](d.Client),
		events: d.Recorder, log: log.With("controller", "resourceclaim"),
	}
	workers := cfg.Workers
	if workers == 0 {
		workers = DefaultWorkers
	}
	c.loop = controller.New(controller.Config{
		Name: "resourceclaim", Workers: workers, Sync: c.sync, Metrics: d.Metrics, Logger: log,
		Synced: []func() bool{c.pods.HasSynced, c.claims.HasSynced, c.templates.HasSynced},
	})
	c.claims.AddIndex(controller.IndexControllerUID, controller.ControllerUIDIndex[*v1.ResourceClaim])
	c.pods.AddIndex(controller.IndexNamespace, controller.NamespaceIndex[*v1.Pod])
	pod := func(p *v1.Pod) {
		if usesTemplates(p) {
			c.loop.EnqueueObject(p)
		}
	}
	c.pods.AddHandler(informer.Handler[*v1.Pod]{OnAdd: pod, OnUpdate: func(_, p *v1.Pod) { pod(p) }})
	claim := func(rc *v1.ResourceClaim) {
		if ref := controller.ControllerRef(rc.GetMetadata()); ref != nil && ref.Kind == "Pod" {
			c.loop.Enqueue(rc.GetMetadata().GetNamespace() + "/" + ref.Name)
		}
	}
	c.claims.AddHandler(informer.Handler[*v1.ResourceClaim]{OnUpdate: func(_, rc *v1.ResourceClaim) { claim(rc) }, OnDelete: claim})
	c.templates.AddHandler(informer.Handler[*v1.ResourceClaimTemplate]{OnAdd: func(t *v1.ResourceClaimTemplate) {
		for _, p := range c.pods.ByIndex(controller.IndexNamespace, t.GetMetadata().GetNamespace()) {
			for _, e := range p.GetSpec().GetResourceClaims() {
				if e.GetResourceClaimTemplateName() == t.GetMetadata().GetName() {
					c.loop.EnqueueObject(p)
				}
			}
		}
	}})
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

func usesTemplates(p *v1.Pod) bool {
	for _, e := range p.GetSpec().GetResourceClaims() {
		if e.ResourceClaimTemplateName != nil {
			return true
		}
	}
	return false
}

func (c *Controller) sync(ctx context.Context, key string) error {
	pod, ok := c.pods.Get(key)
	if !ok || pod.GetMetadata().GetDeletionTimestamp() != nil || !usesTemplates(pod) {
		return nil
	}
	if ph := pod.GetStatus().GetPhase(); ph == "Succeeded" || ph == "Failed" {
		return nil
	}
	recorded := map[string]bool{}
	for _, st := range pod.GetStatus().GetResourceClaimStatuses() {
		recorded[st.GetName()] = true
	}
	// Claims already made for this pod, by the entry they serve.
	mine := map[string]string{}
	for _, rc := range c.claims.ByIndex(controller.IndexControllerUID, pod.GetMetadata().GetUid()) {
		if entry := rc.GetMetadata().GetAnnotations()[PodClaimNameAnnotation]; entry != "" && rc.GetMetadata().GetDeletionTimestamp() == nil {
			mine[entry] = rc.GetMetadata().GetName()
		}
	}
	var add []*v1.PodResourceClaimStatus
	var firstErr error
	for _, e := range pod.GetSpec().GetResourceClaims() {
		if e.ResourceClaimTemplateName == nil || recorded[e.GetName()] {
			continue
		}
		name, ok := mine[e.GetName()]
		if !ok {
			var err error
			if name, err = c.create(ctx, pod, e); err != nil {
				c.events.Eventf(pod, controller.Warning, "FailedResourceClaimCreation", "PodResourceClaim %s: %v", e.GetName(), err)
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
		}
		add = append(add, &v1.PodResourceClaimStatus{Name: e.GetName(), ResourceClaimName: &name})
	}
	if len(add) > 0 {
		fresh := informer.Copy(pod)
		if fresh.Status == nil {
			fresh.Status = &v1.PodStatus{}
		}
		fresh.Status.ResourceClaimStatuses = append(fresh.Status.ResourceClaimStatuses, add...)
		if _, err := c.podAPI.UpdateStatus(ctx, fresh); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("recording the claims of pod %s: %w", key, err)
		}
	}
	return firstErr
}

// create makes the pod's claim for entry e from its template.
func (c *Controller) create(ctx context.Context, pod *v1.Pod, e *v1.PodResourceClaim) (string, error) {
	ns := pod.GetMetadata().GetNamespace()
	t, ok := c.templates.Get(ns + "/" + e.GetResourceClaimTemplateName())
	if !ok {
		return "", fmt.Errorf("resource claim template %q: resourceclaimtemplate.resource.k8s.io %q not found", e.GetResourceClaimTemplateName(), e.GetResourceClaimTemplateName())
	}
	generateName := pod.GetMetadata().GetName() + "-" + e.GetName() + "-"
	if len(generateName) > 57 {
		generateName = generateName[:57] // room for the random suffix, as Kubernetes
	}
	tm := t.GetSpec().GetMetadata()
	annotations := map[string]string{}
	for k, v := range tm.GetAnnotations() {
		annotations[k] = v
	}
	annotations[PodClaimNameAnnotation] = e.GetName()
	labels := map[string]string{}
	for k, v := range tm.GetLabels() {
		labels[k] = v
	}
	claim := &v1.ResourceClaim{
		Metadata: &v1.ObjectMeta{Namespace: ns, GenerateName: generateName, Labels: labels, Annotations: annotations,
			OwnerReferences: []*v1.OwnerReference{controller.NewControllerRef(pod, "v1", "Pod")}},
		Spec: informer.Copy(t).GetSpec().GetSpec(),
	}
	got, err := c.claimAPI.Create(ctx, claim)
	if err != nil {
		return "", fmt.Errorf("create ResourceClaim %s: %w", generateName, err)
	}
	c.log.Info("made resource claim", "pod", v1.Key(pod), "claim", got.GetMetadata().GetName(), "template", t.GetMetadata().GetName())
	return got.GetMetadata().GetName(), nil
}
