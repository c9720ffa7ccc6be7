package runtime

// ImageStatus describes an image on the node.
type ImageStatus struct {
	// Ref is the normalised reference (docker.io/library/busybox:latest).
	Ref string
	// ID is the digest of the image's config (what `crictl images` shows).
	ID string
	// Digest is the digest of the manifest or index the name points at.
	Digest string
	// Size is the sum of the layers' compressed sizes for this platform.
	Size int64
	// User is the user the image's config runs as ("" is root; "1000",
	// "1000:50", "nginx"), for the kubelet's runAsNonRoot check. A CRI
	// runtime reports only the user, not the group.
	User string
}
