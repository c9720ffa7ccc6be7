package auth

import v1 "github.com/tugboat/tugboat/api/v1"

func rule(groups, resources, verbs []string) *v1.PolicyRule {
	return &v1.PolicyRule{ApiGroups: groups, Resources: resources, Verbs: verbs}
}

var (
	all       = []string{"*"}
	readVerbs = []string{"get", "list", "watch"}
	// gcVerbs are what the garbage collector does to what it collects.
	gcVerbs  = []string{"get", "list", "watch", "update", "patch", "delete"}
	anyGroup = []string{"*"}
	core     = []string{""}
	// workloads are what edit and view cover (view: not secrets).
	viewable = []string{"pods", "pods/log", "services", "endpoints", "configmaps", "events", "replicasets", "deployments",
		"namespaces", "nodes", "leases", "replicasets/status", "deployments/status", "pods/status",
		"jobs", "jobs/status", "cronjobs", "cronjobs/status", "poddisruptionbudgets", "poddisruptionbudgets/status",
		"daemonsets", "daemonsets/status", "controllerrevisions", "horizontalpodautoscalers", "horizontalpodautoscalers/status",
		"persistentvolumeclaims", "persistentvolumes", "storageclasses", "statefulsets", "statefulsets/status", "serviceaccounts", "endpointslices", "limitranges", "resourcequotas", "resourcequotas/status", "networkpolicies", "ingressclasses", "ingresses", "ingresses/status", "deviceclasses", "resourceclaims", "resourceclaims/status", "resourceclaimtemplates"}
	editable = []string{"pods", "pods/exec", "pods/attach", "pods/portforward", "pods/eviction", "pods/log", "services", "endpoints", "configmaps", "secrets", "events",
		"replicasets", "deployments", "replicasets/scale", "deployments/scale", "jobs", "cronjobs", "poddisruptionbudgets", "daemonsets", "horizontalpodautoscalers", "persistentvolumeclaims", "statefulsets", "statefulsets/scale", "serviceaccounts", "networkpolicies", "ingresses", "resourceclaims", "resourceclaimtemplates"}
)

// tokenRule lets admin and edit make service account tokens, as
// Kubernetes' aggregate-to-edit does.
func tokenRule() *v1.PolicyRule {
	return rule(core, []string{"serviceaccounts/token"}, []string{"create"})
}

func clusterRole(name string, rules ...*v1.PolicyRule) *v1.ClusterRole {
	return &v1.ClusterRole{Metadata: &v1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}}, Rules: rules}
}

func clusterBinding(name, role, kind, subject string) *v1.ClusterRoleBinding {
	return &v1.ClusterRoleBinding{
		Metadata: &v1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}},
		Subjects: []*v1.RBACSubject{{Kind: kind, Name: subject}},
		RoleRef:  &v1.RoleRef{ApiGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
	}
}

