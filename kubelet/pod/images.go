package pod

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/distribution/reference"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Waiting reasons of containers, as Kubernetes names them.
const (
	ReasonContainerCreating          = "ContainerCreating"
	ReasonPodInitializing            = "PodInitializing"
	ReasonErrImagePull               = "ErrImagePull"
	ReasonImagePullBackOff           = "ImagePullBackOff"
	ReasonErrImageNeverPull          = "ErrImageNeverPull"
	ReasonInvalidImageName           = "InvalidImageName"
	ReasonCrashLoopBackOff           = "CrashLoopBackOff"
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonRunContainerError          = "RunContainerError"
)

// waiting is why a container is not running (yet).
type waiting struct {
	Reason  string
	Message string
	// Until, if set, is when the next attempt is due (a back-off).
	Until time.Time
}

// imagePuller applies image pull policies for every pod of the node: the
// pull back-off per container, and a short memory of registries that
// failed, so that imagePullPolicy Always on an air-gapped node does not
// ask an unreachable registry for every container.
//
// Policy Always deviates from Kubernetes in one way, on purpose: when the
// pull fails but the node has the image (imported from a tarball), the
// node's copy is used and the Pulled event says so, instead of failing
// with ErrImagePull. Images built for Tugboat's air-gapped labs are tagged
// :latest, which defaults the policy to Always.
type imagePuller struct {
	cfg     Config
	images  runtime.ImageService
	src     Sources // the pods' image pull secrets
	rec     Recorder
	log     *slog.Logger
	now     func() time.Time
	backoff *backoff
	metrics *metrics

	mu        sync.Mutex
	present   map[string]time.Time // image -> when the runtime last said it is on the node
	failed    map[string]time.Time // registry host -> when a pull from it failed
	lastError map[string]string    // backoff key -> last pull error
	pulling   map[string]*sync.Mutex
}

func newImagePuller(cfg Config, images runtime.ImageService, src Sources, rec Recorder, m *metrics, now func() time.Time) *imagePuller {
	return &imagePuller{
		cfg: cfg, images: images, src: src, rec: rec, log: cfg.Logger, now: now, metrics: m,
		backoff:   newBackoff(cfg.ImagePullBackoffInitial, cfg.ImagePullBackoffMax, now),
		present:   map[string]time.Time{},
		failed:    map[string]time.Time{},
		lastError: map[string]string{},
		pulling:   map[string]*sync.Mutex{},
	}
}

// pullPolicy is the container's policy, defaulted as the apiserver does.
func pullPolicy(c *v1.Container) string {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	named, err := reference.ParseDockerRef(c.Image)
	if err != nil {
		return "IfNotPresent"
	}
	if t, ok := named.(reference.Tagged); ok && t.Tag() != "latest" {
		return "IfNotPresent"
	}
	if _, ok := named.(reference.Digested); ok {
		return "IfNotPresent"
	}
	return "Always"
}

func registryHost(image string) string {
	named, err := reference.ParseDockerRef(image)
	if err != nil {
		return ""
	}
	return reference.Domain(named)
}

