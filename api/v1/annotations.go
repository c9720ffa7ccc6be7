package v1

// Well-known annotations, as k8s.io/api/core/v1 names them.
const (
	// LastAppliedAnnotation holds the manifest an object was last applied
	// from, as kubectl keeps it: apply removes the labels and annotations
	// that were in it and are no longer in the manifest, and leaves the
	// ones others added (a controller's revision annotation) alone;
	// describe does not show it.
	LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
)