// DefaultPolicy is the RBAC every cluster starts with (created if missing,
// never overwritten): the user-facing roles cluster-admin, admin, edit and
// view, and least-privilege roles for the control-plane components. Kubelets
// are governed by the node authorizer, not RBAC.
func DefaultPolicy() []v1.Object {
	return []v1.Object{
		clusterRole("cluster-admin", rule(anyGroup, all, all)),
		// Explicit verbs on the RBAC kinds: "*" would include escalate
		// and bind, and so every permission (escalation.go).
		clusterRole("admin", rule(anyGroup, editable, all),
			rule([]string{RBACGroup}, []string{"roles", "rolebindings"}, []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}),
			tokenRule()),
		clusterRole("edit", rule(anyGroup, editable, all), tokenRule()),
		clusterRole("view", rule(anyGroup, viewable, readVerbs)),
		clusterRole("system:kube-scheduler",
			rule(core, []string{"pods", "nodes", "namespaces"}, readVerbs),
			// Preemption deletes its victims.
			rule(core, []string{"pods"}, []string{"delete"}),
			rule(core, []string{"pods/binding"}, []string{"create"}),
			rule(core, []string{"pods/status"}, []string{"update"}),
			rule(core, []string{"events"}, []string{"create", "update", "get"}),
			rule(anyGroup, []string{"leases"}, []string{"get", "create", "update"}),
			rule(anyGroup, []string{"replicasets", "deployments", "statefulsets", "services", "persistentvolumes", "storageclasses", "poddisruptionbudgets"}, readVerbs),
			// Dynamic resource allocation: the claims pods use and their classes.
			rule([]string{"resource.k8s.io"}, []string{"resourceclaims", "deviceclasses"}, readVerbs),
			// Volume binding: the scheduler names the node of a WaitForFirstConsumer claim.
			rule(core, []string{"persistentvolumeclaims"}, []string{"get", "list", "watch", "update"})),
		// The controller-manager gets what its controllers do, no more:
		// the garbage collector reads, updates (ownerReferences, finalizers)
		// and deletes what it collects; the workload and endpoints
		// controllers create only what they own; no escalate, bind or
		// impersonate (no "*" verbs); Secrets only to collect them (their
		// token secrets are never returned).
		clusterRole("system:kube-controller-manager",
			rule(anyGroup, []string{"pods", "replicasets", "deployments", "jobs", "cronjobs", "daemonsets", "controllerrevisions",
				"poddisruptionbudgets", "horizontalpodautoscalers", "endpoints", "services", "configmaps", "namespaces", "nodes", "leases",
				"statefulsets", "persistentvolumes", "persistentvolumeclaims", "storageclasses", "endpointslices", "resourceclaims"}, gcVerbs),
			rule(anyGroup, []string{"pods", "replicasets", "jobs", "controllerrevisions", "endpoints", "endpointslices", "persistentvolumes", "persistentvolumeclaims", "resourceclaims"}, []string{"create"}),
			// The root CA publisher makes kube-root-ca.crt in every
			// namespace (and updates it: gcVerbs).
			rule(core, []string{"configmaps"}, []string{"create", "update"}),
			rule(anyGroup, []string{"pods/status", "services/status", "replicasets/status", "deployments/status", "jobs/status", "cronjobs/status",
				"daemonsets/status", "poddisruptionbudgets/status", "horizontalpodautoscalers/status", "nodes/status",
				"replicasets/scale", "deployments/scale", "statefulsets/status", "statefulsets/scale",
				"persistentvolumes/status", "persistentvolumeclaims/status"}, []string{"get", "update", "patch"}),
			// The quota controller counts any kind a quota names
			// (count/<resource>.<group>) and writes quotas' status, as
			// Kubernetes' resourcequota-controller.
			rule(anyGroup, all, []string{"list", "watch"}),
			rule(core, []string{"resourcequotas"}, readVerbs),
			rule(core, []string{"resourcequotas/status"}, []string{"get", "update", "patch"}),
			// The autoscaler reads the kubelets' stats through the apiserver's node relay.
			rule(core, []string{"nodes/stats"}, []string{"get"}),
			rule(core, []string{"events"}, []string{"create", "update", "patch", "get"}),
			// Leader election: the Lease kube-system/controller-manager.
			rule(anyGroup, []string{"leases"}, []string{"create"}),
			rule(core, []string{"secrets"}, []string{"list", "watch", "delete"})),
		clusterRole("system:kube-proxy",
			rule(core, []string{"services", "endpoints", "nodes", "pods", "namespaces"}, readVerbs),
			rule([]string{"discovery.k8s.io"}, []string{"endpointslices"}, readVerbs),
			rule([]string{"networking.k8s.io"}, []string{"networkpolicies", "ingressclasses", "ingresses"}, readVerbs),
			// The Ingress datapath (proxy/ingress): status.loadBalancer
			// and Events written by the one proxy holding the Lease
			// kube-system/tugboat-ingress-status. No Secret: the proxy
			// authorizer (AuthorizeProxySecret) lets it read only those
			// an Ingress names in spec.tls.
			rule([]string{"networking.k8s.io"}, []string{"ingresses/status"}, []string{"get", "update", "patch"}),
			rule(anyGroup, []string{"leases"}, []string{"get", "create", "update"}),
			rule(core, []string{"events"}, []string{"create", "update", "get"})),
		clusterBinding("cluster-admin", "cluster-admin", "Group", GroupMasters),
		clusterBinding("system:kube-scheduler", "system:kube-scheduler", "User", "system:kube-scheduler"),
		clusterBinding("system:kube-controller-manager", "system:kube-controller-manager", "User", "system:kube-controller-manager"),
		clusterBinding("system:kube-proxy", "system:kube-proxy", "User", "system:kube-proxy"),
	}
}
