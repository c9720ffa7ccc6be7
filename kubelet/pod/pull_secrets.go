package pod

import (
	"context"
	"strings"

	"github.com/distribution/reference"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/credentialprovider"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// ReasonFailedToRetrieveImagePullSecret is the Warning event of a pull
// secret the kubelet cannot read, as Kubernetes' kubelet names it.
const ReasonFailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"

// pullSecrets reads the pod's image pull secrets. Those it cannot read
// (missing, or refused) are skipped with one Warning event naming them,
// Kubernetes' "Unable to retrieve some image pull secrets (...)": the
// pull is still attempted, with what was read.
//
// They are read from the API for every pull attempt, never kept: a
// secret created or fixed after a failed pull is used by the next attempt
// (after the back-off), as Kubernetes' kubelet, which reads them on every
// pod sync, uses it. Unlike Kubernetes, a sync that pulls nothing (the
// image is present, or in back-off) reads none, so a missing secret is
// reported only when a pull needs it: Tugboat's kubelet has no secret
// cache, and a Get per secret per sync would be the price.
func (p *imagePuller) pullSecrets(ctx context.Context, pod *v1.Pod) []*v1.Secret {
	var out []*v1.Secret
	var failed []string
	for _, ref := range pod.GetSpec().GetImagePullSecrets() {
		if ref.GetName() == "" {
			continue
		}
		s, err := p.src.Secret(ctx, pod.GetMetadata().GetNamespace(), ref.GetName())
		if err != nil {
			p.log.Info("Unable to retrieve pull secret, the image pull may not succeed.", "pod", pod.GetMetadata().GetNamespace()+"/"+pod.GetMetadata().GetName(), "secret", ref.GetName(), "err", err)
			failed = append(failed, ref.GetName())
			continue
		}
		out = append(out, s)
	}
	if len(failed) > 0 {
		p.rec.Eventf(pod, eventWarning, ReasonFailedToRetrieveImagePullSecret,
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
	}
	return out
}

// pull pulls image with the pod's pull secrets as Kubernetes' kubelet
// does: the credentials of the keyring that match the image's repository,
// one after the other until one succeeds (every failure is reported);
// with none matching, anonymously. A pull secret that does not parse
// fails the pull, naming the secret.
func (p *imagePuller) pull(ctx context.Context, pod *v1.Pod, image string) error {
	if len(pod.GetSpec().GetImagePullSecrets()) == 0 {
		_, err := p.images.EnsureImage(ctx, image, nil)
		return err
	}
	keyring, err := credentialprovider.FromSecrets(p.pullSecrets(ctx, pod))
	if err != nil {
		return err
	}
	repo := image
	if named, err := reference.ParseDockerRef(image); err == nil {
		repo = named.Name()
	}
	creds, ok := keyring.Lookup(repo)
	if !ok {
		_, err := p.images.EnsureImage(ctx, image, nil)
		return err
	}
	var errs aggregate
	for _, c := range creds {
		_, err := p.images.EnsureImage(ctx, image, &runtime.RegistryAuth{Username: c.Username, Password: c.Password})
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errs
}

// aggregate is several pull failures, printed as Kubernetes prints an
// aggregate error: "[first, second]".
type aggregate []error

func (a aggregate) Error() string {
	msgs := make([]string, len(a))
	for i, e := range a {
		msgs[i] = e.Error()
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}

func (a aggregate) Unwrap() []error { return a }
