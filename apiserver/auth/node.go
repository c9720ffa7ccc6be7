package auth

import (
	"context"
	"slices"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/validation"
)

// NodeFacts answers what the node authorizer must know about stored state.
type NodeFacts interface {
	// PodNode returns the node a stored pod is bound to ("" if none).
	PodNode(ctx context.Context, ns, name string) (string, error)
	// Referenced reports whether a pod bound to node references the
	// ConfigMap, Secret, PersistentVolumeClaim or ServiceAccount (kind
	// "configmaps", "secrets", "persistentvolumeclaims",
	// "serviceaccounts": the pod runs as it) ns/name, or the
	// PersistentVolume ("persistentvolumes", ns empty) bound to such a claim.
	Referenced(ctx context.Context, node, kind, ns, name string) (bool, error)
}

// AuthorizeNode is the node authorizer: a kubelet (system:node:<n> in
// system:nodes) may read what its node needs and write only its own Node,
// Lease, and its pods' status — whatever RBAC says. fieldSelector is the
// request's, for list and watch. Returns allowed and, if not, why.
func AuthorizeNode(ctx context.Context, node string, a Attributes, fieldNode string, facts NodeFacts) (bool, string) {
	read := slices.Contains([]string{"get", "list", "watch"}, a.Verb)
	switch a.Resource {
	case "namespaces", "services", "endpoints", "endpointslices", "networkpolicies":
		// The node's proxy runs with the node's identity and programs
		// the datapath from EndpointSlices and NetworkPolicies.
		return read && a.Subresource == "", "nodes may only read namespaces, services, endpoints, endpointslices and networkpolicies"
	case "nodes":
		if read && a.Subresource == "" {
			return true, ""
		}
		if a.Verb == "create" || a.Verb == "update" {
			if a.Name == node && (a.Subresource == "" || a.Subresource == "status" || a.Subresource == "tunnel") {
				return true, ""
			}
			return false, "a node may only modify its own Node object (" + node + ")"
		}
		return false, "nodes may not " + a.Verb + " nodes"
	case "leases":
		if a.Namespace == "kube-node-lease" && a.Name == node && slices.Contains([]string{"get", "create", "update"}, a.Verb) {
			return true, ""
		}
		return false, "a node may only use its own Lease kube-node-lease/" + node
	case "events":
		return slices.Contains([]string{"create", "update", "get"}, a.Verb), "nodes may only create and update events"
	case "pods":
		switch {
		case a.Verb == "list" || a.Verb == "watch":
			// Every pod, as Kubernetes' node authorizer allows: the
			// node's proxy enforces NetworkPolicies whose peers are pods
			// anywhere (their labels and addresses).
			return a.Subresource == "", "nodes may only list and watch pods"
		case a.Subresource == "" && (a.Verb == "get" || a.Verb == "delete"), a.Subresource == "status" && a.Verb == "update":
			n, err := facts.PodNode(ctx, a.Namespace, a.Name)
			if err != nil {
				return false, err.Error()
			}
			if n == node {
				return true, ""
			}
			return false, "pod " + a.Namespace + "/" + a.Name + " is not bound to node " + node
		}
		return false, "nodes may only get, list, watch and delete their pods and update their status"
	case "serviceaccounts":
		// The kubelet asks for its pods' tokens (the projected
		// serviceAccountToken volumes); the token request's own check
		// (nodeMayRequestToken) keeps them bound to its pods.
		if a.Verb != "create" || a.Subresource != "token" {
			return false, "nodes may only create tokens of the service accounts their pods run as"
		}
		ok, err := facts.Referenced(ctx, node, a.Resource, a.Namespace, a.Name)
		if err != nil {
			return false, err.Error()
		}
		if ok {
			return true, ""
		}
		return false, "no pod bound to node " + node + " runs as service account " + a.Namespace + "/" + a.Name
	case "configmaps", "secrets", "persistentvolumeclaims", "persistentvolumes":
		if a.Verb != "get" {
			return false, "nodes may only get the " + a.Resource + " their pods use"
		}
		ok, err := facts.Referenced(ctx, node, a.Resource, a.Namespace, a.Name)
		if err != nil {
			return false, err.Error()
		}
		if ok {
			return true, ""
		}
		return false, "no pod bound to node " + node + " references it"
	}
	return false, "nodes may not access " + a.resourceString()
}

// RenewableNode is the node whose certificate u may renew: u must be a
// node identity (system:node:<name> in system:nodes, and no other group)
// with a valid node name.
func RenewableNode(u *User) (string, error) {
	node, isNode := u.NodeName()
	if !isNode {
		return "", apierrors.New(apierrors.ErrForbidden, "user %s: only node certificates are renewed through the API; a user's certificate is renewed by whoever holds the cluster CA (apiserver pki init)", validation.Short(u.Name))
	}
	for _, g := range u.Groups {
		if g != GroupNodes && g != GroupAuthenticated {
			return "", apierrors.New(apierrors.ErrForbidden, "user %s is also in group %s: such a certificate is not renewed through the API", validation.Short(u.Name), validation.Short(g))
		}
	}
	if err := validation.NodeName("nodeName", node); err != nil {
		return "", apierrors.New(apierrors.ErrForbidden, "user %s: not a valid node name, not renewed: %v", validation.Short(u.Name), err)
	}
	return node, nil
}
