package pod

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// claimSources is a Sources with claims (the interface's other methods
// are never called here).
type claimSources struct {
	Sources
	pvc *v1.PersistentVolumeClaim
	pv  *v1.PersistentVolume
}

func (s claimSources) Claim(context.Context, string, string) (*v1.PersistentVolumeClaim, *v1.PersistentVolume, error) {
	if s.pvc == nil {
		return nil, nil, apierrors.New(apierrors.ErrNotFound, "not found")
	}
	return s.pvc, s.pv, nil
}

// A claim volume is the bound volume's directory, made on first use; an
// unbound claim waits; a missing claim is a config error.
func TestClaimVolume(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "local-path", "pvc-1")
	src := &v1.PersistentVolumeClaimVolumeSource{ClaimName: "www-web-0"}
	pvc := &v1.PersistentVolumeClaim{Metadata: &v1.ObjectMeta{Name: "www-web-0"}, Spec: &v1.PersistentVolumeClaimSpec{VolumeName: "pvc-1"}}
	pv := &v1.PersistentVolume{Metadata: &v1.ObjectMeta{Name: "pvc-1"}, Spec: &v1.PersistentVolumeSpec{Local: &v1.LocalVolumeSource{Path: dir}}}
	got, err := claimVolume(context.Background(), claimSources{pvc: pvc, pv: pv}, "default", src)
	if err != nil || got != dir {
		t.Fatalf("claimVolume = %q, %v; want %q", got, err, dir)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("volume directory not made: %v", err)
	}
	if _, err := claimVolume(context.Background(), claimSources{pvc: pvc}, "default", src); !errors.Is(err, errClaimNotBound) {
		t.Errorf("unbound claim: %v", err)
	}
	var ce *configError
	if _, err := claimVolume(context.Background(), claimSources{}, "default", src); !errors.As(err, &ce) {
		t.Errorf("missing claim: %v, want a config error", err)
	}
}
