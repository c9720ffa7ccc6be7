package basic

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

type exposeFlags struct {
	genFlags
	port, targetPort, name, typ, protocol, selector, clusterIP string
	nodePort                                                   int32
}

func newExposeCommand(o *cli.Options) *cobra.Command {
	f := &exposeFlags{}
	cmd := &cobra.Command{
		Use:   "expose deployment|rs|pod|svc NAME [--port=N] [--target-port=N|NAME] [--type=ClusterIP|NodePort] [--name=SVC]",
		Short: "Make a Service for a deployment, replica set, pod or service",
		Long: `Make a Service selecting what the object selects (a deployment's or replica
set's selector, a pod's labels, a service's selector), named after it
unless --name. --port defaults to the first container port (or the
service's port), --target-port to --port.`,
		Example: `  tugctl expose deployment web --port=80 --target-port=8080
  tugctl expose pod db --port=5432 --type=NodePort --name=db-external`,
		RunE: func(cmd *cobra.Command, args []string) error {
			refs, err := cli.SingleRefs(args, "Deployment", "ReplicaSet", "Pod", "Service")
			if err != nil {
				return err
			}
			if len(refs) != 1 {
				return fmt.Errorf("expose: one object at a time, got %d", len(refs))
			}
			svc, err := exposedService(cmd.Context(), o, refs[0], f)
			if err != nil {
				return err
			}
			return f.emit(cmd.Context(), o, svc)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.port, "port", "", "the service's port (default: the first container port)")
	fl.StringVar(&f.targetPort, "target-port", "", "the pods' port, a number or a container port's name (default: --port)")
	fl.StringVar(&f.name, "name", "", "the service's name (default: the object's)")
	fl.StringVar(&f.typ, "type", "ClusterIP", "ClusterIP, NodePort or LoadBalancer")
	fl.StringVar(&f.protocol, "protocol", "TCP", "TCP or UDP")
	fl.StringVar(&f.selector, "selector", "", "the pods to select, a=b,c=d (default: the object's)")
	fl.StringVar(&f.clusterIP, "cluster-ip", "", `the cluster IP ("None" for a headless service)`)
	fl.Int32Var(&f.nodePort, "node-port", 0, "with --type=NodePort or LoadBalancer: the node port (default: allocated)")
	f.register(cmd)
	return cmd
}

func exposedService(ctx context.Context, o *cli.Options, ref cli.Ref, f *exposeFlags) (*v1.Service, error) {
	switch f.typ {
	case "ClusterIP", "NodePort", "LoadBalancer":
	case "ExternalName":
		return nil, fmt.Errorf("--type ExternalName: an ExternalName service selects no pods; use tugctl create service externalname NAME --external-name HOST")
	default:
		return nil, fmt.Errorf("--type %q: want ClusterIP, NodePort or LoadBalancer", f.typ)
	}
	switch f.protocol {
	case "TCP", "UDP":
	default:
		return nil, fmt.Errorf("--protocol %q: want TCP or UDP", f.protocol)
	}
	ns, err := o.Namespace()
	if err != nil {
		return nil, err
	}
	c, err := o.Client()
	if err != nil {
		return nil, err
	}
	var sel map[string]string
	var ports []int32
	var podLabels map[string]string
	switch ref.Kind.Name {
	case "Deployment":
		d, err := client.For[*v1.Deployment](c).Get(ctx, ns, ref.Name)
		if err != nil {
			return nil, err
		}
		if len(d.GetSpec().GetSelector().GetMatchExpressions()) > 0 {
			return nil, fmt.Errorf("deployment %s: its selector has matchExpressions, which a Service cannot express; give --selector", ref.Name)
		}
		sel, ports, podLabels = d.GetSpec().GetSelector().GetMatchLabels(), containerPorts(d.GetSpec().GetTemplate().GetSpec()), d.GetMetadata().GetLabels()
	case "ReplicaSet":
		rs, err := client.For[*v1.ReplicaSet](c).Get(ctx, ns, ref.Name)
		if err != nil {
			return nil, err
		}
		sel, ports, podLabels = rs.GetSpec().GetSelector().GetMatchLabels(), containerPorts(rs.GetSpec().GetTemplate().GetSpec()), rs.GetMetadata().GetLabels()
	case "Pod":
		p, err := client.For[*v1.Pod](c).Get(ctx, ns, ref.Name)
		if err != nil {
			return nil, err
		}
		sel, ports, podLabels = p.GetMetadata().GetLabels(), containerPorts(p.GetSpec()), p.GetMetadata().GetLabels()
	case "Service":
		s, err := client.For[*v1.Service](c).Get(ctx, ns, ref.Name)
		if err != nil {
			return nil, err
		}
		sel, podLabels = s.GetSpec().GetSelector(), s.GetMetadata().GetLabels()
		for _, p := range s.GetSpec().GetPorts() {
			ports = append(ports, p.Port)
		}
	}
	if f.selector != "" {
		if sel, err = labelMap(f.selector); err != nil {
			return nil, fmt.Errorf("--selector: %v", err)
		}
	}
	if len(sel) == 0 {
		return nil, fmt.Errorf("couldn't retrieve selectors via --selector flag or introspection: %s %s selects nothing", ref.Kind.Plural, ref.Name)
	}
	port := f.port
	if port == "" {
		if len(ports) == 0 {
			return nil, fmt.Errorf("couldn't find port via --port flag or introspection: %s %s has no container port", ref.Kind.Plural, ref.Name)
		}
		port = strconv.Itoa(int(ports[0]))
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("--port %q: not a port number (1-65535)", port)
	}
	target := f.targetPort
	if target == "" {
		target = port
	}
	if f.nodePort != 0 && f.typ == "ClusterIP" {
		return nil, fmt.Errorf("--node-port: only with --type=NodePort or LoadBalancer")
	}
	name := f.name
	if name == "" {
		name = ref.Name
	}
	return &v1.Service{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: ns, Labels: copyMap(podLabels)},
		Spec: &v1.ServiceSpec{Type: f.typ, Selector: copyMap(sel), ClusterIp: f.clusterIP,
			Ports: []*v1.ServicePort{{Protocol: f.protocol, Port: int32(n), TargetPort: target, NodePort: f.nodePort}}},
	}, nil
}

func containerPorts(spec *v1.PodSpec) []int32 {
	var out []int32
	for _, c := range spec.GetContainers() {
		for _, p := range c.GetPorts() {
			out = append(out, p.ContainerPort)
		}
	}
	return out
}
