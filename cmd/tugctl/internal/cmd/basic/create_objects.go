package basic

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// The "create KIND NAME" generators, kubectl's: each builds the object
// from its flags and hands it to genFlags.emit.

func newCreateDeploymentCommand(o *cli.Options) *cobra.Command {
	g := &genFlags{}
	var images []string
	var replicas, port int32
	cmd := &cobra.Command{
		Use:     "deployment NAME --image=IMAGE [--image=...] [--replicas=N] [--port=N] [-- COMMAND [ARGS...]]",
		Aliases: []string{"deploy"},
		Short:   "Create a deployment: pods labelled app=NAME, one container per image",
		Example: "  tugctl create deployment web --image=nginx:1.25 --replicas=3 --port=80\n  tugctl create deployment job --image=busybox -- sh -c 'sleep 3600'",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, command, err := nameAndCommand(cmd, args)
			if err != nil {
				return err
			}
			if len(images) == 0 {
				return fmt.Errorf("--image: required")
			}
			if len(command) > 0 && len(images) > 1 {
				return fmt.Errorf("a command (after --) only goes with a single --image")
			}
			if replicas < 0 {
				return fmt.Errorf("--replicas %d: must not be negative", replicas)
			}
			sel := map[string]string{"app": name}
			var cs []*v1.Container
			for _, img := range images {
				c := &v1.Container{Name: containerName(img), Image: img, Command: command}
				if port > 0 {
					c.Ports = []*v1.ContainerPort{{ContainerPort: port}}
				}
				cs = append(cs, c)
			}
			d := &v1.Deployment{
				Metadata: &v1.ObjectMeta{Name: name, Labels: copyMap(sel)},
				Spec: &v1.DeploymentSpec{
					Replicas: proto.Int32(replicas),
					Selector: &v1.LabelSelector{MatchLabels: copyMap(sel)},
					Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: copyMap(sel)}, Spec: &v1.PodSpec{Containers: cs}},
				},
			}
			return g.emit(cmd.Context(), o, d)
		},
	}
	cmd.Flags().StringArrayVar(&images, "image", nil, "container image; repeatable: a container per image")
	cmd.Flags().Int32Var(&replicas, "replicas", 1, "number of pods")
	cmd.Flags().Int32Var(&port, "port", 0, "the port the containers expose (containerPort)")
	g.register(cmd)
	return cmd
}

// nameAndCommand reads NAME [-- COMMAND...].
func nameAndCommand(cmd *cobra.Command, args []string) (string, []string, error) {
	dash := cmd.ArgsLenAtDash()
	if len(args) == 0 || dash == 0 {
		return "", nil, fmt.Errorf("%s: NAME is required", cmd.CommandPath())
	}
	if dash > 1 || (dash < 0 && len(args) > 1) {
		return "", nil, fmt.Errorf("%s: one NAME, got %v (a command goes after --)", cmd.CommandPath(), args)
	}
	return args[0], args[1:], nil
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// containerName is kubectl's name for an image's container: the last path
// segment without tag or digest ("registry/team/app:v1" is "app").
func containerName(image string) string {
	n := image[strings.LastIndex(image, "/")+1:]
	n, _, _ = strings.Cut(n, "@")
	n, _, _ = strings.Cut(n, ":")
	n = strings.Trim(nonName.ReplaceAllString(strings.ToLower(n), "-"), "-")
	if n == "" {
		n = "container"
	}
	return n
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func newCreateServiceCommand(o *cli.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "service clusterip|nodeport|loadbalancer|externalname NAME --tcp=PORT[:TARGET]...",
		Aliases: []string{"svc"},
		Short:   "Create a service selecting app=NAME",
	}
	for _, typ := range []string{"ClusterIP", "NodePort", "LoadBalancer", "ExternalName"} {
		g := &genFlags{}
		var tcp []string
		var clusterIP, externalName string
		var nodePort int32
		example := "  tugctl create service " + strings.ToLower(typ) + " web --tcp=80:8080"
		if typ == "ExternalName" {
			example = "  tugctl create service externalname db --external-name db.example.com"
		}
		sub := &cobra.Command{
			Use:     strings.ToLower(typ) + " NAME --tcp=PORT[:TARGET]...",
			Short:   "Create a " + typ + " service",
			Example: example,
			Args:    cli.ExactArgs(1, "NAME"),
			RunE: func(cmd *cobra.Command, args []string) error {
				if len(tcp) == 0 && clusterIP != "None" && typ != "ExternalName" {
					return fmt.Errorf("--tcp: at least one PORT[:TARGET] is required")
				}
				if typ == "ExternalName" && externalName == "" {
					return fmt.Errorf("--external-name: required (the DNS name the service is an alias of)")
				}
				var ports []*v1.ServicePort
				for _, t := range tcp {
					p, target, hasTarget := strings.Cut(t, ":")
					n, err := strconv.Atoi(p)
					if err != nil || n < 1 || n > 65535 {
						return fmt.Errorf("--tcp %q: port %q is not a port number (1-65535)", t, p)
					}
					if !hasTarget {
						target = p
					}
					if target == "" {
						return fmt.Errorf("--tcp %q: empty target port", t)
					}
					ports = append(ports, &v1.ServicePort{Name: p + "-" + target, Protocol: "TCP", Port: int32(n), TargetPort: target, NodePort: nodePort})
				}
				svc := &v1.Service{
					Metadata: &v1.ObjectMeta{Name: args[0], Labels: map[string]string{"app": args[0]}},
					Spec:     &v1.ServiceSpec{Type: typ, Selector: map[string]string{"app": args[0]}, Ports: ports, ClusterIp: clusterIP, ExternalName: externalName},
				}
				if typ == "ExternalName" {
					svc.Spec.Selector = nil
				}
				return g.emit(cmd.Context(), o, svc)
			},
		}
		sub.Flags().StringArrayVar(&tcp, "tcp", nil, "PORT:TARGET: the service's port and the pods' port (number or name); repeatable")
		switch typ {
		case "ClusterIP":
			sub.Flags().StringVar(&clusterIP, "clusterip", "", `the cluster IP ("None" for a headless service)`)
		case "NodePort":
			sub.Flags().Int32Var(&nodePort, "node-port", 0, "the node port (default: allocated)")
		case "ExternalName":
			sub.Flags().StringVar(&externalName, "external-name", "", "the external DNS name the service's name is a CNAME of")
		}
		g.register(sub)
		cmd.AddCommand(sub)
	}
	return cmd
}

// dataSources are --from-literal, --from-file and --from-env-file.
type dataSources struct {
	literals, files, envFiles []string
}

func (d *dataSources) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&d.literals, "from-literal", nil, "KEY=VALUE; repeatable")
	f.StringArrayVar(&d.files, "from-file", nil, "[KEY=]PATH: a file (key: its name, or KEY), or a directory (each regular file in it); repeatable")
	f.StringArrayVar(&d.envFiles, "from-env-file", nil, "a file of KEY=VALUE lines (# comments, blank lines ignored); repeatable")
}

