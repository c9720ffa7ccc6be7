package volumebinding_test

import (
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/volumebinding"
)

type pvOpt func(*v1.PersistentVolume)

func pv(name, size string, opts ...pvOpt) *v1.PersistentVolume {
	p := &v1.PersistentVolume{Metadata: &v1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec: &v1.PersistentVolumeSpec{Capacity: map[string]string{"storage": size}, AccessModes: []string{"ReadWriteOnce"}, VolumeMode: "Filesystem",
			HostPath: &v1.HostPathVolumeSource{Path: "/srv/" + name}},
		Status: &v1.PersistentVolumeStatus{Phase: "Available"}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func modes(m ...string) pvOpt   { return func(p *v1.PersistentVolume) { p.Spec.AccessModes = m } }
func class(c string) pvOpt      { return func(p *v1.PersistentVolume) { p.Spec.StorageClassName = c } }
func label(k, v string) pvOpt   { return func(p *v1.PersistentVolume) { p.Metadata.Labels[k] = v } }
func phase(ph string) pvOpt     { return func(p *v1.PersistentVolume) { p.Status.Phase = ph } }
func volumeMode(m string) pvOpt { return func(p *v1.PersistentVolume) { p.Spec.VolumeMode = m } }
func deleting() pvOpt {
	return func(p *v1.PersistentVolume) { p.Metadata.DeletionTimestamp = timestamppb.Now() }
}
func claimRef(name, uid string) pvOpt {
	return func(p *v1.PersistentVolume) {
		p.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: name, Uid: uid}
	}
}
func onZone(zone string) pvOpt {
	return func(p *v1.PersistentVolume) {
		p.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []*v1.NodeSelectorTerm{{
			MatchExpressions: []*v1.LabelSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: "In", Values: []string{zone}}}}}}}
	}
}

func claim(size string, f ...func(*v1.PersistentVolumeClaimSpec)) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{Metadata: &v1.ObjectMeta{Name: "data", Namespace: "default", Uid: "claim-uid"},
		Spec: &v1.PersistentVolumeClaimSpec{AccessModes: []string{"ReadWriteOnce"}, StorageClassName: new(string),
			Resources: &v1.VolumeResourceRequirements{Requests: map[string]string{"storage": size}}}}
	for _, o := range f {
		o(c.Spec)
	}
	return c
}

// The binder's choice, as Kubernetes' FindMatchingVolume and its index by
// access modes make it.
func TestFindBestMatch(t *testing.T) {
	manual := "manual"
	for _, tc := range []struct {
		name  string
		claim *v1.PersistentVolumeClaim
		pvs   []*v1.PersistentVolume
		delay bool
		want  string // "" for none
	}{
		{"10Gi never binds 1Gi", claim("10Gi"), []*v1.PersistentVolume{pv("small", "1Gi")}, false, ""},
		{"smallest that is large enough", claim("10Gi"), []*v1.PersistentVolume{pv("small", "1Gi"), pv("huge", "100Gi"), pv("fits", "10Gi"), pv("big", "20Gi")}, false, "fits"},
		{"units compare as quantities", claim("1G"), []*v1.PersistentVolume{pv("gib", "1Gi"), pv("mb", "999M")}, false, "gib"},
		{"equal sizes go by name", claim("1Gi"), []*v1.PersistentVolume{pv("b", "1Gi"), pv("a", "1024Mi")}, false, "a"},
		{"fewest access modes first, then size", claim("1Gi"), []*v1.PersistentVolume{pv("rwo-rox", "1Gi", modes("ReadWriteOnce", "ReadOnlyMany")), pv("rwo", "5Gi")}, false, "rwo"},
		{"access modes must all be there", claim("1Gi", func(s *v1.PersistentVolumeClaimSpec) { s.AccessModes = []string{"ReadWriteMany"} }),
			[]*v1.PersistentVolume{pv("rwo", "1Gi"), pv("rwx", "2Gi", modes("ReadWriteOnce", "ReadWriteMany"))}, false, "rwx"},
		{"class must match", claim("1Gi", func(s *v1.PersistentVolumeClaimSpec) { s.StorageClassName = &manual }),
			[]*v1.PersistentVolume{pv("none", "1Gi"), pv("other", "1Gi", class("fast")), pv("manual", "2Gi", class("manual"))}, false, "manual"},
		{"no class takes only volumes without one", claim("1Gi"), []*v1.PersistentVolume{pv("manual", "1Gi", class("manual"))}, false, ""},
		{"selector", claim("1Gi", func(s *v1.PersistentVolumeClaimSpec) {
			s.Selector = &v1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}}
		}), []*v1.PersistentVolume{pv("web", "1Gi", label("tier", "web")), pv("db", "3Gi", label("tier", "db"))}, false, "db"},
		{"volumeMode", claim("1Gi", func(s *v1.PersistentVolumeClaimSpec) { s.VolumeMode = "Block" }),
			[]*v1.PersistentVolume{pv("fs", "1Gi"), pv("block", "1Gi", volumeMode("Block"))}, false, "block"},
		{"unset volumeMode is Filesystem", claim("1Gi"), []*v1.PersistentVolume{pv("unset", "1Gi", volumeMode(""))}, false, "unset"},
		{"only Available volumes", claim("1Gi"), []*v1.PersistentVolume{pv("released", "1Gi", phase("Released")), pv("failed", "1Gi", phase("Failed")), pv("bound", "1Gi", phase("Bound"))}, false, ""},
		{"not one being deleted", claim("1Gi"), []*v1.PersistentVolume{pv("going", "1Gi", deleting())}, false, ""},
		{"not one claimed by another", claim("1Gi"), []*v1.PersistentVolume{pv("theirs", "1Gi", claimRef("other", "u2")), pv("same-name-other-uid", "1Gi", claimRef("data", "u2"))}, false, ""},
		{"reserved for the claim beats a smaller one", claim("1Gi"), []*v1.PersistentVolume{pv("small", "1Gi"), pv("mine", "8Gi", claimRef("data", "claim-uid"), phase("Bound"))}, false, "mine"},
		{"reserved by name, no uid yet", claim("1Gi"), []*v1.PersistentVolume{pv("small", "1Gi"), pv("mine", "8Gi", claimRef("data", ""))}, false, "mine"},
		{"reserved but too small is not taken", claim("10Gi"), []*v1.PersistentVolume{pv("mine", "1Gi", claimRef("data", ""))}, false, ""},
		{"waiting for the consumer: only a reserved one", claim("1Gi"), []*v1.PersistentVolume{pv("free", "1Gi")}, true, ""},
		{"waiting for the consumer, reserved", claim("1Gi"), []*v1.PersistentVolume{pv("free", "1Gi"), pv("mine", "2Gi", claimRef("data", ""))}, true, "mine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := volumebinding.FindBestMatch(tc.claim, tc.pvs, tc.delay)
			if name := got.GetMetadata().GetName(); name != tc.want {
				t.Errorf("got %q, want %q", name, tc.want)
			}
		})
	}
}