// ensure makes c's image available per its pull policy. It returns nil
// when the container can be created, or why it has to wait.
func (p *imagePuller) ensure(ctx context.Context, pod *v1.Pod, c *v1.Container) *waiting {
	image := c.Image
	key := pod.GetMetadata().GetUid() + "/" + c.Name + "/" + image
	var err error
	present := p.knownPresent(image)
	if !present {
		_, err = p.images.ImageStatus(ctx, image)
		present = err == nil
		if present {
			p.setPresent(image, true)
		}
	}
	switch {
	case errors.Is(err, runtime.ErrInvalid):
		p.rec.Eventf(pod, eventWarning, "InspectFailed", "Failed to apply default image tag %q: %v", image, err)
		return &waiting{Reason: ReasonInvalidImageName, Message: fmt.Sprintf("invalid image name %q: %v", image, err)}
	case err != nil && !errors.Is(err, runtime.ErrImageNotPresent):
		return &waiting{Reason: ReasonErrImagePull, Message: fmt.Sprintf("checking image %s on the node: %v", image, err)}
	}
	policy := pullPolicy(c)
	switch {
	case policy == "Never" && present, policy == "IfNotPresent" && present:
		p.rec.Eventf(pod, eventNormal, "Pulled", "Container image %q already present on machine", image)
		return nil
	case policy == "Never":
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never: %s", image, p.cfg.imageHint(image))
		p.rec.Eventf(pod, eventWarning, ReasonErrImageNeverPull, "%s", msg)
		return &waiting{Reason: ReasonErrImageNeverPull, Message: msg}
	}
	// Always, or IfNotPresent without the image: pull.
	host := registryHost(image)
	if policy == "Always" && present && p.registryFailedRecently(host) {
		p.rec.Eventf(pod, eventNormal, "Pulled", "Container image %q already present on machine; registry %s failed recently, not pulling", image, host)
		return nil
	}
	if busy, until := p.backoff.inBackoffSinceUpdate(key); busy {
		p.mu.Lock()
		last := p.lastError[key]
		p.mu.Unlock()
		p.rec.Eventf(pod, eventNormal, "BackOff", "Back-off pulling image %q", image)
		return &waiting{Reason: ReasonImagePullBackOff, Until: until,
			Message: fmt.Sprintf("Back-off pulling image %q: %s", image, last)}
	}

	unlock := p.lockImage(image)
	defer unlock()
	if policy == "Always" && present && p.registryFailedRecently(host) {
		// The pod that held the lock just failed to pull it.
		p.rec.Eventf(pod, eventNormal, "Pulled", "Container image %q already present on machine; registry %s failed recently, not pulling", image, host)
		return nil
	}
	if policy == "IfNotPresent" {
		// Another pod may have pulled it while this one waited for the lock.
		if _, err := p.images.ImageStatus(ctx, image); err == nil {
			p.rec.Eventf(pod, eventNormal, "Pulled", "Container image %q already present on machine", image)
			return nil
		}
	}
	p.rec.Eventf(pod, eventNormal, "Pulling", "Pulling image %q", image)
	start := p.now()
	err = p.pull(ctx, pod, image)
	took := p.now().Sub(start)
	if err == nil {
		p.setPresent(image, true)
		p.metrics.imagePulls.WithLabelValues("success").Inc()
		p.backoff.reset(key)
		p.rec.Eventf(pod, eventNormal, "Pulled", "Successfully pulled image %q in %s", image, took.Round(time.Millisecond))
		return nil
	}
	p.metrics.imagePulls.WithLabelValues("failure").Inc()
	if ctx.Err() != nil {
		return &waiting{Reason: ReasonErrImagePull, Message: fmt.Sprintf("pulling %s: %v", image, ctx.Err())}
	}
	p.mu.Lock()
	p.failed[host] = p.now()
	p.mu.Unlock()
	if policy == "Always" && present {
		p.rec.Eventf(pod, eventNormal, "Pulled", "Container image %q already present on machine; pulling it failed (%v), using the node's copy", image, err)
		return nil
	}
	msg := fmt.Sprintf("pulling %s failed: %v; %s", image, err, p.cfg.imageHint(image))
	p.backoff.next(key, p.now())
	p.mu.Lock()
	p.lastError[key] = msg
	p.mu.Unlock()
	p.rec.Eventf(pod, eventWarning, "Failed", "Failed to pull image %q: %v", image, err)
	p.rec.Eventf(pod, eventWarning, "Failed", "Error: %s", ReasonErrImagePull)
	// Sync again halfway through the back-off, so the status shows
	// ImagePullBackOff between attempts (as in Kubernetes).
	return &waiting{Reason: ReasonErrImagePull, Message: msg, Until: p.now().Add(min(p.backoff.delay(key)/2, 5*time.Second))}
}

// presentFor is how long a positive ImageStatus is trusted: the pods of a
// burst ask the runtime once. A stale answer costs one failed
// CreateContainer, which forgets it (forgetPresent).
const presentFor = 10 * time.Second

func (p *imagePuller) knownPresent(image string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.present[image]
	return ok && p.now().Sub(t) < presentFor
}

func (p *imagePuller) setPresent(image string, yes bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if yes {
		p.present[image] = p.now()
	} else {
		delete(p.present, image)
	}
}

func (p *imagePuller) registryFailedRecently(host string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.failed[host]
	if ok && p.now().Sub(t) > p.cfg.RegistryRetry {
		delete(p.failed, host)
		return false
	}
	return ok
}

// lockImage serialises pulls of one image, so that 30 pods of a new
// Deployment pull it once.
func (p *imagePuller) lockImage(image string) func() {
	p.mu.Lock()
	l := p.pulling[image]
	if l == nil {
		l = &sync.Mutex{}
		p.pulling[image] = l
	}
	p.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// forget drops the pull state of a pod.
func (p *imagePuller) forget(uid string) {
	p.backoff.forgetPrefix(uid + "/")
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.lastError {
		if len(k) > len(uid) && k[:len(uid)+1] == uid+"/" {
			delete(p.lastError, k)
		}
	}
}
