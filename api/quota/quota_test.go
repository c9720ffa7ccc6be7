package quota

import (
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"requests.cpu", "1500m", "1500m"},
		{"requests.cpu", "2", "2"},
		{"limits.memory", "512Mi", "512Mi"},
		{"requests.memory", "1G", "1G"},
		{"requests.memory", "1000", "1k"},
		{"requests.memory", "1001", "1001"},
		{"requests.storage", "0", "0"},
		{"pods", "10", "10"},
		{"count/deployments.apps", "3", "3"},
	} {
		if got := Format(tc.name, resource.MustParse(tc.in)); got != tc.want {
			t.Errorf("Format(%s, %s) = %s, want %s", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestValidateName(t *testing.T) {
	for name, want := range map[string]string{
		"pods": "", "requests.cpu": "", "cpu": "", "limits.ephemeral-storage": "", "services.nodeports": "",
		"count/deployments.apps": "", "count/pods": "",
		"gpus":          "not supported in a quota",
		"count/":        "use count/<resource>.<group>",
		"hugepages-2Mi": "not supported in a quota",
		"gold.storageclass.storage.k8s.io/requests.storage": "not supported in a quota",
	} {
		err := ValidateName(name)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}

func container(name string, req, lim map[string]string) *v1.Container {
	return &v1.Container{Name: name, Resources: &v1.ResourceRequirements{Requests: req, Limits: lim}}
}

// A pod uses the larger of its app containers' sum and each init
// container; a finished pod uses nothing; Services use node ports by type.
func TestUsage(t *testing.T) {
	p := &v1.Pod{Spec: &v1.PodSpec{
		Containers: []*v1.Container{
			container("a", map[string]string{"cpu": "200m", "memory": "64Mi"}, map[string]string{"cpu": "1"}),
			container("b", map[string]string{"cpu": "300m", "memory": "64Mi"}, map[string]string{"cpu": "1"}),
		},
		InitContainers: []*v1.Container{container("init", map[string]string{"cpu": "1", "memory": "32Mi"}, nil)},
	}}
	u := Usage("pods", p)
	for name, want := range map[string]string{"pods": "1", "count/pods": "1", "requests.cpu": "1", "cpu": "1", "requests.memory": "128Mi", "limits.cpu": "2", "limits.memory": "0"} {
		if got := Format(name, u[name]); got != want {
			t.Errorf("pod %s = %s, want %s", name, got, want)
		}
	}
	p.Status = &v1.PodStatus{Phase: "Succeeded"}
	if u := Usage("pods", p); !IsZero(u) {
		t.Errorf("finished pod uses %v", PrettyPrint(u))
	}
	for _, tc := range []struct {
		typ       string
		nodePorts string
		lbs       string
	}{{"ClusterIP", "0", "0"}, {"NodePort", "2", "0"}, {"LoadBalancer", "2", "1"}} {
		svc := &v1.Service{Spec: &v1.ServiceSpec{Type: tc.typ, Ports: []*v1.ServicePort{{Port: 80}, {Port: 443}}}}
		u := Usage("services", svc)
		if Format("services.nodeports", u["services.nodeports"]) != tc.nodePorts || Format("services.loadbalancers", u["services.loadbalancers"]) != tc.lbs || u["services"].Value() != 1 {
			t.Errorf("%s service: %s", tc.typ, PrettyPrint(u))
		}
	}
	pvc := &v1.PersistentVolumeClaim{Spec: &v1.PersistentVolumeClaimSpec{Resources: &v1.VolumeResourceRequirements{Requests: map[string]string{"storage": "5Gi"}}}}
	if got := PrettyPrint(Usage("persistentvolumeclaims", pvc)); got != "count/persistentvolumeclaims=1,persistentvolumeclaims=1,requests.storage=5Gi" {
		t.Errorf("claim: %s", got)
	}
}

func TestConstraints(t *testing.T) {
	p := &v1.Pod{Spec: &v1.PodSpec{Containers: []*v1.Container{
		container("web", map[string]string{"cpu": "100m"}, nil),
		container("side", nil, map[string]string{"memory": "1Mi"}),
	}}}
	if err := Constraints(p, []string{"pods", "requests.cpu", "limits.memory"}); err == nil || err.Error() != "must specify limits.memory for: web; requests.cpu for: side" {
		t.Errorf("got %v", err)
	}
	if err := Constraints(p, []string{"pods", "requests.storage"}); err != nil {
		t.Errorf("no compute name capped: %v", err)
	}
}

func TestExceededAndMask(t *testing.T) {
	used := Parse(map[string]string{"pods": "2", "requests.cpu": "900m"})
	req := Parse(map[string]string{"pods": "1", "requests.cpu": "200m", "requests.memory": "1Gi"})
	hard := Parse(map[string]string{"pods": "3", "requests.cpu": "1"})
	over := Exceeded(Add(used, Mask(req, []string{"pods", "requests.cpu"})), hard)
	if strings.Join(over, ",") != "requests.cpu" {
		t.Errorf("exceeded %v", over)
	}
	if got := PrettyPrint(SubtractFloor(used, Parse(map[string]string{"pods": "5"}))); got != "pods=0,requests.cpu=900m" {
		t.Errorf("subtract: %s", got)
	}
}

// TestPodRequestsPodLevel: pod-level requests and limits replace the
// containers' aggregate for what they set; quota constraints are met by
// them.
func TestPodRequestsPodLevel(t *testing.T) {
	s := &v1.PodSpec{
		Resources:  &v1.ResourceRequirements{Requests: map[string]string{"cpu": "1"}, Limits: map[string]string{"cpu": "2", "memory": "1Gi"}},
		Containers: []*v1.Container{{Name: "a", Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "100m", "memory": "64Mi", "ephemeral-storage": "1Gi"}}}},
	}
	req, lim := PodRequests(s)
	for _, c := range []struct {
		got  resource.Quantity
		want string
	}{{req["cpu"], "1"}, {req["memory"], "64Mi"}, {req["ephemeral-storage"], "1Gi"}, {lim["cpu"], "2"}, {lim["memory"], "1Gi"}} {
		if c.got.Cmp(resource.MustParse(c.want)) != 0 {
			t.Errorf("requests %v limits %v: want %s", req.Strings(), lim.Strings(), c.want)
		}
	}
	p := &v1.Pod{Spec: s}
	if err := Constraints(p, []string{"limits.cpu", "limits.memory", "requests.cpu"}); err != nil {
		t.Errorf("pod-level amounts should meet the quota's constraints: %v", err)
	}
	if err := Constraints(p, []string{"limits.ephemeral-storage", "requests.memory"}); err != nil {
		t.Errorf("requests.memory is the container's: %v", err)
	}
	p.Spec.Resources = &v1.ResourceRequirements{Requests: map[string]string{"memory": "1Gi"}}
	if err := Constraints(p, []string{"limits.memory"}); err == nil || !strings.Contains(err.Error(), "must specify limits.memory for: a") {
		t.Errorf("a pod-level request does not stand for a limit: %v", err)
	}
}
