// Package volume is the persistent volume controller: it binds
// PersistentVolumeClaims to PersistentVolumes and is the built-in
// tugboat.io/local-path provisioner.
//
// Loop (on the controller skeleton; keys "claim/<ns>/<name>" and
// "volume/<name>"): a claim of an Immediate class (or without class)
// binds at once to the volume Kubernetes' binder would pick (package
// api/volumebinding:
// the smallest Available volume whose capacity is at least the claim's
// storage request, with all its access modes, its storageClassName, its
// volumeMode and matching its selector; a volume reserved for it by
// claimRef first). A claim of a WaitForFirstConsumer class waits until
// the scheduler names its node in the annotation
// volume.kubernetes.io/selected-node, then binds to such a volume whose
// node affinity admits that node (its name and labels) or, for
// local-path, gets a new volume: a directory LocalPathDir/pvc-<uid> on
// that node (node affinity on the node's name, the class's reclaim
// policy), which the kubelet creates and bind-mounts. A claim naming a
// volume in spec.volumeName binds to it only if the volume is free (or
// reserved for it) and satisfies it. Binding writes the volume's claimRef
// first (compare-and-swap, so two claims never get one volume), then the
// claim's volumeName and both statuses (Bound). A volume whose claim is
// gone is Released; with reclaim policy Delete it is deleted, a
// local-path one with its folder (reclaim.go: a helper pod on its node;
// what happens when that node is gone is said there).
//
// A claim left Pending says why in an Event, in Kubernetes' words:
// FailedBinding "no persistent volumes available for this claim and no
// storage class is set" (no class), WaitForFirstConsumer "waiting for
// first consumer to be created before binding" or WaitForPodScheduled
// "waiting for pod(s) P to be scheduled" (a WaitForFirstConsumer class,
// no node yet), ProvisioningFailed "no volume plugin matched name:
// kubernetes.io/no-provisioner" (a class whose volumes are made by hand,
// none fits), ProvisioningFailed "storageclass.storage.k8s.io "c" not
// found", FailedBinding "Cannot bind to requested volume "v": requested
// PV is too small" (or storageClassName does not match, incompatible
// volumeMode, incompatible accessMode). Kubernetes' claim status has no
// message field; the claim stays phase Pending and the Event says why.
// A selected node that is gone before the volume was made there is
// dropped from the claim (ProvisioningFailed "failed to get target node:
// node "n" not found; ..."), so the scheduler selects again, as
// Kubernetes' external provisioner does.
//
// Events: WaitForFirstConsumer, WaitForPodScheduled, FailedBinding,
// ProvisioningSucceeded, ProvisioningFailed, VolumeDelete,
// VolumeFailedDelete.
package volume

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// SelectedNodeAnnotation is where the scheduler names a waiting claim's node.
const SelectedNodeAnnotation = "volume.kubernetes.io/selected-node"

// Config tunes the controller.
type Config struct {
	// LocalPathDir is the folder on every node under which local-path
	// volumes are made (--local-path-dir, default /var/lib/tugboat/local-path).
	LocalPathDir string
	// HelperImage runs the helper pods that remove a deleted local-path
	// volume's folder (--local-path-helper-image, default the busybox
	// image every node imports).
	HelperImage string
	// Workers (default 2).
	Workers int
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.LocalPathDir != "" && !strings.HasPrefix(c.LocalPathDir, "/") {
		return fmt.Errorf("--local-path-dir: must be an absolute path, got %q", c.LocalPathDir)
	}
	if c.Workers < 0 {
		return fmt.Errorf("volume Workers: must be >= 0")
	}
	return nil
}

// Controller is the persistent volume controller.
type Controller struct {
	cfg     Config
	pvAPI   *client.Typed[*v1.PersistentVolume]
	pvcAPI  *client.Typed[*v1.PersistentVolumeClaim]
	podAPI  *client.Typed[*v1.Pod]
	nodeAPI *client.Typed[*v1.Node]
	pvs     controller.Source[*v1.PersistentVolume]
	pvcs    controller.Source[*v1.PersistentVolumeClaim]
	scs     controller.Source[*v1.StorageClass]
	pods    controller.Source[*v1.Pod] // the local-path helper pods, a waiting claim's pods
	nodes   controller.Source[*v1.Node]
	events  controller.Recorder
	loop    *controller.Controller
	log     *slog.Logger
}