// read collects the data; a key given twice, a bad key or an unreadable
// file is an error naming it.
func (d *dataSources) read() (map[string][]byte, error) {
	out := map[string][]byte{}
	add := func(k string, v []byte, from string) error {
		if err := validDataKey(k); err != nil {
			return fmt.Errorf("%s: %v", from, err)
		}
		if _, dup := out[k]; dup {
			return fmt.Errorf("%s: cannot add key %q, another key by that name already exists", from, k)
		}
		out[k] = v
		return nil
	}
	for _, l := range d.literals {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--from-literal %q: want KEY=VALUE", l)
		}
		if err := add(k, []byte(v), "--from-literal "+l); err != nil {
			return nil, err
		}
	}
	for _, f := range d.files {
		key, path, named := strings.Cut(f, "=")
		if !named {
			key, path = "", f
		}
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("--from-file %s: %w", f, err)
		}
		if fi.IsDir() {
			if named {
				return nil, fmt.Errorf("--from-file %s: a key cannot be given for a directory", f)
			}
			ents, err := os.ReadDir(path)
			if err != nil {
				return nil, fmt.Errorf("--from-file %s: %w", f, err)
			}
			for _, e := range ents {
				if !e.Type().IsRegular() {
					continue
				}
				b, err := os.ReadFile(filepath.Join(path, e.Name()))
				if err != nil {
					return nil, fmt.Errorf("--from-file %s: %w", f, err)
				}
				if err := add(e.Name(), b, "--from-file "+f); err != nil {
					return nil, err
				}
			}
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--from-file %s: %w", f, err)
		}
		if key == "" {
			key = filepath.Base(path)
		}
		if err := add(key, b, "--from-file "+f); err != nil {
			return nil, err
		}
	}
	for _, f := range d.envFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--from-env-file %s: %w", f, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				return nil, fmt.Errorf("--from-env-file %s: line %d: %q is not KEY=VALUE", f, n, line)
			}
			if err := add(k, []byte(v), fmt.Sprintf("--from-env-file %s: line %d", f, n)); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

var dataKeyRE = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

func validDataKey(k string) error {
	if len(k) > 253 || !dataKeyRE.MatchString(k) || k == "." || k == ".." {
		return fmt.Errorf("%q is not a valid key name: a valid config key must consist of alphanumeric characters, '-', '_' or '.'", k)
	}
	return nil
}