// With a selected node, the volume's node affinity is checked against the
// node's name and labels, and the smallest fitting volume wins whatever
// its number of access modes.
func TestFindMatchingVolumeOnNode(t *testing.T) {
	node := &v1.Node{Metadata: &v1.ObjectMeta{Name: "n1", Labels: map[string]string{"topology.kubernetes.io/zone": "a", "kubernetes.io/hostname": "n1"}}}
	onNode := func(name string) pvOpt {
		return func(p *v1.PersistentVolume) {
			p.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []*v1.NodeSelectorTerm{{
				MatchFields: []*v1.LabelSelectorRequirement{{Key: "metadata.name", Operator: "In", Values: []string{name}}}}}}}
		}
	}
	for _, tc := range []struct {
		name string
		pvs  []*v1.PersistentVolume
		want string
	}{
		{"zone label", []*v1.PersistentVolume{pv("zone-b", "1Gi", onZone("b")), pv("zone-a", "2Gi", onZone("a"))}, "zone-a"},
		{"node name", []*v1.PersistentVolume{pv("n2", "1Gi", onNode("n2")), pv("n1", "2Gi", onNode("n1"))}, "n1"},
		{"no affinity fits any node", []*v1.PersistentVolume{pv("anywhere", "1Gi")}, "anywhere"},
		{"smallest, more modes or not", []*v1.PersistentVolume{pv("rwo", "5Gi"), pv("rwo-rox", "1Gi", modes("ReadWriteOnce", "ReadOnlyMany"))}, "rwo-rox"},
		{"too small on the right node", []*v1.PersistentVolume{pv("n1", "512Mi", onNode("n1"))}, ""},
		{"reserved on another node: none", []*v1.PersistentVolume{pv("free", "1Gi"), pv("mine", "1Gi", onZone("b"), claimRef("data", "claim-uid"))}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := volumebinding.FindMatchingVolume(claim("1Gi"), tc.pvs, node, true)
			if name := got.GetMetadata().GetName(); name != tc.want {
				t.Errorf("got %q, want %q", name, tc.want)
			}
		})
	}
}

// A volume named in spec.volumeName is checked as Kubernetes'
// checkVolumeSatisfyClaim does, with its texts.
func TestCheckVolumeSatisfyClaim(t *testing.T) {
	for _, tc := range []struct {
		name string
		pv   *v1.PersistentVolume
		want string
	}{
		{"fits", pv("v", "10Gi"), ""},
		{"too small", pv("v", "1Gi"), "requested PV is too small"},
		{"class", pv("v", "10Gi", class("fast")), "storageClassName does not match"},
		{"volumeMode", pv("v", "10Gi", volumeMode("Block")), "incompatible volumeMode"},
		{"access modes", pv("v", "10Gi", modes("ReadOnlyMany")), "incompatible accessMode"},
		{"deleted", pv("v", "10Gi", deleting()), `the volume is marked for deletion "v"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := volumebinding.CheckVolumeSatisfyClaim(tc.pv, claim("10Gi"))
			if got := ""; err != nil {
				got = err.Error()
				if got != tc.want {
					t.Errorf("got %q, want %q", got, tc.want)
				}
			} else if tc.want != "" {
				t.Errorf("got nil, want %q", tc.want)
			}
		})
	}
}

// A WaitForFirstConsumer claim's candidates for the scheduler: every rule
// but node affinity.
func TestCandidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		pv   *v1.PersistentVolume
		want bool
	}{
		{"fits, any zone", pv("v", "1Gi", onZone("b")), true},
		{"too small", pv("v", "512Mi"), false},
		{"access modes", pv("v", "1Gi", modes("ReadOnlyMany")), false},
		{"claimed by another", pv("v", "1Gi", claimRef("other", "u2")), false},
		{"reserved for it", pv("v", "1Gi", claimRef("data", "claim-uid"), phase("Bound")), true},
		{"released", pv("v", "1Gi", phase("Released")), false},
	} {
		if got := volumebinding.Candidate(claim("1Gi"), tc.pv); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
