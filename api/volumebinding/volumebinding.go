// Package volumebinding matches PersistentVolumeClaims to
// PersistentVolumes as Kubernetes' binder does
// (pkg/controller/volume/persistentvolume: FindMatchingVolume, the
// access-mode index of findBestMatchForClaim, checkVolumeSatisfyClaim).
// The persistent volume controller binds with it and the scheduler's
// volume binding filter finds a WaitForFirstConsumer claim's candidate
// volumes with it, so the two never disagree on which volume fits.
//
// The rules:
//
//   - a volume bound to another claim, smaller than the claim's storage
//     request, of another volumeMode (unset is Filesystem on both sides)
//     or being deleted never matches;
//   - a volume reserved for the claim (claimRef naming it, with its uid or
//     none) is taken before any other, if its node affinity admits the
//     node (if one is selected) — otherwise the claim gets none;
//   - any other volume must be Available (or not yet given a phase), match
//     the claim's selector, have the claim's storageClassName ("" for
//     none), its node affinity must admit the node and its access modes
//     must include all of the claim's;
//   - of those, the smallest wins. Without a node (an Immediate claim) the
//     candidates are tried in groups by how many access modes a volume has,
//     fewest first, so a ReadWriteOnce claim takes a ReadWriteOnce volume
//     before a larger-moded one, as Kubernetes' index by access modes does
//     (volumes with as many modes are one group here; Kubernetes orders
//     such sets arbitrarily). Equal sizes go by name, so the choice is
//     stable.
package volumebinding

import (
	"errors"
	"slices"
	"sort"

	"github.com/tugboat/tugboat/api/labels"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// FindMatchingVolume is the claim's volume among pvs, or nil: reserved
// for it, or the smallest that fits (see above). node is the selected
// node of a WaitForFirstConsumer claim (its labels are what the volumes'
// node affinity is checked against), nil for an Immediate claim; with
// delayBinding and no node only a volume reserved for the claim is
// returned (the claim waits for its node).
func FindMatchingVolume(pvc *v1.PersistentVolumeClaim, pvs []*v1.PersistentVolume, node *v1.Node, delayBinding bool) *v1.PersistentVolume {
	cs := pvc.GetSpec()
	want := storage(cs.GetResources().GetRequests())
	var sel labels.Selector
	if cs.GetSelector() != nil {
		s, err := labels.FromLabelSelector(cs.GetSelector())
		if err != nil {
			return nil // validation refuses such selectors
		}
		sel = s
	}
	var best *v1.PersistentVolume
	var bestSize int64
	for _, pv := range pvs {
		s := pv.GetSpec()
		reserved := ReservedFor(pv, pvc)
		if s.GetClaimRef() != nil && !reserved {
			continue
		}
		size := storage(s.GetCapacity())
		if size < want || volumeModeMismatch(pvc, pv) || pv.GetMetadata().GetDeletionTimestamp() != nil {
			continue
		}
		nodeOK := node == nil || nodeAffinityAllows(pv, node)
		if reserved {
			if !nodeOK {
				return nil
			}
			return pv
		}
		if node == nil && delayBinding {
			continue
		}
		if ph := pv.GetStatus().GetPhase(); ph != "" && ph != "Available" && ph != "Pending" {
			continue
		}
		if sel != nil && !sel.Matches(pv.GetMetadata().GetLabels()) {
			continue
		}
		if s.GetStorageClassName() != cs.GetStorageClassName() || !nodeOK || !accessModesInclude(pv, pvc) {
			continue
		}
		if best == nil || size < bestSize || size == bestSize && pv.GetMetadata().GetName() < best.GetMetadata().GetName() {
			best, bestSize = pv, size
		}
	}
	return best
}

// FindBestMatch is the volume of an Immediate claim (no node): the
// volumes whose access modes include the claim's, tried in groups of the
// same number of modes, fewest first.
func FindBestMatch(pvc *v1.PersistentVolumeClaim, pvs []*v1.PersistentVolume, delayBinding bool) *v1.PersistentVolume {
	groups := map[int][]*v1.PersistentVolume{}
	for _, pv := range pvs {
		if accessModesInclude(pv, pvc) {
			n := len(pv.GetSpec().GetAccessModes())
			groups[n] = append(groups[n], pv)
		}
	}
	sizes := make([]int, 0, len(groups))
	for n := range groups {
		sizes = append(sizes, n)
	}
	sort.Ints(sizes)
	for _, n := range sizes {
		if pv := FindMatchingVolume(pvc, groups[n], nil, delayBinding); pv != nil {
			return pv
		}
	}
	return nil
}

// Candidate reports whether pv can serve the WaitForFirstConsumer claim
// on some node: every rule but node affinity, which the scheduler checks
// per node.
func Candidate(pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) bool {
	return FindMatchingVolume(pvc, []*v1.PersistentVolume{pv}, nil, false) != nil
}

// CheckVolumeSatisfyClaim says why a volume the claim names in
// spec.volumeName cannot serve it, in Kubernetes' words, or nil.
func CheckVolumeSatisfyClaim(pv *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim) error {
	switch {
	case pv.GetMetadata().GetDeletionTimestamp() != nil:
		return errors.New("the volume is marked for deletion " + `"` + pv.GetMetadata().GetName() + `"`)
	case storage(pv.GetSpec().GetCapacity()) < storage(pvc.GetSpec().GetResources().GetRequests()):
		return errors.New("requested PV is too small")
	case pv.GetSpec().GetStorageClassName() != pvc.GetSpec().GetStorageClassName():
		return errors.New("storageClassName does not match")
	case volumeModeMismatch(pvc, pv):
		return errors.New("incompatible volumeMode")
	case !accessModesInclude(pv, pvc):
		return errors.New("incompatible accessMode")
	}
	return nil
}

// ReservedFor reports whether pv's claimRef names pvc (with its uid, or
// none yet: a volume reserved by name).
func ReservedFor(pv *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim) bool {
	r, m := pv.GetSpec().GetClaimRef(), pvc.GetMetadata()
	return r != nil && r.GetName() == m.GetName() && r.GetNamespace() == m.GetNamespace() && (r.GetUid() == "" || r.GetUid() == m.GetUid())
}

func volumeModeMismatch(pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) bool {
	mode := func(s string) string {
		if s == "" {
			return "Filesystem"
		}
		return s
	}
	return mode(pvc.GetSpec().GetVolumeMode()) != mode(pv.GetSpec().GetVolumeMode())
}

// accessModesInclude reports whether the volume has every access mode
// the claim asks for.
func accessModesInclude(pv *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim) bool {
	for _, m := range pvc.GetSpec().GetAccessModes() {
		if !slices.Contains(pv.GetSpec().GetAccessModes(), m) {
			return false
		}
	}
	return true
}

// nodeAffinityAllows reports whether a volume's node affinity admits the
// node (its name and labels).
func nodeAffinityAllows(pv *v1.PersistentVolume, node *v1.Node) bool {
	req := pv.GetSpec().GetNodeAffinity().GetRequired()
	if req == nil {
		return true
	}
	terms, err := labels.CompileNodeSelector(req, "spec.nodeAffinity.required")
	return err == nil && labels.NodeSelectorMatches(terms, node.GetMetadata().GetLabels(), node.GetMetadata().GetName())
}

// storage is the bytes of a capacity or request's storage (0 if unset or
// unparsable: validation refuses those).
func storage(m map[string]string) int64 {
	q, err := resource.Parse(m["storage"])
	if err != nil {
		return 0
	}
	return q.Value()
}