// New builds the controller on the shared informers.
// DefaultHelperImage is the image of the helper pods that remove a
// deleted local-path volume's folder: the busybox image deploy/images
// builds and every node imports (a test keeps the two names equal; the
// controller-manager does not link the image builder).
const DefaultHelperImage = "tugboat.local/busybox:latest"

func New(d controller.Deps, cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.LocalPathDir == "" {
		cfg.LocalPathDir = "/var/lib/tugboat/local-path"
	}
	if cfg.HelperImage == "" {
		cfg.HelperImage = DefaultHelperImage
	}
	if cfg.Workers == 0 {
		cfg.Workers = 2
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{cfg: cfg, pvAPI: client.For[*v1.PersistentVolume](d.Client), pvcAPI: client.For[*v1.PersistentVolumeClaim](d.Client),
		podAPI: client.For[*v1.Pod](d.Client), pods: controller.For[*v1.Pod](d.Informers),
		nodeAPI: client.For[*v1.Node](d.Client), nodes: controller.For[*v1.Node](d.Informers),
		pvs: controller.For[*v1.PersistentVolume](d.Informers), pvcs: controller.For[*v1.PersistentVolumeClaim](d.Informers),
		scs: controller.For[*v1.StorageClass](d.Informers), events: d.Recorder, log: log.With("controller", "persistentvolume")}
	c.loop = controller.New(controller.Config{Name: "persistentvolume", Workers: cfg.Workers, Sync: c.sync, Metrics: d.Metrics, Logger: log,
		Synced: []func() bool{c.pvs.HasSynced, c.pvcs.HasSynced, c.scs.HasSynced, c.pods.HasSynced, c.nodes.HasSynced}})
	claim := func(p *v1.PersistentVolumeClaim) { c.loop.Enqueue("claim/" + v1.Key(p)) }
	vol := func(p *v1.PersistentVolume) {
		c.loop.Enqueue("volume/" + p.GetMetadata().GetName())
		if r := p.GetSpec().GetClaimRef(); r != nil {
			c.loop.Enqueue("claim/" + r.GetNamespace() + "/" + r.GetName())
		}
	}
	c.pvcs.AddHandler(informer.Handler[*v1.PersistentVolumeClaim]{OnAdd: claim, OnUpdate: func(_, p *v1.PersistentVolumeClaim) { claim(p) },
		OnDelete: func(p *v1.PersistentVolumeClaim) {
			if n := p.GetSpec().GetVolumeName(); n != "" {
				c.loop.Enqueue("volume/" + n)
			}
		}})
	c.pvs.AddHandler(informer.Handler[*v1.PersistentVolume]{OnAdd: vol, OnUpdate: func(_, p *v1.PersistentVolume) { vol(p) }})
	helper := func(p *v1.Pod) {
		if pv := p.GetMetadata().GetLabels()[HelperLabel]; pv != "" && p.GetMetadata().GetNamespace() == helperNamespace {
			c.loop.Enqueue("volume/" + pv)
		}
	}
	// A pod that waits to be scheduled changes a waiting claim's event
	// (WaitForPodScheduled).
	consumer := func(p *v1.Pod) {
		if p.GetSpec().GetNodeName() != "" {
			return
		}
		for _, v := range p.GetSpec().GetVolumes() {
			if n := v.GetPersistentVolumeClaim().GetClaimName(); n != "" {
				c.loop.Enqueue("claim/" + p.GetMetadata().GetNamespace() + "/" + n)
			}
		}
	}
	c.pods.AddHandler(informer.Handler[*v1.Pod]{OnAdd: func(p *v1.Pod) { helper(p); consumer(p) }, OnUpdate: func(_, p *v1.Pod) { helper(p) }})
	node := func(n *v1.Node) { c.volumesOnNode(n.GetMetadata().GetName()) }
	c.nodes.AddHandler(informer.Handler[*v1.Node]{OnAdd: node, OnDelete: node})
	// A new volume may fit a waiting claim.
	c.pvs.AddHandler(informer.Handler[*v1.PersistentVolume]{OnAdd: func(*v1.PersistentVolume) { c.pendingClaims() }})
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

func (c *Controller) pendingClaims() {
	for _, p := range c.pvcs.List() {
		if p.GetSpec().GetVolumeName() == "" {
			c.loop.Enqueue("claim/" + v1.Key(p))
		}
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	if k, ok := strings.CutPrefix(key, "claim/"); ok {
		return c.syncClaim(ctx, k)
	}
	if k, ok := strings.CutPrefix(key, "volume/"); ok {
		return c.syncVolume(ctx, k)
	}
	return nil
}
