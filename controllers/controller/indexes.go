package controller

import (
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Index names shared by controllers. One name always means one function,
// so controllers sharing an informer share its indexes.
const (
	// IndexNamespace indexes objects by namespace.
	IndexNamespace = "namespace"
	// IndexControllerUID indexes objects by the uid of their controlling
	// owner (ownerReferences[controller=true]).
	IndexControllerUID = "controller-uid"
	// IndexOrphanNamespace indexes objects without a controlling owner by
	// namespace: the candidates for adoption.
	IndexOrphanNamespace = "orphan-namespace"
	// IndexOwnerUID indexes objects by the uid of every owner.
	IndexOwnerUID = "owner-uid"
	// IndexNodeName indexes pods by spec.nodeName.
	IndexNodeName = "node-name"
)

// NamespaceIndex is the IndexNamespace function.
func NamespaceIndex[T v1.Object](o T) []string { return []string{o.GetMetadata().GetNamespace()} }

// ControllerUIDIndex is the IndexControllerUID function.
func ControllerUIDIndex[T v1.Object](o T) []string {
	if ref := ControllerRef(o.GetMetadata()); ref != nil {
		return []string{ref.Uid}
	}
	return nil
}

// OrphanNamespaceIndex is the IndexOrphanNamespace function.
func OrphanNamespaceIndex[T v1.Object](o T) []string {
	if ControllerRef(o.GetMetadata()) == nil {
		return []string{o.GetMetadata().GetNamespace()}
	}
	return nil
}

// OwnerUIDIndex is the IndexOwnerUID function.
func OwnerUIDIndex[T v1.Object](o T) []string {
	refs := o.GetMetadata().GetOwnerReferences()
	if len(refs) == 0 {
		return nil
	}
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.Uid)
	}
	return out
}

// NodeNameIndex is the IndexNodeName function for pods.
func NodeNameIndex(p *v1.Pod) []string {
	if n := p.GetSpec().GetNodeName(); n != "" {
		return []string{n}
	}
	return nil
}

// ControllerRef returns the controlling owner reference, or nil.
func ControllerRef(m *v1.ObjectMeta) *v1.OwnerReference {
	for _, r := range m.GetOwnerReferences() {
		if r.Controller {
			return r
		}
	}
	return nil
}

// NewControllerRef is the owner reference a controller puts on what it
// creates: controller=true, blockOwnerDeletion=true.
func NewControllerRef(owner v1.Object, apiVersion, kind string) *v1.OwnerReference {
	m := owner.GetMetadata()
	return &v1.OwnerReference{ApiVersion: apiVersion, Kind: kind, Name: m.GetName(), Uid: m.GetUid(),
		Controller: true, BlockOwnerDeletion: true}
}
