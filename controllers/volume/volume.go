// Package volume is the persistent volume controller: it binds
// PersistentVolumeClaims to PersistentVolumes and is the built-in
// tugboat.io/local-path provisioner.
//
// Loop (on the controller skeleton; keys "claim/<ns>/<name>" and
// "volume/<name>"): a claim of an Immediate class (or without class) binds
// at once to the smallest Available volume of its class whose size, access
// modes and selector fit; a claim of a WaitForFirstConsumer class waits
// (event WaitForFirstConsumer) until the scheduler names its node in the
// annotation volume.kubernetes.io/selected-node, then binds to a fitting
// volume whose node affinity allows that node or, for local-path, gets a
// new volume: a directory LocalPathDir/pvc-<uid> on that node (node
// affinity on the node's name, the class's reclaim policy), which the
// kubelet creates and bind-mounts. Binding writes the volume's claimRef
// first (compare-and-swap, so two claims never get one volume), then the
// claim's volumeName and both statuses (Bound). A volume whose claim is
// gone is Released; with reclaim policy Delete it is deleted, a
// local-path one with its folder (reclaim.go: a helper pod on its node).
//
// Events: WaitForFirstConsumer, ProvisioningSucceeded, FailedBinding,
// VolumeDelete, VolumeFailedDelete.
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
	cfg    Config
	pvAPI  *client.Typed[*v1.PersistentVolume]
	pvcAPI *client.Typed[*v1.PersistentVolumeClaim]
	podAPI *client.Typed[*v1.Pod]
	pvs    controller.Source[*v1.PersistentVolume]
	pvcs   controller.Source[*v1.PersistentVolumeClaim]
	scs    controller.Source[*v1.StorageClass]
	pods   controller.Source[*v1.Pod] // the local-path helper pods
	events controller.Recorder
	loop   *controller.Controller
	log    *slog.Logger
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
		pvs: controller.For[*v1.PersistentVolume](d.Informers), pvcs: controller.For[*v1.PersistentVolumeClaim](d.Informers),
		scs: controller.For[*v1.StorageClass](d.Informers), events: d.Recorder, log: log.With("controller", "persistentvolume")}
	c.loop = controller.New(controller.Config{Name: "persistentvolume", Workers: cfg.Workers, Sync: c.sync, Metrics: d.Metrics, Logger: log,
		Synced: []func() bool{c.pvs.HasSynced, c.pvcs.HasSynced, c.scs.HasSynced, c.pods.HasSynced}})
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
	c.pods.AddHandler(informer.Handler[*v1.Pod]{OnAdd: helper, OnUpdate: func(_, p *v1.Pod) { helper(p) }})
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
