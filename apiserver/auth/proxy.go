package auth

import "context"

// UserKubeProxy is the proxies' identity (their certificate's CN).
const UserKubeProxy = "system:kube-proxy"

// ProxyFacts answers what the proxy authorizer must know about stored state.
type ProxyFacts interface {
	// IngressSecret reports whether an Ingress in namespace ns names the
	// Secret name in spec.tls[].secretName.
	IngressSecret(ctx context.Context, ns, name string) (bool, error)
}

// AuthorizeProxySecret is the proxy authorizer, consulted for the proxy
// identity's Secret requests that RBAC refused (it adds to RBAC, as
// Kubernetes' node authorizer does; the bootstrap role system:kube-proxy
// grants no Secret): the Ingress datapath may get a Secret, or list and
// watch it in its namespace by fieldSelector metadata.name=<name>, only
// if an Ingress in that namespace names it in spec.tls (the certificate
// it serves). Every other Secret, and every write, is refused with the
// reason. fieldName is the request's metadata.name field selector ("" if
// none). Returns allowed and, if not, why.
func AuthorizeProxySecret(ctx context.Context, a Attributes, fieldName string, facts ProxyFacts) (bool, string) {
	if a.APIGroup != "" || a.Resource != "secrets" || a.Subresource != "" {
		return false, ""
	}
	name := a.Name
	switch a.Verb {
	case "get":
	case "list", "watch":
		if a.Namespace == "" || fieldName == "" {
			return false, "the proxy may only list and watch a Secret by namespace and fieldSelector metadata.name, one an Ingress names in spec.tls"
		}
		name = fieldName
	default:
		return false, "the proxy may only get, list and watch the Secrets Ingresses name in spec.tls"
	}
	ok, err := facts.IngressSecret(ctx, a.Namespace, name)
	if err != nil {
		return false, err.Error()
	}
	if !ok {
		return false, "no Ingress in namespace " + a.Namespace + " names Secret " + name + " in spec.tls"
	}
	return true, ""
}