func newCreateConfigMapCommand(o *cli.Options) *cobra.Command {
	g := &genFlags{}
	d := &dataSources{}
	cmd := &cobra.Command{
		Use:     "configmap NAME [--from-literal=K=V] [--from-file=[K=]PATH] [--from-env-file=PATH]",
		Aliases: []string{"cm"},
		Short:   "Create a config map from literals, files or env files",
		Example: "  tugctl create configmap app --from-literal=mode=prod --from-file=nginx.conf",
		Args:    cli.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := d.read()
			if err != nil {
				return err
			}
			cm := &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: args[0]}}
			for k, v := range data {
				if utf8.Valid(v) {
					if cm.Data == nil {
						cm.Data = map[string]string{}
					}
					cm.Data[k] = string(v)
				} else {
					if cm.BinaryData == nil {
						cm.BinaryData = map[string][]byte{}
					}
					cm.BinaryData[k] = v
				}
			}
			return g.emit(cmd.Context(), o, cm)
		},
	}
	d.register(cmd)
	g.register(cmd)
	return cmd
}

// tlsPair checks that cert and key are a PEM certificate and its key.
func tlsPair(cert, key []byte) (tls.Certificate, error) {
	c, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return c, fmt.Errorf("--cert/--key: not a certificate and its private key: %v", err)
	}
	return c, nil
}

func newCreateSecretCommand(o *cli.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret generic|tls|docker-registry NAME",
		Short: "Create a secret",
	}
	// generic
	g, d := &genFlags{}, &dataSources{}
	var typ string
	generic := &cobra.Command{
		Use:     "generic NAME [--from-literal=K=V] [--from-file=[K=]PATH] [--from-env-file=PATH] [--type=TYPE]",
		Short:   "Create a secret from literals, files or env files",
		Example: "  tugctl create secret generic db --from-literal=password=s3cret --from-file=ca.crt",
		Args:    cli.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := d.read()
			if err != nil {
				return err
			}
			return g.emit(cmd.Context(), o, &v1.Secret{Metadata: &v1.ObjectMeta{Name: args[0]}, Type: typ, Data: data})
		},
	}
	d.register(generic)
	generic.Flags().StringVar(&typ, "type", "", "the secret's type (default Opaque)")
	g.register(generic)
	// tls
	gt := &genFlags{}
	var cert, key string
	tls := &cobra.Command{
		Use:   "tls NAME --cert=PATH --key=PATH",
		Short: "Create a kubernetes.io/tls secret from a certificate and its key",
		Args:  cli.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cert == "" || key == "" {
				return fmt.Errorf("--cert and --key: both are required")
			}
			c, err := os.ReadFile(cert)
			if err != nil {
				return fmt.Errorf("--cert: %w", err)
			}
			k, err := os.ReadFile(key)
			if err != nil {
				return fmt.Errorf("--key: %w", err)
			}
			if _, err := tlsPair(c, k); err != nil {
				return err
			}
			return gt.emit(cmd.Context(), o, &v1.Secret{Metadata: &v1.ObjectMeta{Name: args[0]}, Type: "kubernetes.io/tls",
				Data: map[string][]byte{"tls.crt": c, "tls.key": k}})
		},
	}
	tls.Flags().StringVar(&cert, "cert", "", "PEM certificate file")
	tls.Flags().StringVar(&key, "key", "", "PEM private key file")
	gt.register(tls)
	// docker-registry
	gr := &genFlags{}
	var server, user, password, email string
	reg := &cobra.Command{
		Use:   "docker-registry NAME --docker-server=S --docker-username=U --docker-password=P [--docker-email=E]",
		Short: "Create a registry credential secret (kubernetes.io/dockerconfigjson)",
		Args:  cli.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if user == "" || password == "" {
				return fmt.Errorf("--docker-username and --docker-password: both are required")
			}
			auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
			entry := map[string]string{"username": user, "password": password, "auth": auth}
			if email != "" {
				entry["email"] = email // kubectl omits an empty one
			}
			cfg, err := json.Marshal(map[string]any{"auths": map[string]any{server: entry}})
			if err != nil {
				return err
			}
			return gr.emit(cmd.Context(), o, &v1.Secret{Metadata: &v1.ObjectMeta{Name: args[0]}, Type: "kubernetes.io/dockerconfigjson",
				Data: map[string][]byte{".dockerconfigjson": cfg}})
		},
	}
	reg.Flags().StringVar(&server, "docker-server", "https://index.docker.io/v1/", "the registry")
	reg.Flags().StringVar(&user, "docker-username", "", "user name")
	reg.Flags().StringVar(&password, "docker-password", "", "password")
	reg.Flags().StringVar(&email, "docker-email", "", "email (optional)")
	gr.register(reg)
	cmd.AddCommand(generic, tls, reg)
	return cmd
}

// labelMap parses --labels a=b,c=d.
func labelMap(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--labels %q: %q is not KEY=VALUE", s, kv)
		}
		if err := labels.ValidateKey(k); err != nil {
			return nil, fmt.Errorf("--labels %q: %v", s, err)
		}
		if err := labels.ValidateValue(v); err != nil {
			return nil, fmt.Errorf("--labels %q: %v", s, err)
		}
		out[k] = v
	}
	return out, nil
}
