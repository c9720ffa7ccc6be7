package volume

import (
	"testing"

	"github.com/tugboat/tugboat/deploy/images"
)

// The helper pods' default image is the busybox image every node imports.
func TestDefaultHelperImageIsBusybox(t *testing.T) {
	if DefaultHelperImage != images.BusyboxRef {
		t.Fatalf("DefaultHelperImage = %q, want deploy/images' busybox %q", DefaultHelperImage, images.BusyboxRef)
	}
}
