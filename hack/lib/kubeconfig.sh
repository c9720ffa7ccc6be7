# kubeconfig.sh: the kubeconfig for kubectl and client-go that make up,
# make local-up and hack/install.sh write beside tugctl's config. Source it.

# write_kubeconfig PATH SERVER CA CERT KEY MARKER: a kubeconfig for the
# Kubernetes API at https://SERVER (the apiserver's --kube-listen), the
# admin's client certificate, context "tugboat", namespace default. MARKER
# is a comment line saying who wrote it.
write_kubeconfig() {
  local path=$1 server=$2 ca=$3 cert=$4 key=$5 marker=$6
  mkdir -p "$(dirname "$path")"
  (umask 077 && cat >"$path" <<CFG
$marker
apiVersion: v1
kind: Config
clusters:
- name: tugboat
  cluster:
    server: https://$server
    certificate-authority: $ca
users:
- name: tugboat-admin
  user:
    client-certificate: $cert
    client-key: $key
contexts:
- name: tugboat
  context:
    cluster: tugboat
    user: tugboat-admin
    namespace: default
current-context: tugboat
CFG
  )
}

# offer_kube_config PATH: copies the kubeconfig to ~/.kube/config when
# that file is missing or empty (an existing one is never touched), and
# prints how to point kubectl at it.
offer_kube_config() {
  local path=$1 home=${2:-$HOME}
  if [[ ! -s $home/.kube/config ]]; then
    mkdir -p "$home/.kube"
    (umask 077 && cp "$path" "$home/.kube/config")
    echo "kubectl: wrote $home/.kube/config (it was empty); kubectl get nodes works now"
  else
    echo "kubectl: export KUBECONFIG=$path   (your $home/.kube/config is left as it is)"
  fi
}
